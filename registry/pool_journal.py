"""The journal of pool imports: what was judged, so an interrupted import resumes.

One SQLite file, ``$SPADE_HOME/pool_imports.sqlite3`` (beside the registry store, WAL,
safe for several processes). A *pool key* names one pool at one revision
(``hub:OWNER/NAME@COMMIT``; a local folder: ``checksums:<sha256 of its checksums.sha256>``,
so a moved copy resumes too, else ``dir:/abs/path``). Per key:

- ``runs``: the generation its accepted games are registered under (chosen once, by the
  first run, so a resumed import adds to the same generation);
- ``judged``: one row per judged file content (key + the file's sha256): the acceptance
  result as JSON (written the moment the verdict arrives, so Ctrl-C loses at most the
  judgments in flight) and, once decided, its ``outcome`` (``registered`` with the id,
  ``duplicate`` with the near-duplicate's name, ``rejected``).

A file whose content has a row is never judged again for that key.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..errors import RegistryError

JOURNAL_NAME = "pool_imports.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    pool_key TEXT PRIMARY KEY, pool TEXT, revision TEXT, generation INTEGER NOT NULL,
    started_at TEXT, updated_at TEXT);
CREATE TABLE IF NOT EXISTS judged (
    pool_key TEXT NOT NULL, sha256 TEXT NOT NULL, file TEXT NOT NULL, accepted INTEGER NOT NULL,
    rejected_at TEXT, result TEXT NOT NULL, outcome TEXT, env_id TEXT, outcome_detail TEXT,
    PRIMARY KEY (pool_key, sha256));
"""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class PoolJournal:
    """The journal file (see the module docstring); use as a context manager."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / JOURNAL_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise RegistryError(f"cannot open the pool import journal {self.path} ({exc}); "
                                "make SPADE_HOME writable or point it elsewhere") from None

    def __enter__(self) -> "PoolJournal":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def generation(self, pool_key: str, pool: str, revision: str | None, default: int) -> int:
        """The generation of this pool's import (``default`` when this is its first run)."""
        self._conn.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                           (pool_key, pool, revision, int(default), _now(), _now()))
        self._conn.execute("UPDATE runs SET updated_at = ? WHERE pool_key = ?", (_now(), pool_key))
        return int(self._conn.execute("SELECT generation FROM runs WHERE pool_key = ?", (pool_key,)).fetchone()[0])

    def rows(self, pool_key: str) -> dict[str, dict[str, Any]]:
        """``file sha256 -> row`` of every judged file of this pool."""
        cur = self._conn.execute(
            "SELECT sha256, file, accepted, rejected_at, result, outcome, env_id, outcome_detail "
            "FROM judged WHERE pool_key = ?", (pool_key,))
        return {r[0]: {"file": r[1], "accepted": bool(r[2]), "rejected_at": r[3], "result": json.loads(r[4]),
                       "outcome": r[5], "env_id": r[6], "outcome_detail": r[7]} for r in cur}

    def record(self, pool_key: str, sha256: str, file: str, result: dict[str, Any]) -> None:
        """Journal one verdict (``result`` as the judge returned it)."""
        self._conn.execute(
            "INSERT OR REPLACE INTO judged (pool_key, sha256, file, accepted, rejected_at, result) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (pool_key, sha256, file, int(bool(result.get("accepted"))), result.get("rejected_at"),
             json.dumps(result, sort_keys=True, default=str)))

    def settle(self, pool_key: str, outcomes: list[tuple[str, str, str | None, str | None]]) -> None:
        """Record ``(sha256, outcome, env id, detail)`` of decided files in one transaction."""
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "UPDATE judged SET outcome = ?, env_id = ?, outcome_detail = ? WHERE pool_key = ? AND sha256 = ?",
                [(o, e, d, pool_key, s) for s, o, e, d in outcomes])
