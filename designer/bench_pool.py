"""SPADE-format programs judged per second on the path of ``spade registry import-pool``.

Part of ``spade bench acceptance`` (:mod:`.bench_acceptance`). What is timed is what a
first import of a pool pays: fresh judging processes (:class:`.pool_judge.ParallelJudge`,
spawned for the measurement, each starting its own sandbox zygotes) judging programs
none of them has seen (:func:`.pool_samples.sample_pool` renders a distinct source per
program, so no cache of an earlier run can answer), acceptance plus tool specs per
program, wall-clock time from starting the processes to the last verdict. The same run
measures one process and ``jobs`` processes (default: one per core), so the ratio
``rate(jobs) / (jobs x rate(1))`` is taken under the same machine load; the load average
is reported beside it (a machine shared with other work depresses both rates).

Figures: ``spade_programs_per_s`` (``jobs`` processes), ``spade_programs_per_s_one_worker``,
the same after the first verdict (``..._steady``: what a 7,872-game pool sees once the
processes are up), ``spade_pool_workers``, ``ratio_spade_per_s_vs_workers_x_one_worker``
(and ``ratio_spade_steady_per_s_vs_workers_x_one_worker``),
``ratio_spade_per_s_vs_target`` (against 10/s: 7,872 games in under 15 minutes),
``spade_startup_s`` (spawning the processes until the first verdict, ``jobs`` processes),
``ratio_spade_accepted``, ``spade_n_programs``, ``load_average_1m``, ``cpu_cores``.

Pool scale (``SPADE_BENCH_POOL_N``, default :data:`POOL_SCALE_N` programs; 0 skips it):
``spade_pool_scale_per_s`` is ``jobs`` fresh processes judging that many distinct
SPADE-format programs (a realistic pool, not a warm-up), in the same run as the one-worker
figure, with ``ratio_spade_pool_scale_per_s_vs_one_worker`` (against the one-worker rate
of this run), ``spade_pool_scale_n``, ``spade_pool_scale_s`` and the load average at its
end (``load_average_1m_pool_scale``: a shared machine depresses it; say so with the figure).
"""

from __future__ import annotations

import os
import time
from typing import Any

from spade_envs.errors import SpadeError

from .pool_judge import ParallelJudge, default_jobs
from .pool_samples import SPADE_HEADER, sample_pool

TARGET_PER_S = 10.0
POOL_SCALE_N = 1000


def judge_rate(jobs: int, n: int, start: int) -> dict[str, float]:
    """``{"per_s", "startup_s", "accepted"}`` for ``n`` fresh programs on ``jobs`` new processes."""
    items = [(i, name, text[len(SPADE_HEADER):]) for i, (name, text) in enumerate(sample_pool(n, start=start))]
    t0 = time.perf_counter()
    first = None
    accepted = 0
    with ParallelJudge(jobs) as judge:
        for _, result in judge.results(items):
            first = first if first is not None else time.perf_counter() - t0
            accepted += bool(result.get("accepted"))
    seconds = time.perf_counter() - t0
    first = first or 0.0
    steady = (n - 1) / (seconds - first) if n > 1 and seconds > first else n / seconds
    return {"per_s": n / seconds, "steady_per_s": steady, "startup_s": first, "accepted": accepted / max(1, n)}


def run(quick: bool = False, jobs: int | None = None) -> dict[str, Any]:
    """Measure one process, then ``jobs``; ``quick`` judges fewer programs."""
    jobs = jobs or default_jobs()
    n_scale = pool_scale_n(quick)  # checked before anything runs
    n_one = 10 if quick else 60
    n_many = n_one * jobs
    seed = int(time.time()) % 100_000 * 1000  # programs no earlier run has judged
    one = judge_rate(1, n_one, seed)
    many = judge_rate(jobs, n_many, seed + n_one)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    scale = _pool_scale(jobs, seed + n_one + n_many, one["per_s"], n_scale)
    return {
        **scale,
        "spade_programs_per_s": round(many["per_s"], 2),
        "spade_programs_per_s_one_worker": round(one["per_s"], 2),
        "spade_programs_per_s_steady": round(many["steady_per_s"], 2),
        "spade_programs_per_s_one_worker_steady": round(one["steady_per_s"], 2),
        "spade_pool_workers": jobs,
        "ratio_spade_per_s_vs_workers_x_one_worker": round(many["per_s"] / (jobs * one["per_s"]), 3),
        "ratio_spade_steady_per_s_vs_workers_x_one_worker": round(many["steady_per_s"] / (jobs * one["steady_per_s"]), 3),
        "ratio_spade_per_s_vs_target": round(many["per_s"] / TARGET_PER_S, 3),
        "spade_startup_s": round(many["startup_s"], 2),
        "ratio_spade_accepted": round((one["accepted"] * n_one + many["accepted"] * n_many) / (n_one + n_many), 4),
        "spade_n_programs": n_one + n_many,
        "load_average_1m": round(load, 2),
        "cpu_cores": default_jobs(),
    }


def pool_scale_n(quick: bool) -> int:
    """Programs of the pool-scale figure: ``SPADE_BENCH_POOL_N``, else :data:`POOL_SCALE_N`
    (0 with ``quick``); one clear :class:`~spade_envs.errors.SpadeError` for a setting that
    is not a whole number."""
    raw = os.environ.get("SPADE_BENCH_POOL_N", "").strip()
    try:
        return int(raw) if raw else (0 if quick else POOL_SCALE_N)
    except ValueError:
        raise SpadeError(f"SPADE_BENCH_POOL_N must be a whole number of programs, got {raw!r}") from None


def _pool_scale(jobs: int, start: int, one_per_s: float, n: int) -> dict[str, Any]:
    """The pool-scale figures of the module docstring ({} when skipped)."""
    if n <= 0:
        return {}
    t0 = time.perf_counter()
    scale = judge_rate(jobs, n, start)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return {"spade_pool_scale_per_s": round(scale["per_s"], 2), "spade_pool_scale_n": n,
            "spade_pool_scale_s": round(time.perf_counter() - t0, 1),
            "ratio_spade_pool_scale_per_s_vs_one_worker": round(scale["per_s"] / one_per_s, 3),
            "ratio_spade_pool_scale_accepted": round(scale["accepted"], 4),
            "load_average_1m_pool_scale": round(load, 2)}


if __name__ == "__main__":  # python -m spade_envs.designer.bench_pool [jobs ...]
    import json
    import sys

    for arg in sys.argv[1:] or [str(default_jobs())]:
        print(json.dumps({"jobs": int(arg), **run(quick=True, jobs=int(arg))}))
