"""The local registry store: one SQLite database under ``SPADE_HOME`` (DESIGN.md section 7).

Contract:

- File: ``$SPADE_HOME/registry.sqlite3`` (``SPADE_HOME`` defaults to ``~/.cache/spade``).
  WAL mode, a busy timeout, schema versions in ``PRAGMA user_version`` and our
  ``PRAGMA application_id``. A foreign, corrupt or newer-schema file raises
  :class:`~spade_envs.errors.RegistryFormatError` and is never written to.
- A row per (sequence number, version). Sequence numbers are allocated inside a
  ``BEGIN IMMEDIATE`` transaction, densely, from ``FIRST_STORE_SEQ`` (1000) up; ids below
  are reserved for the seed suite shipped in the package.
- Content-hash dedup: adding a source whose sha256 is already stored (or is a seed)
  returns that entry with ``new=False``. ``add(source, replaces=ID)`` stores a changed
  source as the next version of ``ID``.
- ``latest`` = the highest *active* version, else the highest *deprecated* one;
  quarantined versions are never resolved.
- Everything in the store is untrusted (``EnvRecord.trusted`` is False): it runs sandboxed.
- Sharing with a Hub dataset (merge on pull, publication marks, aliases of renumbered
  ids, removal of unpublished entries) lives in :mod:`.sharing`; a write to the default
  store re-registers exactly the ids it touched in this process's Gymnasium registry.
- A store that cannot be written (read-only home, locked file) raises
  :class:`RegistryError` naming the file, never sqlite's ``OperationalError``.
- Damage is repaired or explained, by every command: an empty file (0 bytes, or an
  SQLite database without any table) is an empty store and is initialised by the first
  writable open (``create=False`` included: it only means "do not create a file"); a
  corrupt one (a bad header, truncated, malformed pages found at open or by any later
  query) raises :class:`RegistryFormatError` naming the file and ``spade registry
  repair``, which moves it aside (:func:`move_aside`, nothing is deleted) and starts an
  empty store.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RegistryError, RegistryFormatError, UnknownEnvironmentError
from .ids import EnvId, parse_env_id
from .migrations import APPLICATION_ID, FIRST_STORE_SEQ, MIGRATIONS, SCHEMA_VERSION
from .store_damage import (StoreConnection, check_header, corrupt_error, move_aside,  # noqa: F401 - re-exported
                           repair_hint, unwritable)
from .paths import DB_NAME, default_path, spade_home  # noqa: F401 - re-exported
from .store_reads import StoreReads
from .rows import STATUSES, AddResult, row_values, seed_by_sha

BUSY_TIMEOUT_S = 60.0
def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _folder_error(folder: Path, exc: OSError) -> str:
    blocker = next((q for q in (folder, *folder.parents) if q.exists() and not q.is_dir()), None)
    if blocker is not None:
        return f"SPADE_HOME {folder} cannot be used: {blocker} is a file, not a folder; point SPADE_HOME at a folder"
    return f"cannot create {folder}: {exc.strerror or exc}; point SPADE_HOME at a writable folder"


class Registry(StoreReads):
    """A connection to one store file. Use :meth:`open`; close with :meth:`close` or ``with``."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self._conn = conn
        self.path = path
        self.readonly = readonly

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike | None = None, *, create: bool = True, readonly: bool = False) -> "Registry":
        """Open (and with ``create`` create or migrate) the store at ``path``
        (default ``$SPADE_HOME/registry.sqlite3``). Raises :class:`RegistryFormatError`
        for a corrupt, foreign or newer-schema file and :class:`RegistryError` when the
        file cannot be opened (missing with ``create=False``, unwritable...)."""
        p = Path(path) if path is not None else default_path()
        if not p.exists() and (readonly or not create):
            raise RegistryError(f"no registry store at {p}")
        check_header(p)
        if not readonly:
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RegistryError(_folder_error(p.parent, exc)) from None
        mode = "ro" if readonly else ("rwc" if create else "rw")
        try:
            conn = sqlite3.connect(
                f"{p.resolve().as_uri()}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_S,
                isolation_level=None, check_same_thread=False, factory=StoreConnection,
            )
        except sqlite3.Error as exc:
            raise RegistryError(f"cannot open the registry store {p}: {exc}") from None
        conn.store_path = p
        reg = cls(conn, p, readonly)
        try:
            reg._prepare(create=create and not readonly, migrate=not readonly)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if unwritable(exc):
                raise RegistryError(f"cannot use the registry store {p}: {exc}") from None
            raise corrupt_error(p, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return reg

    def _pragma(self, name: str) -> int:
        return int(self._conn.execute(f"PRAGMA {name}").fetchone()[0])

    def _identity(self) -> tuple[int, int, int]:
        """(schema objects, application_id, user_version) read in ONE snapshot: three
        autocommit reads can straddle another process's first initialisation and see its
        tables without the identity it writes in the same transaction."""
        own = not self._conn.in_transaction
        if own:
            self._conn.execute("BEGIN")
        try:
            objects = int(self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
            return objects, self._pragma("application_id"), self._pragma("user_version")
        finally:
            if own and self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def _check_identity(self) -> bool:
        """True when the file is an empty, uninitialised database; raise for a foreign
        or newer one."""
        objects, app_id, version = self._identity()
        if app_id == 0 and version == 0:
            if objects:
                raise RegistryFormatError(
                    f"{self.path} is an SQLite database of another application, not a spade registry; "
                    "it was left untouched", kind="foreign")
            return True
        if app_id != APPLICATION_ID:
            raise RegistryFormatError(
                f"{self.path} is an SQLite database of another application (application_id {app_id:#x}), "
                "not a spade registry; it was left untouched", kind="foreign")
        if version > SCHEMA_VERSION:
            raise RegistryFormatError(
                f"{self.path} has registry schema version {version}, newer than this spade-envs "
                f"understands ({SCHEMA_VERSION}); upgrade spade-envs (the file was left untouched)",
                kind="newer_schema")
        return False

    def _prepare(self, create: bool, migrate: bool = False) -> None:
        """Check the file; initialise it (``create``) or upgrade an older schema
        (``create`` or ``migrate``: an existing store opened for writing is upgraded)."""
        self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        fresh = self._check_identity()
        current = self._pragma("user_version")
        # an existing empty file (0 bytes: an interrupted first run, a `touch`) is an empty
        # store: any writable open initialises it, as any writable open upgrades an old one
        if (fresh and (create or migrate)) or (not fresh and current < SCHEMA_VERSION and (create or migrate)):
            with self.transaction():
                fresh = self._check_identity()  # another process may have won the race
                start = self._pragma("user_version")
                for script in MIGRATIONS[start:]:
                    if callable(script):
                        script(self._conn)
                        continue
                    for statement in script.split(";"):
                        if statement.strip():
                            self._conn.execute(statement)
                if start < SCHEMA_VERSION:
                    self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif fresh or current < SCHEMA_VERSION:
            what = "is empty (not initialised yet)" if fresh else "has an older schema"
            raise RegistryError(f"{self.path} {what} and was opened read-only; `spade registry list` "
                                "initialises or upgrades it (or open it for writing)")
        if not self.readonly:
            self._use_wal()
            self._conn.execute("PRAGMA synchronous = NORMAL")

    def _use_wal(self) -> None:
        """Switch the file to WAL (persistent: the first writer does it for all). The
        switch needs the file to itself and SQLite does not wait for it (no busy
        handler), so a process that meets another one's open is retried here, up to
        the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "Registry":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception)."""
        if self.readonly:
            raise RegistryError(f"the registry store {self.path} is open read-only")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._write_error(exc) from None
        try:
            yield self._conn
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and unwritable(exc):
                raise self._write_error(exc) from None
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise self._write_error(exc) from None

    def _write_error(self, exc: Exception) -> RegistryError:
        return RegistryError(f"cannot write the registry store {self.path} ({exc}); "
                             "make SPADE_HOME writable or point it elsewhere")

    # -- writing ---------------------------------------------------------------------
    def add(self, source: str, *, replaces: str | EnvId | None = None, filename: str = "<env>",
            **fields: Any) -> AddResult:
        """Store ``source`` (with the optional fields of :func:`rows.row_values`: generation,
        skill, description, designer_model, grounding_ref, parent_ids, tool_specs,
        metadata, acceptance, regret, win_rate_hint, win_rate_plain, status, origin).

        The same source as an existing entry (or a seed) returns that entry, ``new=False``.
        ``replaces`` stores it as the next version of that environment. ``generation``
        defaults to the newest generation in the store (1 in an empty one)."""
        return self.add_many([{"source": source, "replaces": replaces, "filename": filename, **fields}])[0]

    def add_many(self, items: Iterable[dict[str, Any]]) -> list[AddResult]:
        """:meth:`add` for several sources in ONE transaction (all or nothing)."""
        prepared = [(it, row_values(**{k: v for k, v in it.items() if k != "replaces"})) for it in items]
        out: list[AddResult] = []
        with self.transaction() as conn:
            default_gen = None
            next_seq = None
            for item, values in prepared:
                seed = seed_by_sha(values["sha256"])
                if seed is not None:
                    out.append(AddResult(seed.env_id, False))
                    continue
                hit = conn.execute("SELECT seq, version FROM envs WHERE sha256 = ? AND parent IS NULL",
                                   (values["sha256"],)).fetchone()
                if hit:
                    out.append(AddResult(EnvId(hit[0], hit[1]), False))
                    continue
                replaces = item.get("replaces")
                if replaces is not None:
                    base = parse_env_id(str(replaces)) if not isinstance(replaces, EnvId) else replaces
                    row = conn.execute("SELECT max(version) FROM envs WHERE seq = ?", (base.seq,)).fetchone()
                    if row[0] is None:
                        raise UnknownEnvironmentError(f"cannot replace {base.base}: it is not in the store")
                    seq, version = base.seq, row[0] + 1
                else:
                    if next_seq is None:
                        top = conn.execute("SELECT max(seq) FROM envs").fetchone()[0]
                        next_seq = max(FIRST_STORE_SEQ, (top or 0) + 1)
                    seq, version = next_seq, 0
                    next_seq += 1
                if values["generation"] is None:
                    if default_gen is None:
                        default_gen = max(1, conn.execute("SELECT max(generation) FROM envs").fetchone()[0] or 1)
                    values["generation"] = default_gen
                self._insert(conn, seq, version, values)
                out.append(AddResult(EnvId(seq, version), True))
        self._sync_gym([r.env_id for r in out if r.new])
        return out

    def add_variant(self, parent: str | EnvId, params: dict[str, Any], *, generation: int | None = None,
                    metadata: dict[str, Any] | None = None, acceptance: list | None = None,
                    regret: float | None = None, win_rate_hint: float | None = None,
                    win_rate_plain: float | None = None, designer_model: str | None = None) -> AddResult:
        """Store a *variant* of ``parent`` with ``params`` fixed; see :func:`.variants.add_variant`."""
        from .variants import add_variant

        return add_variant(self, parent, params, generation=generation, metadata=metadata, acceptance=acceptance,
                           regret=regret, win_rate_hint=win_rate_hint, win_rate_plain=win_rate_plain,
                           designer_model=designer_model)

    def find_variant(self, parent: str | EnvId, params: dict[str, Any]) -> EnvId | None:
        """What :meth:`add_variant` would return, without adding; see :func:`.variants.find_variant`."""
        from .variants import find_variant

        return find_variant(self, parent, params)

    def variant_rows(self, *seqs: int) -> list[tuple[int, int, str]]:
        """(seq, version, params JSON) of every loadable variant (of these sequence numbers
        only, when given); reads only its index."""
        sql = ("SELECT seq, version, params FROM envs INDEXED BY envs_variant_rows "
               "WHERE parent IS NOT NULL AND status IN ('active', 'deprecated')")
        if not seqs:
            return self._conn.execute(sql).fetchall()
        return [row for seq in seqs for row in self._conn.execute(sql + " AND seq = ?", (seq,))]

    def _sync_gym(self, env_ids: list[EnvId]) -> None:
        """Keep this process's Gymnasium registry in step with the default store."""
        if not env_ids or self.path.resolve() != default_path().resolve():
            return
        from .gym_registration import sync

        sync(self, env_ids)

    def _insert(self, conn: sqlite3.Connection, seq: int, version: int, values: dict[str, Any]) -> None:
        now = _now()
        values = {**values}
        values.setdefault("created_at", None)
        values["created_at"] = values["created_at"] or now
        values["updated_at"] = values.get("updated_at") or now
        conn.execute("INSERT OR IGNORE INTO sources (sha256, source) VALUES (?, ?)",
                     (values["sha256"], values.pop("source")))
        cols = ["seq", "version", *values]
        conn.execute(
            f"INSERT INTO envs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            (seq, version, *values.values()),
        )

    def remove(self, env_id: str | EnvId) -> list[EnvId]:
        """Delete a local, never-published entry (every version for an id without one)."""
        from .sharing import remove

        return remove(self, env_id)

    def alias_target(self, env_id: str | EnvId) -> EnvId | None:
        """The current id of an entry a pull renumbered away from ``env_id`` (or None)."""
        from .sharing import alias_target

        return alias_target(self._conn, parse_env_id(env_id) if isinstance(env_id, str) else env_id)

    def aliases(self) -> list[dict[str, Any]]:
        from .sharing import aliases

        return aliases(self._conn)

    def remote_commit(self, repo: str) -> str | None:
        """The head of ``repo`` this store last pulled or pushed (None: never synced)."""
        from .sharing import remote_commit

        return remote_commit(self._conn, repo)

    def set_status(self, env_id: str | EnvId, status: str, reason: str | None = None) -> list[EnvId]:
        """Set the status of one version (or, for an id without version, of all its versions)."""
        if status not in STATUSES:
            raise RegistryError(f"status must be one of {', '.join(STATUSES)}, got '{status}'")
        eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
        where, args = ("seq = ?", [eid.seq]) if eid.version is None else ("seq = ? AND version = ?", [eid.seq, eid.version])
        with self.transaction() as conn:
            hits = [EnvId(*r) for r in conn.execute(f"SELECT seq, version FROM envs WHERE {where}", args)]
            if not hits:
                raise UnknownEnvironmentError(f"no environment {eid} in the store")
            conn.execute(f"UPDATE envs SET status = ?, status_reason = ?, updated_at = ? WHERE {where}",
                         [status, reason, _now(), *args])
        self._sync_gym(hits)
        return hits

    def update_scores(self, env_id: str | EnvId, *, regret: float | None = None, win_rate_hint: float | None = None,
                      win_rate_plain: float | None = None, metadata: dict[str, Any] | None = None) -> None:
        """Store the designer's measurements (None leaves a field unchanged); ``metadata``
        is merged into the stored metadata."""
        rec = self.get(env_id)
        sets: dict[str, Any] = {k: float(v) for k, v in
                                (("regret", regret), ("win_rate_hint", win_rate_hint), ("win_rate_plain", win_rate_plain))
                                if v is not None}
        if metadata:
            stored = json.loads(self._conn.execute(
                "SELECT metadata FROM envs WHERE seq = ? AND version = ?",
                (rec.env_id.seq, rec.env_id.version)).fetchone()[0])
            sets["metadata"] = json.dumps({**stored, **metadata}, sort_keys=True)
        if not sets:
            return
        sets["updated_at"] = _now()
        with self.transaction() as conn:
            conn.execute(f"UPDATE envs SET {', '.join(f'{k} = ?' for k in sets)} WHERE seq = ? AND version = ?",
                         [*sets.values(), rec.env_id.seq, rec.env_id.version])
