"""``spade registry import-pool``: a whole SPADE pool in, judged in parallel, resumable.

Order of work (DESIGN.md section 7):

1. resolve the pool (a folder, or a Hub dataset at a revision) and verify
   ``checksums.sha256`` (:func:`spade_envs.registry.pool_layout.read_pool`): a pool that
   does not verify raises before anything is judged or stored;
2. per game file, in file-name order: a content already decided for this pool (the
   journal, :mod:`spade_envs.registry.pool_journal`) keeps its outcome; a source already
   stored (or a seed, or an earlier file of this pool) is an exact ``duplicate``; every
   other file is judged by :class:`spade_envs.designer.pool_judge.ParallelJudge` (all
   cores) and its verdict journaled as it arrives;
3. accepted files are decided in file-name order as soon as every file before them has its
   verdict: a near-duplicate (:class:`~spade_envs.designer.novelty.NoveltyIndex` over the
   seeds, the store and the files of this pool registered before it) is a ``duplicate``;
   the rest go through the registry's one write path for accepted programs
   (:func:`~spade_envs.registry.write.register_accepted_many`, with the acceptance
   verdicts; the tool specs it measures are served from the judging sandbox's
   observations, :class:`~spade_envs.designer.pool_judge.RecordedSpecs`) as ONE generation (chosen by the first run of this
   pool, kept by its resumptions), with provenance in ``metadata["pool"]``: pool, revision,
   file, sha256 of the file, rollout, index, and the file's ``manifest.jsonl`` and
   ``validation_manifest.jsonl`` rows verbatim; the skill is the file name's.

Ctrl-C (``KeyboardInterrupt``) stops the judging processes at once; what was judged is in
the journal and what could be decided is registered, so running the same command again
judges only the rest. :func:`import_pool` returns the ``--json`` object.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..program import source_sha256
from ..registry.pool_layout import PoolError, PoolGame, fetch_pool, hub_blobs, read_game, source_of
from ..registry.pool_layouts import read_any_pool

REGISTER_BATCH = 32


def _provenance(pool_name: str, revision: str | None, game: PoolGame) -> dict[str, Any]:
    return {"name": pool_name, "revision": revision, "file": game.name, "path": game.rel or game.name,
            "sha256": game.sha256,
            "rollout": game.rollout, "index": game.index, "manifest": game.manifest, "validation": game.validation}


class _Registrar:
    """Decides accepted files in file order and stores them in batches (step 3).

    ``stored``: sha256 of every source in the store when the run began; a journaled file
    whose source is among them was stored by an earlier run that stopped before noting it
    (the store hands back the same id). ``make_index`` builds the novelty index on first
    use (a run with nothing to decide never pays for it)."""

    def __init__(self, reg: Any, journal: Any, pool_key: str, generation: int, stored: set[str],
                 make_index: Callable[[], Any]) -> None:
        from ..designer.pool_judge import RecordedSpecs

        self.reg, self.journal, self.key, self.generation = reg, journal, pool_key, generation
        self.stored, self._make_index, self._index = stored, make_index, None
        self.overlap = 0  # registered this run while overlapping an evaluated suite (evals.contamination)
        self.specs = RecordedSpecs()  # the write path measures tool specs here: the judging sandbox's
        self.queue: list[tuple[PoolGame, str, dict[str, Any], dict[str, Any]]] = []

    def offer(self, game: PoolGame, source: str, result: dict[str, Any], provenance: dict[str, Any]) -> None:
        self.queue.append((game, source, result, provenance))
        self.specs.add(source, result)
        if len(self.queue) >= REGISTER_BATCH:
            self.flush()

    def _item(self, game: PoolGame, source: str, result: dict[str, Any], prov: dict[str, Any],
              novelty: str) -> dict[str, Any]:
        from .registry_common import verdict_metadata

        from ..evals.contamination import OVERLAP_TAG, eval_overlap

        stages = [dict(s, detail=novelty) if s.get("name") == "novelty" else s for s in result.get("stages", [])]
        overlap = eval_overlap(source)  # an evaluated suite's task: flagged, kept out of training
        extra: dict[str, Any] = {}
        if overlap:
            prov = {**prov, "eval_overlap": overlap}
            extra["tags"] = [OVERLAP_TAG]
            self.overlap += 1
        return {"source": source, "filename": game.name, "generation": self.generation, "skill": game.skill,
                "metadata": {**verdict_metadata(result), "pool": prov}, "acceptance": stages, **extra}

    def flush(self) -> None:
        from ..errors import SpadeError
        from ..registry.write import register_accepted_many

        items: list[dict[str, Any]] = []
        games: list[PoolGame] = []
        settled: list[tuple[str, str, str | None, str | None]] = []
        for game, source, result, prov in self.queue:
            if source_sha256(source) not in self.stored:
                if self._index is None:
                    self._index = self._make_index()
                ok, detail = self._index.check(source)
                if not ok:
                    settled.append((game.sha256, "duplicate", None, detail))
                    continue
                self._index.add(f"{game.name} (this pool)", source)
            else:
                detail = "stored by an earlier run of this import"
            items.append(self._item(game, source, result, prov, detail))
            games.append(game)
        self.queue = []
        try:  # the registry's one write path for accepted programs (tool specs measured there)
            stored = register_accepted_many(self.reg, items, runtime=self.specs) if items else []
        except SpadeError:  # one bad item must not sink its batch: store them one by one
            stored = []
            for item in items:
                try:
                    stored.append(register_accepted_many(self.reg, [item], runtime=self.specs)[0])
                except SpadeError as exc:
                    stored.append(exc)
        for game, item, res in zip(games, items, stored):
            if isinstance(res, SpadeError):
                settled.append((game.sha256, "rejected", None, f"store: {res}"))
                continue
            env = res.as_json()
            full = f"{env['id']}-v{env['version']}"
            new = env.get("new", True) or source_sha256(item["source"]) in self.stored
            settled.append((game.sha256, "registered", full, None) if new else
                           (game.sha256, "duplicate", full, f"the same source is already stored as {full}"))
        if settled:
            self.journal.settle(self.key, settled)


def import_pool(spec: str, *, jobs: int | None = None, generation: int | None = None,
                on_result: Callable[[str, dict[str, Any]], None] | None = None, progress: bool = True) -> dict[str, Any]:
    """Import the pool ``spec`` (folder or ``OWNER/NAME[@REVISION]``) into the default
    store; returns the ``--json`` object (``interrupted`` True after a Ctrl-C: what was
    judged is journaled and what could be decided registered). ``generation`` applies to
    the first run of a pool (a resumed one keeps it); ``on_result(file name, result)`` is
    called after each verdict (progress hooks, tests)."""
    from ..designer.memory import DesignerMemory
    from ..designer.pool_judge import ParallelJudge
    from ..registry.pool_journal import PoolJournal
    from ..registry.store import spade_home
    from .registry_common import open_store
    from .registry_import import _known_shas

    t0 = time.perf_counter()
    root, pool_name, revision = fetch_pool(spec)
    # a Hub snapshot's files are the cache's links into its blobs/ (named here, never by the pool)
    links = hub_blobs(root) if not Path(spec).expanduser().exists() else None
    pool = read_any_pool(root, links_into=links)  # verifies checksums.sha256 before anything else is read
    # a Hub pool is named by its commit; a local one by its checksums file (its content, wherever it lies)
    pool_key = (f"hub:{pool_name}@{revision}" if revision else
                f"checksums:{pool.checksums_sha256}" if pool.checksums_sha256 else f"dir:{root}")
    out: dict[str, Any] = {"pool": pool_name, "revision": revision, "checksums": pool.checksums,
                           "files": len(pool.games), "judged": 0, "interrupted": False}
    with open_store() as reg, PoolJournal(spade_home()) as journal:
        gen = journal.generation(pool_key, pool_name, revision,
                                 generation if generation is not None else reg.next_generation())
        out["generation"] = gen
        rows = journal.rows(pool_key)
        out["judged_earlier"] = len(rows)
        registrar = _Registrar(reg, journal, pool_key, gen, set(), lambda: DesignerMemory(reg).novelty_index())
        outcome: dict[str, tuple[str, str]] = {}  # file name -> (verdict, detail) decided without judging
        try:
            with ParallelJudge(jobs) as judge:
                out["jobs"] = judge.jobs
                if len(rows) < len(pool.games):
                    judge.start()  # the processes start up (sandboxes, health check) while the files are read
                registrar.stored = known = _known_shas(reg)
                plan, outcome = _plan(pool, rows, known)
                to_judge = [(g, s) for g, s in plan if g.sha256 not in rows]
                by_sha = {g.sha256: g for g, _ in to_judge}
                results = {g.sha256: rows[g.sha256]["result"] for g, _ in plan if g.sha256 in rows}
                cursor = 0

                def advance() -> None:
                    nonlocal cursor
                    while cursor < len(plan) and plan[cursor][0].sha256 in results:
                        game, source = plan[cursor]
                        result = results[game.sha256]
                        if result.get("accepted"):
                            registrar.offer(game, source, result, _provenance(pool_name, revision, game))
                        cursor += 1

                advance()
                with _progress(len(to_judge), progress) as bar:
                    for sha, result in judge.results((g.sha256, g.name, s) for g, s in to_judge):
                        journal.record(pool_key, sha, by_sha[sha].name, result)
                        results[sha] = result
                        out["judged"] += 1
                        bar(1)
                        advance()
                        if on_result is not None:
                            on_result(by_sha[sha].name, result)
        except KeyboardInterrupt:
            out["interrupted"] = True
        registrar.flush()
        out.update(_summary(pool.games, journal.rows(pool_key), outcome))
        out["eval_overlap"] = registrar.overlap
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _plan(pool: Any, rows: dict[str, dict[str, Any]],
          known: set[str]) -> tuple[list[tuple[PoolGame, str]], dict[str, tuple[str, str]]]:
    """``(plan, outcome)``: the ``(game, source)`` pairs to judge or decide, in file order,
    and what is decided without judging (exact duplicates, unreadable files); files an
    earlier run decided appear in neither."""
    seen: set[str] = set()
    plan: list[tuple[PoolGame, str]] = []
    outcome: dict[str, tuple[str, str]] = {}
    for game in pool.games:
        if game.sha256 in seen:
            outcome[game.name] = ("duplicate", "the same file is earlier in this pool")
            continue
        row = rows.get(game.sha256)
        if row is not None and row["outcome"] in ("registered", "duplicate"):
            seen.add(game.sha256)  # decided by an earlier run
            continue
        try:
            source = source_of(read_game(game))
        except PoolError as exc:
            outcome[game.name] = ("rejected", f"read: {exc}")
            continue
        sha = source_sha256(source)
        if sha in seen or (sha in known and row is None):
            outcome[game.name] = ("duplicate", "the same source is already stored or earlier in this pool")
            continue
        seen.update((sha, game.sha256))
        plan.append((game, source))
    return plan, outcome


def _summary(games: list[PoolGame], rows: dict[str, dict[str, Any]], outcome: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Counts over the whole pool after this run (the journal, and what was decided
    without judging: exact duplicates and unreadable files)."""
    verdicts: list[str] = []
    by_stage: Counter[str] = Counter()
    ids: list[str] = []
    accepted = unverified = 0
    for game in games:
        row = rows.get(game.sha256)
        if game.name in outcome:
            verdict = outcome[game.name][0]
            by_stage.update(["read"] if verdict == "rejected" else [])
        elif row is None:
            verdict = "pending"
        elif not row["accepted"]:
            verdict = "rejected"
            by_stage[row["rejected_at"] or "?"] += 1
        else:
            accepted += 1
            unverified += row["result"].get("verified") is False
            verdict = row["outcome"] or "pending"
            by_stage.update(["store"] if verdict == "rejected" else [])
            if verdict == "registered" and row["env_id"]:
                ids.append(row["env_id"])
        verdicts.append(verdict)
    counts = Counter(verdicts)
    return {"accepted": accepted, "unverified": unverified, "registered": counts["registered"],
            "duplicates": counts["duplicate"], "rejected": counts["rejected"], "pending": counts["pending"],
            "rejected_by_stage": dict(sorted(by_stage.items())), "ids": ids}


class _progress:
    """A rich progress bar on stderr with a known total (silent when not a terminal)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self._bar, self._task = total, enabled, None, None

    def __enter__(self) -> Callable[[int], None]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        console = Console(stderr=True)
        if self.enabled and self.total and console.is_terminal:
            self._bar = Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("judging", total=self.total)
        return self.advance

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
