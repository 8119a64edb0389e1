"""``spade bench acceptance``: throughput and strictness of the acceptance pipeline.

Target (issue 6): without LLM stages, >= 10 candidate sources per second on 2 cores
(the seed suite replayed as candidates, sandboxed) and >= 95% of deliberately broken
variants of the seed suite (:mod:`spade_envs.designer.mutants`) rejected.

Figures: ``candidates_per_s`` (in the runtime named by ``runtime``: the sandbox when it is
available, else in-process; ``parallel_lanes`` sandboxes of one worker each, one per core,
via :meth:`AcceptancePipeline.run_many`), ``candidates_per_s_one_lane`` (one candidate at a
time), ``candidates_per_s_inprocess`` (baseline, one at a time, no isolation),
``ratio_candidates_per_s_vs_target`` (against 10/s), ``ratio_sandbox_vs_inprocess``,
``ratio_seeds_accepted``, ``ratio_mutants_rejected``, ``ratio_mutants_expected_stage``
(rejected at the stage their operator aims at), ``mutants_per_s`` and
``mutant_rejections_by_stage`` (stage -> count; ``accepted`` for survivors).

With a sandbox, the figures of :mod:`.bench_pool` come first: SPADE-format programs judged
per second on the ``spade registry import-pool`` path (fresh judging processes, programs
no cache has seen), one process and one per core in the same run, and their ratio
(``spade_programs_per_s``, ``ratio_spade_per_s_vs_workers_x_one_worker``, ...).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from spade_envs.errors import SpadeError
from spade_envs.runtime import InProcessRuntime

from .acceptance import AcceptancePipeline
from .mutants import outcome, seed_mutants

TARGET_CANDIDATES_PER_S = 10.0


def _throughput(pipeline: AcceptancePipeline, sources: list[tuple[str, str]], rounds: int, parallel: int = 1) -> tuple[float, float]:
    """``(candidates per second, accepted ratio)`` over ``rounds`` passes of ``sources``."""
    items = sources * rounds
    t0 = time.perf_counter()
    reports = pipeline.run_many(items, parallel=parallel)
    seconds = time.perf_counter() - t0
    return len(items) / seconds, sum(r.accepted for r in reports) / max(1, len(reports))


def run(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark; ``quick`` uses one pass and a third of the mutants."""
    from spade_envs.registry.catalog import seed_records

    sources = [(rec.metadata.get("file", str(rec.env_id)), rec.source) for rec in seed_records()]
    rounds = 1 if quick else 3
    inproc = AcceptancePipeline(runtime=InProcessRuntime())
    try:
        sandboxed = AcceptancePipeline()
        sandboxed.runtime  # noqa: B018 - raises when no sandbox is available
    except SpadeError:
        sandboxed = None
    main = sandboxed or inproc
    parallel = 2 if sandboxed is not None else 1

    _throughput(main, sources[:4], 1, parallel)  # warm-up: sandboxes, imports, caches
    per_s_in, _ = _throughput(inproc, sources, rounds)
    per_s_seq, _ = _throughput(main, sources, rounds)
    per_s, accepted_ratio = _throughput(main, sources, rounds, parallel)

    mutants = seed_mutants()
    if quick:
        mutants = mutants[::3]
    stages: Counter[str] = Counter()
    expected = 0
    t0 = time.perf_counter()
    reports = main.run_many([(m.name, m.source) for m in mutants], parallel=parallel)
    for mutant, report in zip(mutants, reports):
        stages[outcome(report)] += 1  # "unverified": accepted without a replayed win (caught)
        expected += outcome(report) in mutant.expect
    mutant_s = time.perf_counter() - t0
    n = max(1, len(mutants))
    pool: dict[str, Any] = {}
    if sandboxed is not None:  # SPADE-format programs on the import-pool path (fresh processes)
        from .bench_pool import run as pool_run

        pool = pool_run(quick=quick)
    return {
        **pool,
        "runtime": "sandbox" if sandboxed is not None else "inprocess",
        "parallel_lanes": parallel,
        "n_candidates": len(sources) * rounds,
        "candidates_per_s": round(per_s, 2),
        "candidates_per_s_one_lane": round(per_s_seq, 2),
        "candidates_per_s_inprocess": round(per_s_in, 2),
        "ratio_candidates_per_s_vs_target": round(per_s / TARGET_CANDIDATES_PER_S, 3),
        "ratio_sandbox_vs_inprocess": round(per_s / per_s_in, 3),
        "ratio_seeds_accepted": round(accepted_ratio, 4),
        "n_mutants": len(mutants),
        "ratio_mutants_rejected": round(1 - stages["accepted"] / n, 4),
        "ratio_mutants_expected_stage": round(expected / n, 4),
        "mutants_per_s": round(len(mutants) / mutant_s, 2) if mutant_s else 0.0,
        "mutant_rejections_by_stage": dict(sorted(stages.items())),
    }
