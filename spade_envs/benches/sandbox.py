"""``spade bench sandbox``: what isolation costs, against plain in-process execution.

Figures (``run(quick) -> dict``):

- ``plain_step_us``: ``env.step`` of a cheap program executed with the real interpreter;
- ``restricted_step_us``: the same program compiled under the sandbox policy, in-process;
- ``isolated_step_us``: one step per message to a sandbox worker (round trip);
- ``batched_step_us``: steps sent 64 per message (to 2 workers);
  ``batched_overhead_us`` = batched - plain (target <= 20), ``ratio_isolated_vs_plain``;
- ``worker_ready_us``: fork from the warm zygote until the worker answers (target <= 30 ms);
  ``zygote_start_s``: the quick zygote's start (what the first environment waits for);
  ``full_zygote_ready_s``: until the full one (numpy, math_verify loaded) has taken over;
- ``hang_recovery_s`` / ``hang_over_deadline_us``: a hung step is reported (its worker
  killed) and the next episode runs on a fresh worker (``reset``): target deadline + 50 ms;
- ``first_env_fresh_process_s``: a fresh interpreter runs ``import spade_envs, gymnasium``,
  ``gym.make`` of a store entry (sandboxed: store entries are untrusted), ``reset`` and
  one ``step`` (target <= 0.5 s; ``..._wall_s`` adds the interpreter's own start). The
  package's bytecode is compiled first, as ``pip install`` does (an editable install, or
  ``PYTHONDONTWRITEBYTECODE=1``, would otherwise recompile every module in every run);
  ``import_spade_envs_s`` is the import alone (the part the sandbox does not control);
  ``first_numpy_math_verify_env_fresh_process_s``: the same for a program using numpy and
  math_verify (served by the full zygote, which loads in the background);
- ``ratio_seed_replay_sandbox_vs_inprocess``: speed of replaying the seed suite's
  solutions (3 seeds each, reset + solution + every action) sandboxed relative to
  in-process (target >= 0.33); ``..._batched`` replays all environments in lock-step
  through ``step_batch``/``reset_batch``. Both are best-of-:data:`REPLAY_PAIRS` (2 with
  ``--quick``), the runs interleaved; ``ratio_seed_replay_paired_median`` is the median
  ratio of adjacent (in-process, sandboxed) runs, a check on the best-of figure when the
  machine's speed drifts.
"""

from __future__ import annotations

import time
from typing import Any

CHEAP_ENV = """
class CounterEnv:
    def __init__(self, max_turns=1000000, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self._count = 0
        self._target = 7
        return "count to seven", {}

    def step(self, action):
        self._count += 1
        done = self._count >= self.max_turns
        reward = 1.0 if action == "7" else 0.0
        return f"count={self._count}", reward, False, done, {}

    def solution(self):
        return "7"
"""


REPLAY_PAIRS = 5


def _per_call_us(fn, n: int) -> float:
    fn()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def _sessions(runtime: Any, records: Any, opened: dict) -> list:
    """One session per record and runtime, opened once and reused across repetitions."""
    for r in records:
        if (id(runtime), r.class_name) not in opened:
            opened[(id(runtime), r.class_name)] = runtime.open(r.source)
    return [opened[(id(runtime), r.class_name)] for r in records]


def _replay(runtime: Any, records: Any, opened: dict) -> float:
    from spade_envs.solutions import solution_to_actions

    sessions = _sessions(runtime, records, opened)
    t = time.perf_counter()
    for session in sessions:
        for seed in (0, 1, 2):
            session.reset(seed)
            for action in solution_to_actions(session.solution()):
                session.step(action)
    return time.perf_counter() - t


def _replay_batched(runtime: Any, records: Any, opened: dict) -> float:
    from spade_envs.solutions import solution_to_actions

    sessions = _sessions(runtime, records, opened)
    t = time.perf_counter()
    for seed in (0, 1, 2):
        runtime.reset_batch([(s, seed) for s in sessions])
        plans = [solution_to_actions(s.solution()) for s in sessions]
        for k in range(max(len(p) for p in plans)):
            runtime.step_batch([(s, p[k]) for s, p in zip(sessions, plans) if k < len(p)])
    return time.perf_counter() - t


HEAVY_ENV = """
from math_verify import parse, verify

class HalfEnv:
    def __init__(self, **kwargs):
        self.reset()

    def reset(self, seed=None):
        return f"what is {np.array([1, 1]).sum()} / 4?", {}

    def step(self, action):
        ok = verify(parse("$1/2$"), parse(action))
        return "done", float(ok), True, False, {}

    def solution(self):
        return "$0.5$"
"""

#: the user's path, in a fresh interpreter: ``import spade_envs`` then the first
#: environment made, reset and stepped (a store entry by id, or a source)
_FRESH = """
import time, sys
t = time.perf_counter()
import spade_envs, gymnasium as gym
t_import = time.perf_counter() - t
if sys.argv[1] == "id":
    env = gym.make(sys.argv[2])
else:
    from spade_envs.gym_env import SpadeEnv
    env = SpadeEnv(source=sys.argv[2])
env.reset(seed=0)
env.step("$0.5$")
assert env.unwrapped._runtime.__class__.__name__ == "SandboxRuntime"
print(t_import, time.perf_counter() - t)
"""


def _fresh_runs(args: list[str], env: dict[str, str] | None, runs: int) -> tuple[float, float, float] | str:
    """Median (first env, import, wall) over ``runs`` fresh interpreters, or an error."""
    import subprocess
    import sys

    times = []
    for _ in range(runs):
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _FRESH, *args], capture_output=True, text=True, timeout=120,
                              env=env)
        wall = time.perf_counter() - t
        try:
            imp, first = map(float, done.stdout.split())
        except ValueError:
            return (done.stderr or done.stdout)[-300:]
        times.append((first, imp, wall))
    return sorted(times)[len(times) // 2]


def _compile_package() -> None:
    """Byte-compile spade-envs' own modules, as ``pip install`` does for a regular install
    (the third-party packages in the environment already are)."""
    import compileall
    import importlib

    for name in ("spade_envs", *(f"spade_envs.{sub}" for sub in ("registry", "designer", "agents", "evals"))):
        for folder in importlib.import_module(name).__path__:
            compileall.compile_dir(folder, quiet=2, workers=1)


def _fresh_process_figures(runs: int = 3) -> dict[str, Any]:
    """A store entry made by id in a fresh process (a 2-entry store under a temporary
    ``SPADE_HOME``: store entries are untrusted, so sandboxed), and a numpy/math_verify
    program given as source (it waits for the full zygote)."""
    import os
    import tempfile
    from pathlib import Path

    from spade_envs.benches.registry import build_store
    from spade_envs.registry.ids import format_env_id

    home = Path(tempfile.gettempdir()) / "spade-bench-sandbox-store"
    last = build_store(2, home)
    _compile_package()
    env = {**os.environ, "SPADE_HOME": str(home), "PYTHONWARNINGS": "ignore"}
    out: dict[str, Any] = {}
    got = _fresh_runs(["id", format_env_id(last)], env, runs)
    if isinstance(got, str):
        return {"first_env_fresh_process_error": got}
    out["first_env_fresh_process_s"], out["import_spade_envs_s"], out["first_env_fresh_process_wall_s"] = got
    got = _fresh_runs(["source", HEAVY_ENV], env, runs)
    if isinstance(got, str):
        out["first_heavy_env_fresh_process_error"] = got
    else:
        out["first_numpy_math_verify_env_fresh_process_s"] = got[0]
    return out


def run(quick: bool = False) -> dict[str, Any]:
    from spade_envs.games import is_multiplayer
    from spade_envs.registry.catalog import seed_records
    from spade_envs.runtime import InProcessRuntime
    from spade_envs.sandbox.restricted import RestrictedLoader
    from spade_envs.sandbox.runtime import SandboxRuntime

    n = 300 if quick else 3000
    out: dict[str, Any] = {"machine_note": "shared 2-core machine; figures vary with load"}

    namespace: dict[str, Any] = {"__name__": "bench_plain"}
    exec(compile(CHEAP_ENV, "<bench>", "exec", dont_inherit=True), namespace)  # noqa: S102 - our own code
    plain = namespace["CounterEnv"]()
    out["plain_step_us"] = _per_call_us(lambda: plain.step("3"), n * 10)
    restricted = RestrictedLoader().open(CHEAP_ENV, "CounterEnv")._env
    out["restricted_step_us"] = _per_call_us(lambda: restricted.step("3"), n * 10)

    t = time.perf_counter()
    runtime = SandboxRuntime(max_workers=2, step_timeout_s=10.0)
    runtime.info()
    out["zygote_start_s"] = time.perf_counter() - t
    runtime.pool.wait_full()  # the figures below are the steady state: workers of the full zygote
    out["full_zygote_ready_s"] = time.perf_counter() - t
    try:
        session = runtime.open(CHEAP_ENV)
        out["isolated_step_us"] = _per_call_us(lambda: session.step("3"), n)
        batch_sessions = [runtime.open(CHEAP_ENV) for _ in range(8)]
        batch = [(s, "3") for s in batch_sessions] * 8
        out["batched_step_us"] = _per_call_us(lambda: runtime.step_batch(batch), max(3, n // 64)) / len(batch)
        out["batched_overhead_us"] = out["batched_step_us"] - out["plain_step_us"]
        out["ratio_isolated_vs_plain"] = out["isolated_step_us"] / out["plain_step_us"]

        pool = runtime.pool
        ready = []
        for _ in range(5 if quick else 20):
            t = time.perf_counter()
            worker = pool.spawn()
            items, lost = pool.exchange({worker: [["ping", 0, None]]}, 5.0)[worker]
            ready.append((time.perf_counter() - t) * 1e6)
            assert lost is None and items[0][0] == 1, lost
            pool.release(worker)
        out["worker_ready_us"] = sorted(ready)[len(ready) // 2]

        deadline = 0.2
        hang_rt = SandboxRuntime(step_timeout_s=deadline)
        try:
            hang_src = CHEAP_ENV.replace("        self._count += 1", "        while action == 'hang':\n            pass\n        self._count += 1")
            hang = hang_rt.open(hang_src)
            recoveries = []
            for _ in range(3):
                t = time.perf_counter()
                try:
                    hang.step("hang")
                except Exception:  # noqa: BLE001 - the timeout is the point
                    pass
                hang.reset(0)  # on a fresh worker
                recoveries.append(time.perf_counter() - t)
                assert hang.worker is not None and hang.worker.alive
            recovery = sorted(recoveries)[1]
        finally:
            hang_rt.close()
        out["hang_deadline_s"] = deadline
        out["hang_recovery_s"] = recovery
        out["hang_over_deadline_us"] = (recovery - deadline) * 1e6

        records = [r for r in seed_records() if not is_multiplayer(r)]  # games replay differently
        if quick:
            records = records[:4]
        inproc = InProcessRuntime()
        opened: dict = {}
        _replay(inproc, records, opened)
        _replay(runtime, records, opened)
        # interleaved, so that both sides see the same machine; best of each (the same
        # estimator as the per-call figures) and the median of the adjacent pairs' ratios
        t_ins, t_sbs, t_bats = [], [], []
        for _ in range(2 if quick else REPLAY_PAIRS):
            t_ins.append(_replay(inproc, records, opened))
            t_sbs.append(_replay(runtime, records, opened))
            t_bats.append(_replay_batched(runtime, records, opened))
        t_in, t_sb, t_sb_batched = min(t_ins), min(t_sbs), min(t_bats)
        pairs = sorted(a / b for a, b in zip(t_ins, t_sbs))
        out["ratio_seed_replay_paired_median"] = pairs[len(pairs) // 2]
        out["seed_envs"] = len(records)
        out["seed_replay_inprocess_s"] = t_in
        out["seed_replay_sandbox_s"] = t_sb
        out["seed_replay_sandbox_batched_s"] = t_sb_batched
        out["ratio_seed_replay_sandbox_vs_inprocess"] = t_in / t_sb
        out["ratio_seed_replay_sandbox_batched_vs_inprocess"] = t_in / t_sb_batched
        info = runtime.info()
        out["network_isolation"] = info.get("network")
        out["jail_layers"] = info.get("layers")
        out["jail_refused"] = info.get("refused")
    finally:
        runtime.close()
    # last: the fresh interpreters' exit (their zygotes and workers torn down) disturbs
    # the in-process figures for a few seconds after them
    out.update(_fresh_process_figures())
    return out
