"""Sharing a store with a Hub dataset: merge on pull, publication marks, aliases, removal
(DESIGN.md section 7).

A pull merges like rebasing local work on a shared branch:

- Entries that came from a remote keep their ids forever. An entry is *published* once
  it was pushed to or pulled from a dataset (``envs.published`` = ``REPO@COMMIT``).
- A remote row whose source is already stored under the same id is unchanged; one whose
  source is stored under another, *unpublished* id deduplicates: the local entry takes
  the remote id and its old id becomes an alias.
- A local, unpublished entry whose id the remote uses is renumbered: an environment whose
  every version is unpublished moves to a new sequence number after both the remote's and
  the store's (versions kept); unpublished versions of a published environment move to
  version numbers after the remote's. Lineage (``parent_ids``) follows the move, and the
  old id is recorded as an alias of the new one.
- Two different published entries under one id (two registries whose ids collide) are a
  conflict: :class:`~spade_envs.errors.RegistryError`, nothing written.
- A remote row is data: one that is malformed (ids, numbers, metadata), whose variant
  params name one of ``SpadeEnv``'s own keywords, or a variant whose parent is not a
  program here or in the pull with the same source (or whose params its ``PARAMETERS``
  refuses) is skipped with the reason (``skipped``), never written.
- A remote row is never trusted: its acceptance verdicts are dropped (the caller
  recomputes them with ``accept``, which may also return the measured ``tool_specs``;
  a failure quarantines the entry), a non-seed row
  cannot claim generation 0, and seed-range rows are skipped (seeds come from the
  installed package).

Aliases resolve when the old id names nothing else; when it names the published entry
that displaced it, the published entry wins and a :class:`RenumberedNotice` says where
the local one went. Either way the first use of an aliased id in a process warns once.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import RegistryError, SpadeError, UnknownEnvironmentError
from .ids import EnvId, parse_env_id
from .migrations import FIRST_STORE_SEQ
from .remote_rows import remote_key as _remote_key
from .remote_rows import row_id as _row_id
from .remote_rows import untrusted_values as _untrusted_values
from .remote_rows import vet as _vet
from .rows import canonical_params, content_key, seed_by_sha

Accept = Callable[[str, str], dict[str, Any]]


class RenumberedNotice(UserWarning):
    """An id used by the caller was renumbered by a pull (shown once per id and process)."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class MergeResult:
    repo: str
    commit: str
    added: list[str] = field(default_factory=list)
    unchanged: int = 0
    seeds: int = 0
    renumbered: list[dict[str, str]] = field(default_factory=list)
    deduplicated: list[dict[str, str]] = field(default_factory=list)
    quarantined: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    acceptance: str = "recomputed"

    def as_json(self, rows: int) -> dict[str, Any]:
        return {"repo": self.repo, "commit": self.commit, "rows": rows, "added": len(self.added),
                "unchanged": self.unchanged, "seeds": self.seeds, "renumbered": self.renumbered,
                "deduplicated": self.deduplicated, "quarantined": self.quarantined, "skipped": self.skipped,
                "acceptance": self.acceptance}


def _local_rows(conn) -> dict[tuple[int, int], tuple[str, str | None]]:
    """(seq, version) -> (content key, published); see :func:`rows.content_key`."""
    return {(s, v): (content_key(sha, parent, params), pub) for s, v, sha, pub, parent, params in
            conn.execute("SELECT seq, version, sha256, published, parent, params FROM envs")}


def merge_rows(registry: Any, rows: Iterable[dict[str, Any]], *, repo: str, commit: str,
               accept: Accept | None = None, progress: Callable[[int], None] | None = None,
               record_remote: bool = True) -> MergeResult:
    """Merge dataset ``rows`` (each with ``seq``, ``version``, ``source``...; sha256 already
    checked by the caller) into ``registry``. ``accept(source, name)`` recomputes
    acceptance for every row new to this store (None: verdicts left empty, marked
    pending). ``record_remote``: remember ``commit`` as the last synced head of ``repo``."""
    res = MergeResult(repo, commit, acceptance="recomputed" if accept else "pending")
    published = f"{repo}@{commit}"
    origin = f"hub:{published}"
    conn = registry._conn
    remote: dict[tuple[int, int], dict[str, Any]] = {}
    for r in rows:
        rid = _row_id(r)
        if rid is None:
            res.skipped.append({"id": str(r.get("env_id") if isinstance(r, dict) else "?")[:60],
                                "reason": "refused: malformed row (seq, version, source and sha256 are required)"})
            continue
        seq, version = rid
        if r.get("parent") or r.get("params"):
            try:
                if not r.get("parent"):
                    raise RegistryError("params without a parent")
                canonical_params(r.get("params"))  # SpadeEnv's own keywords are refused here
            except SpadeError as exc:
                res.skipped.append({"id": str(EnvId(seq, version)), "reason": f"refused: {exc}"[:500]})
                continue
        if seq < FIRST_STORE_SEQ:
            if seed_by_sha(r["sha256"]) is not None:
                res.seeds += 1
            else:
                res.skipped.append({"id": f"{EnvId(seq, version)}", "reason": "seed-range id whose source is not "
                                    "a seed of this spade-envs (a different version's seed suite?)"})
            continue
        remote[(seq, version)] = r
    local = _local_rows(conn)
    prepared = _vet(remote, local, origin, published, res)
    by_sha = {sha: key for key, (sha, _) in local.items()}
    fresh: dict[tuple[int, int], dict[str, Any]] = {}
    for key, r in remote.items():
        hit = by_sha.get(_remote_key(r))
        if hit is not None and local[hit][1] is not None and hit != key:
            res.skipped.append({"id": str(EnvId(*key)), "reason": f"same source as the published {EnvId(*hit)}"})
        elif hit is None:
            fresh[key] = r
    set_total = getattr(progress, "set_total", None)  # a progress display that shows a known total
    if set_total is not None:
        set_total(len(fresh) if accept is not None else len(remote))
    # acceptance runs outside the transaction (it is slow); verdicts are local facts
    verdicts: dict[tuple[int, int], dict[str, Any]] = {}
    if accept is not None:
        for key, r in fresh.items():
            verdicts[key] = accept(r["source"], str(EnvId(*key)))
            if progress is not None:
                progress(1)
    tick = progress if accept is None else None
    with registry.transaction() as conn:
        local = _local_rows(conn)  # again, under the write lock
        by_sha = {sha: key for key, (sha, _) in local.items()}
        for key, r in remote.items():
            occupant = local.get(key)
            if occupant and occupant[1] is not None and occupant[0] != _remote_key(r):
                raise RegistryError(
                    f"conflict: {EnvId(*key)} of {repo} differs from the published {EnvId(*key)} in this store "
                    f"(from {occupant[1]}); two registries with colliding ids cannot be merged: pull {repo} into "
                    "a separate SPADE_HOME")
        moves: dict[tuple[int, int], tuple[int, int]] = {}
        # 1. deduplicate: local unpublished entries whose source the remote has under another id
        drop: list[tuple[int, int]] = []
        for key, r in remote.items():
            hit = by_sha.get(_remote_key(r))
            if hit is not None and hit != key and local[hit][1] is None:
                drop.append(hit)
                moves[hit] = key
                res.deduplicated.append({"from": str(EnvId(*hit)), "to": str(EnvId(*key))})
        keep_acc = {moves[k]: conn.execute("SELECT acceptance FROM envs WHERE seq = ? AND version = ?", k).fetchone()[0]
                    for k in drop}
        for k in drop:
            conn.execute("DELETE FROM envs WHERE seq = ? AND version = ?", k)
            del local[k]
        # 2. renumber local unpublished entries on ids the remote uses
        remote_seqs = {s for s, _ in remote}
        top = max([s for s, _ in local] + [s for s, _ in remote] + [FIRST_STORE_SEQ - 1])
        local_versions: dict[int, list[int]] = {}
        for s_, v_ in local:
            local_versions.setdefault(s_, []).append(v_)
        remote_versions: dict[int, list[int]] = {}
        for s_, v_ in remote:
            remote_versions.setdefault(s_, []).append(v_)
        for seq in sorted(set(local_versions) & remote_seqs):
            mine = sorted(local_versions[seq])
            # an unpublished entry identical to the remote's under the same id is that entry: it stays
            unpub = [v for v in mine if local[(seq, v)][1] is None
                     and not ((seq, v) in remote and local[(seq, v)][0] == _remote_key(remote[(seq, v)]))]
            if not unpub:
                continue
            if len(unpub) == len(mine):  # a wholly local environment: a new sequence number
                top += 1
                targets = {v: (top, v) for v in unpub}
            else:  # local versions of a shared environment: versions after everybody's
                last = max(remote_versions[seq] + [v for v in mine if local[(seq, v)][1] is not None])
                targets = {v: (seq, last + 1 + i) for i, v in enumerate(unpub)}
            clash = [v for v in unpub if (seq, v) in remote]
            if not clash and len(unpub) != len(mine):
                continue  # versions the remote does not have: they stay where they are
            for v, new in targets.items():
                if new != (seq, v):
                    moves[(seq, v)] = new
                    res.renumbered.append({"from": str(EnvId(seq, v)), "to": str(EnvId(*new))})
        _apply_moves(conn, {k: t for k, t in moves.items() if k not in drop})
        _rewrite_parents(conn, moves)
        _record_aliases(conn, moves)
        # 3. insert what is new, mark what is shared as published
        for key, r in remote.items():
            if tick is not None:
                tick(1)
            sha = _remote_key(r)
            present = conn.execute("SELECT sha256, parent, params FROM envs WHERE seq = ? AND version = ?", key).fetchone()
            if present is not None:
                if content_key(*present) == sha:
                    res.unchanged += 1
                    conn.execute("UPDATE envs SET published = ? WHERE seq = ? AND version = ? AND published IS NULL",
                                 (published, *key))
                continue
            if any(content_key(*row) == sha for row in conn.execute(
                    "SELECT sha256, parent, params FROM envs WHERE sha256 = ?", (r["sha256"],))):
                continue  # skipped above: the same source (or variant) is published under another id
            values = dict(prepared[key]) if key in prepared else _untrusted_values(r, origin, published)
            verdict = verdicts.get(key)
            if key in keep_acc:
                values["acceptance"] = keep_acc[key]
            elif verdict is not None:
                values["acceptance"] = json.dumps(verdict["stages"], sort_keys=True)
                if "tool_specs" in verdict:  # measured locally: replaces the dataset's claim
                    values["tool_specs"] = json.dumps(verdict["tool_specs"], sort_keys=True)
                    meta = json.loads(values["metadata"])
                    meta.pop("tool_specs_vary_by_seed", None)
                    meta.update({k: True for k in ("tool_specs_vary_by_seed",) if verdict.get(k)})
                    values["metadata"] = json.dumps(meta, sort_keys=True)
                if not verdict["accepted"]:
                    failed = next((s for s in verdict["stages"] if not s["ok"]), {"name": "?", "detail": ""})
                    values["status"] = "quarantined"
                    values["status_reason"] = f"failed local acceptance at {verdict.get('rejected_at') or failed['name']}: " \
                                              f"{failed['detail']}"[:500]
                    res.quarantined.append({"id": str(EnvId(*key)), "reason": values["status_reason"]})
            else:
                meta = json.loads(values["metadata"])
                meta["acceptance_pending"] = True
                values["metadata"] = json.dumps(meta, sort_keys=True)
            registry._insert(conn, key[0], key[1], values)
            res.added.append(str(EnvId(*key)))
        if record_remote:
            conn.execute("INSERT INTO remotes (repo, commit_sha, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (repo) DO UPDATE SET commit_sha = excluded.commit_sha, "
                         "updated_at = excluded.updated_at", (repo, commit, _now()))
    changed = [EnvId(*k) for k in moves] + [EnvId(*t) for t in moves.values()] + [parse_env_id(i) for i in res.added]
    registry._sync_gym(changed)
    return res


def _apply_moves(conn, moves: dict[tuple[int, int], tuple[int, int]]) -> None:
    """Move rows to their new (seq, version) in two steps (no transient key clash)."""
    if not moves:
        return
    for i, (old, _) in enumerate(moves.items()):
        conn.execute("UPDATE envs SET seq = ?, version = ? WHERE seq = ? AND version = ?", (-1 - i, 0, *old))
    for i, (old, new) in enumerate(moves.items()):
        meta = conn.execute("SELECT metadata FROM envs WHERE seq = ? AND version = 0", (-1 - i,)).fetchone()
        m = json.loads(meta[0] or "{}") if meta else {}
        m["renumbered_from"] = str(EnvId(*old))
        conn.execute("UPDATE envs SET seq = ?, version = ?, metadata = ?, updated_at = ? WHERE seq = ? AND version = 0",
                     (*new, json.dumps(m, sort_keys=True), _now(), -1 - i))


def _rewrite_parents(conn, moves: dict[tuple[int, int], tuple[int, int]]) -> None:
    """Lineage follows renumbered entries: ``parent_ids`` naming a moved id are rewritten."""
    if not moves:
        return
    names = {str(EnvId(*o)): str(EnvId(*n)) for o, n in moves.items()}
    bases = {EnvId(o[0]).base: EnvId(n[0]).base for o, n in moves.items() if o[0] != n[0]}
    for seq, version, parents in conn.execute("SELECT seq, version, parent_ids FROM envs WHERE parent_ids != '[]'").fetchall():
        ids = json.loads(parents)
        new = [names.get(p, bases.get(p, p)) for p in ids]
        if new != ids:
            conn.execute("UPDATE envs SET parent_ids = ? WHERE seq = ? AND version = ?", (json.dumps(new), seq, version))
    # a variant's parent program is a full id: it follows its parent too
    for seq, version, parent in conn.execute("SELECT seq, version, parent FROM envs WHERE parent IS NOT NULL").fetchall():
        if parent in names:
            conn.execute("UPDATE envs SET parent = ? WHERE seq = ? AND version = ?", (names[parent], seq, version))


def _record_aliases(conn, moves: dict[tuple[int, int], tuple[int, int]]) -> None:
    now = _now()
    for old, new in moves.items():
        conn.execute("UPDATE aliases SET new_seq = ?, new_version = ? WHERE new_seq = ? AND new_version = ?", (*new, *old))
        conn.execute("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?, ?, ?, ?)", (*old, *new, "renumbered by a pull", now))


# -- aliases ------------------------------------------------------------------------------
_NOTIFIED: set[str] = set()


def alias_target(conn, eid: EnvId) -> EnvId | None:
    """The current id of an entry once known as ``eid`` (a versionless ``eid`` maps when
    its version 0 was moved), or None."""
    row = conn.execute("SELECT new_seq, new_version FROM aliases WHERE old_seq = ? AND old_version = ?",
                       (eid.seq, eid.version if eid.version is not None else 0)).fetchone()
    if row is None:
        return None
    return EnvId(row[0], row[1]) if eid.version is not None or row[0] == eid.seq else EnvId(row[0])


def notify(eid: EnvId, target: EnvId, shadowed: bool) -> None:
    key = str(eid)
    if key in _NOTIFIED:
        return
    _NOTIFIED.add(key)
    if shadowed:
        msg = (f"{eid} now names the published entry that a pull brought in; the local entry that had this id "
               f"before is {target}")
    else:
        msg = f"{eid} was renumbered by a pull: it is now {target} (resolving the old id as an alias)"
    warnings.warn(msg, RenumberedNotice, stacklevel=3)


def aliases(conn) -> list[dict[str, Any]]:
    return [{"from": str(EnvId(a, b)), "to": str(EnvId(c, d)), "reason": r, "at": t}
            for a, b, c, d, r, t in conn.execute("SELECT * FROM aliases ORDER BY old_seq, old_version")]


# -- publication -----------------------------------------------------------------------
def remote_commit(conn, repo: str) -> str | None:
    row = conn.execute("SELECT commit_sha FROM remotes WHERE repo = ?", (repo,)).fetchone()
    return row[0] if row else None


def mark_published(registry: Any, repo: str, commit: str, env_ids: Iterable[EnvId]) -> None:
    """After a push: these entries are published (never renumbered again); ``commit`` is
    the synced head of ``repo``."""
    with registry.transaction() as conn:
        conn.executemany("UPDATE envs SET published = ? WHERE seq = ? AND version = ? AND published IS NULL",
                         [(f"{repo}@{commit}", e.seq, e.version) for e in env_ids])
        conn.execute("INSERT INTO remotes (repo, commit_sha, updated_at) VALUES (?, ?, ?) "
                     "ON CONFLICT (repo) DO UPDATE SET commit_sha = excluded.commit_sha, updated_at = excluded.updated_at",
                     (repo, commit, _now()))


# -- removal ---------------------------------------------------------------------------
def remove(registry: Any, env_id: str | EnvId) -> list[EnvId]:
    """Delete a local, never-published entry (an id without version: every version).
    Published entries are refused: others may rely on their ids (deprecate or quarantine)."""
    eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
    where, args = ("seq = ?", [eid.seq]) if eid.version is None else ("seq = ? AND version = ?", [eid.seq, eid.version])
    with registry.transaction() as conn:
        rows = conn.execute(f"SELECT seq, version, sha256, published FROM envs WHERE {where}", args).fetchall()
        if not rows:
            if eid.seq < FIRST_STORE_SEQ:
                raise RegistryError(f"{eid} is part of the seed suite shipped with spade-envs; it cannot be removed")
            raise UnknownEnvironmentError(f"no environment {eid} in the store; `spade registry list` shows what exists")
        pub = [r for r in rows if r[3] is not None]
        if pub:
            raise RegistryError(
                f"{EnvId(pub[0][0], pub[0][1])} is published ({pub[0][3]}): its id is permanent; use "
                f"`spade registry deprecate {eid}` or `spade registry quarantine {eid}` instead")
        conn.execute(f"DELETE FROM envs WHERE {where}", args)
        for _, _, sha, _ in rows:
            conn.execute("DELETE FROM sources WHERE sha256 = ? AND NOT EXISTS "
                         "(SELECT 1 FROM envs WHERE envs.sha256 = sources.sha256)", (sha,))
        conn.execute(f"DELETE FROM aliases WHERE {where.replace('seq', 'new_seq').replace('version', 'new_version')}",
                     args)
    gone = [EnvId(s, v) for s, v, _, _ in rows]
    registry._sync_gym(gone)
    return gone
