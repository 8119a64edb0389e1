"""Reading one registry store: entries by id and version, listings, registration rows, counts.

:class:`StoreReads` is the query half of :class:`~.store.Registry` (which adds opening,
migrations and every write); it needs only the connection ``self._conn`` and
``self.path``. Quarantined entries are never resolved (:meth:`StoreReads.get` and
:meth:`StoreReads.latest` say why); ``latest`` is the highest active version, else the
highest deprecated one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import QuarantinedError, UnknownEnvironmentError
from .catalog import EnvRecord
from .ids import EnvId, parse_env_id
from .migrations import SCHEMA_VERSION
from .rows import record_from_row


class StoreReads:
    """The queries of a :class:`~.store.Registry` (see the module docstring)."""

    _conn: sqlite3.Connection
    path: Path

    _SELECT = "SELECT envs.*, sources.source FROM envs JOIN sources USING (sha256)"

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[EnvRecord]:
        cur = self._conn.execute(sql, tuple(args))
        names = [d[0] for d in cur.description]
        return [record_from_row(dict(zip(names, row))) for row in cur]

    def get(self, env_id: str | EnvId, version: int | None = None) -> EnvRecord:
        """The entry for ``env_id`` (an explicit version, or :meth:`latest`). Raises
        :class:`UnknownEnvironmentError` when missing or quarantined (naming the reason)."""
        eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
        if version is not None:
            eid = eid.with_version(version)
        if eid.version is None:
            return self.latest(eid)
        recs = self._query(f"{self._SELECT} WHERE seq = ? AND version = ?", (eid.seq, eid.version))
        if not recs:
            raise UnknownEnvironmentError(f"no environment {eid} in the store; `spade registry list` shows what exists")
        if recs[0].status == "quarantined":
            raise QuarantinedError(f"{eid} is quarantined: {recs[0].metadata.get('status_reason') or 'no reason given'}")
        return recs[0]

    def latest(self, env_id: str | EnvId) -> EnvRecord:
        """Highest active version of ``env_id``; else its highest deprecated version."""
        eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
        recs = self._query(
            f"{self._SELECT} WHERE seq = ? AND status != 'quarantined' "
            "ORDER BY status = 'active' DESC, version DESC LIMIT 1", (eid.seq,))
        if recs:
            return recs[0]
        if self._conn.execute("SELECT 1 FROM envs WHERE seq = ?", (eid.seq,)).fetchone():
            raise QuarantinedError(f"every version of {eid.base} is quarantined")
        raise UnknownEnvironmentError(f"no environment {eid.base} in the store; `spade registry list` shows what exists")

    def versions(self, env_id: str | EnvId) -> list[EnvRecord]:
        eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
        return self._query(f"{self._SELECT} WHERE seq = ? ORDER BY version", (eid.seq,))

    def list(self, *, generation: int | None = None, skill: str | None = None, status: str | None = None,
             tags: Iterable[str] | None = None, seeds: bool = False) -> list[EnvRecord]:
        """Entries ordered by (seq, version), filtered; ``seeds=True`` puts the package's
        seed suite (generation 0) first."""
        where, args = [], []
        for col, val in (("generation", generation), ("skill", skill), ("status", status)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = self._SELECT + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY seq, version"
        recs = self._query(sql, args)
        if seeds:
            from .catalog import seed_records

            recs = [r for r in seed_records() if (generation in (None, 0) and skill in (None, r.skill)
                                                  and status in (None, r.status))] + recs
        if tags:
            want = set(tags)
            recs = [r for r in recs if want & set(r.metadata.get("tags") or [])]
        return recs

    def registration_rows(self) -> list[tuple[int, int, int | None]]:
        """(seq, version, max_episode_steps) of every loadable (non-quarantined) entry;
        reads only the covering index."""
        return self._conn.execute(
            "SELECT seq, version, max_episode_steps FROM envs INDEXED BY envs_registration "
            "WHERE status IN ('active', 'deprecated')").fetchall()

    def registration_rows_of(self, *seqs: int) -> list[tuple[int, int, int | None]]:
        """:meth:`registration_rows` and :meth:`alias_rows` of these sequence numbers only."""
        out: list[tuple[int, int, int | None]] = []
        for seq in seqs:
            out += self._conn.execute(
                "SELECT seq, version, max_episode_steps FROM envs INDEXED BY envs_registration "
                "WHERE status IN ('active', 'deprecated') AND seq = ?", (seq,)).fetchall()
            out += self._conn.execute(
                "SELECT old_seq, old_version, NULL FROM aliases WHERE old_seq = ? AND NOT EXISTS "
                "(SELECT 1 FROM envs WHERE envs.seq = aliases.old_seq)", (seq,)).fetchall()
        return out

    def size_hint(self) -> int:
        """An upper bound of the number of rows (O(log n): the largest rowid)."""
        return int(self._conn.execute("SELECT coalesce(max(rowid), 0) FROM envs").fetchone()[0])

    def alias_rows(self) -> list[tuple[int, int, int | None]]:
        """(old seq, old version, None) of aliases whose old sequence number names no
        entry any more: Gymnasium ids that stay makeable after a pull renumbered them
        (an alias under a sequence number the remote now uses is left out of Gymnasium,
        whose versionless lookup would pick it over the published entry)."""
        return self._conn.execute(
            "SELECT old_seq, old_version, NULL FROM aliases WHERE NOT EXISTS "
            "(SELECT 1 FROM envs WHERE envs.seq = aliases.old_seq)").fetchall()

    def next_generation(self) -> int:
        """The generation number a new self-play round should use (1 + the newest)."""
        return (self._conn.execute("SELECT max(generation) FROM envs").fetchone()[0] or 0) + 1

    def stats(self) -> dict[str, Any]:
        """Counts by status, generation and skill (store only; seeds counted apart)."""
        from .catalog import seed_records

        q = self._conn.execute

        def group(col: str) -> dict[str, int]:
            return {str(k): n for k, n in q(f"SELECT {col}, count(*) FROM envs GROUP BY {col} ORDER BY {col}")}

        total, envs = q("SELECT count(*), count(DISTINCT seq) FROM envs").fetchone()
        regret = q("SELECT avg(regret), avg(win_rate_plain) FROM envs WHERE status = 'active'").fetchone()
        return {
            "path": str(self.path), "schema_version": SCHEMA_VERSION, "seeds": len(seed_records()),
            "versions": total, "environments": envs, "by_status": group("status"),
            "by_generation": group("generation"), "by_skill": group("coalesce(skill, '')"),
            "mean_regret": regret[0], "mean_win_rate_plain": regret[1],
        }

    def integrity_check(self) -> str:
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0]
