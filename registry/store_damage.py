"""A damaged registry store: how it is recognised, explained and moved aside.

Every connection of :class:`~.store.Registry` is a :class:`StoreConnection`, whose cursors
turn SQLite's corruption errors (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``), whenever a query
meets them, into one :class:`~spade_envs.errors.RegistryFormatError` that names the file
and the command that fixes it (:func:`repair_hint`); other errors (locks, constraints)
pass unchanged. :func:`check_header` refuses a file that is not an SQLite database before
SQLite opens it; :func:`unwritable` tells a store that cannot be used now (locked,
read-only) from a damaged one, by SQLite's result code. :func:`move_aside` is what
``spade registry repair`` does to a corrupt file: rename it, with its ``-wal``/``-shm``
files, next to itself; nothing is deleted.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from ..errors import RegistryFormatError
from .paths import default_path


_SQLITE_MAGIC = b"SQLite format 3\x00"
#: SQLite's result codes (``sqlite3.Error.sqlite_errorname``, primary part) of a store
#: that exists but cannot be written or opened now: not damage, so never "repair" it
_UNWRITABLE = frozenset({"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_BUSY", "SQLITE_LOCKED",
                         "SQLITE_PERM", "SQLITE_AUTH"})


def unwritable(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the store cannot be used now (locked, read-only, no access)
    rather than that it is damaged; by SQLite's result code, never the message text."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    return "_".join(name.split("_")[:2]) in _UNWRITABLE  # SQLITE_READONLY_DBMOVED -> SQLITE_READONLY


def check_header(path: Path) -> None:
    """Refuse a non-empty file that is not an SQLite database before SQLite touches it."""
    try:
        size = path.stat().st_size
    except OSError:  # missing, or a parent is not a folder: opening reports it
        return
    if size == 0:
        return
    with open(path, "rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC or size < 512:
        raise RegistryFormatError(
            f"{path} is not a spade registry (not an SQLite database, or a corrupt one); {repair_hint(path)}",
            kind="corrupt",
        )


def repair_hint(path: Path) -> str:
    """The command that fixes a damaged store at ``path``."""
    where = "" if path == default_path() else f" --path {path}"
    return (f"`spade registry repair{where}` moves it aside (kept next to it as {path.name}.corrupt-<time>) "
            "and starts an empty store, or point SPADE_HOME elsewhere")


def corrupt_error(path: Path, detail: str) -> RegistryFormatError:
    return RegistryFormatError(f"{path} is corrupt ({detail}); {repair_hint(path)}", kind="corrupt")


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB (not a lock, a constraint, or a programming error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (11, 26)
    return type(exc) is sqlite3.DatabaseError


class _Cursor(sqlite3.Cursor):
    """A cursor whose corruption errors name the store and the fix (:func:`corrupt_error`)."""

    def _fail(self, exc: sqlite3.DatabaseError) -> BaseException:
        if not _is_corruption(exc):
            return exc
        return corrupt_error(self.connection.store_path, str(exc))  # type: ignore[attr-defined]

    def execute(self, sql: str, parameters: Any = (), /) -> "_Cursor":  # type: ignore[override]
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def executemany(self, sql: str, seq: Any, /) -> "_Cursor":  # type: ignore[override]
        try:
            return super().executemany(sql, seq)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def executescript(self, script: str, /) -> "_Cursor":  # type: ignore[override]
        try:
            return super().executescript(script)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchmany(self, size: int = 1) -> list:
        try:
            return super().fetchmany(size)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchall(self) -> list:
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None


class StoreConnection(sqlite3.Connection):
    """The store's connection: every cursor is a :class:`_Cursor`."""

    store_path: Path

    def cursor(self, factory: Any = _Cursor) -> Any:  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> Any:  # type: ignore[override]
        return self.cursor().executemany(sql, seq)

    def executescript(self, script: str, /) -> Any:  # type: ignore[override]
        return self.cursor().executescript(script)


def move_aside(path: Path) -> Path:
    """Rename a damaged store (and its ``-wal``/``-shm`` files, so that no stale journal is
    replayed into the next store) to ``<name>.corrupt-<UTC time>``; returns the new path
    of the main file. Nothing is deleted."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    path.rename(target)
    return target
