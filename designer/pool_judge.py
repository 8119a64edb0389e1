"""Judging many programs at once: a process pool of acceptance jobs (pool imports, bench).

:class:`ParallelJudge` runs ``jobs`` judging processes (``spawn``: fresh interpreters,
nothing inherited from the caller; as with any ``spawn`` pool, a script that uses it
guards its entry point with ``if __name__ == "__main__"``), each holding one
:class:`~.acceptance.AcceptancePipeline` on a sandbox of its own
(:func:`pipeline_for_pool`), so every core judges a program while the caller only
collects verdicts. A job (:func:`judge_source`) is the acceptance pipeline through its
public entry point, without a novelty memory (the caller judges novelty in file order,
which a parallel run cannot), plus, for an accepted program, its tool specs after a reset
on each of seeds 0, 1, 2 (what :func:`spade_envs.registry.toolspecs.collect_tool_specs`
reads), noted during the acceptance run itself in its sandbox (a second session is opened
only when acceptance did not reset those seeds). Results are plain JSON-able dicts::

    {"accepted", "rejected_at", "stages": [{"name", "ok", "detail", "seconds"}], "verified",
     "solution_form", "seconds", "tool_specs_seeds"?: [specs of seed 0, 1, 2]}

The caller stores accepted programs through the registry's one write path, giving it
:class:`RecordedSpecs` as the runtime it measures tool specs in.

:meth:`ParallelJudge.results` takes ``(key, file name, source)`` items lazily (at most
:data:`IN_FLIGHT_PER_JOB` per process in flight) and yields ``(key, result)`` as verdicts
arrive, in completion order. Judging processes ignore SIGINT: a Ctrl-C reaches the caller
alone, and leaving the ``with`` block on an exception kills the processes (their sandbox
workers die with them), so an interrupted import stops at once and loses only the
verdicts in flight.

Cost per SPADE-format program (measured on the 2-core development machine under a load
average of ~10, ``pool_samples`` programs): ~10 ms of CPU in the judging process and
~17 ms in its sandbox worker, about 73 request/reply round trips (22 plays of ~3 calls:
reset, solution, a batch of steps), one worker fork per program.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from spade_envs.errors import SpadeError, UntrustedCodeError

from .acceptance import AcceptanceConfig, AcceptancePipeline

IN_FLIGHT_PER_JOB = 4

_PIPELINE: AcceptancePipeline | None = None
_INIT_ERROR: str | None = None  # why this judging process could not start (no verdict is possible)


class JudgeUnavailable(SpadeError):
    """The judging processes cannot judge at all (they failed to start, or died): no
    verdict was produced, so nothing may be recorded for the file."""


class _SpecRecorder:
    """A runtime wrapper that notes a program's tool specs after each first ``reset(seed)``
    of a session opened on ``source`` with default arguments, so an accepted program's
    specs come from its acceptance run instead of a second sandbox session. Everything
    else is the wrapped runtime's (sessions are unwrapped before batch calls)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.source: str | None = None
        self.seen: dict[Any, str] = {}

    def open(self, source: str, *, kwargs: dict[str, Any] | None = None, filename: str = "<env>") -> Any:
        session = self.inner.open(source, kwargs=kwargs, filename=filename)
        return _RecordedSession(session, self) if source == self.source and not kwargs else session

    def note(self, seed: Any, tools: Any) -> None:
        if seed not in self.seen:
            self.seen[seed] = json.dumps(tools or [], sort_keys=True)

    def step_batch(self, calls: Any) -> Any:
        return self.inner.step_batch([(_unwrap(s), a) for s, a in calls])

    def reset_batch(self, calls: Any) -> Any:
        out = self.inner.reset_batch([(_unwrap(s), seed) for s, seed in calls])
        for (session, seed), result in zip(calls, out):
            if isinstance(session, _RecordedSession) and not isinstance(result, SpadeError):
                self.note(seed, _unwrap(session).tools)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _RecordedSession:
    def __init__(self, inner: Any, recorder: _SpecRecorder) -> None:
        self._inner, self._recorder = inner, recorder

    def reset(self, seed: Any = None) -> Any:
        out = self._inner.reset(seed)
        self._recorder.note(seed, self._inner.tools)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _unwrap(session: Any) -> Any:
    return session._inner if isinstance(session, _RecordedSession) else session


def judge_source(pipeline: AcceptancePipeline, source: str, filename: str) -> dict[str, Any]:
    """One program's verdict (see the module docstring); never raises for the program.
    With a pipeline made by :func:`pipeline_for_pool`, an accepted program's tool specs
    are those seen during acceptance (seeds 0-2 after reset); otherwise they are read in
    a second session."""
    recorder = pipeline.runtime if isinstance(pipeline.runtime, _SpecRecorder) else None
    if recorder is not None:
        recorder.source, recorder.seen = source, {}
    try:
        report = pipeline.run(source, filename)
    finally:
        if recorder is not None:
            recorder.source = None
    out: dict[str, Any] = {
        "accepted": bool(report.accepted), "rejected_at": report.rejected_at,
        "stages": [s.to_json() for s in report.stages], "verified": bool(getattr(report, "verified", True)),
        "solution_form": int(getattr(report, "solution_form", 0) or 0), "seconds": round(report.seconds, 4),
    }
    if report.accepted:
        from spade_envs.games import is_multiplayer_source
        from spade_envs.registry.toolspecs import SPEC_SEEDS, collect_tool_specs

        if is_multiplayer_source(source):
            out["tool_specs_seeds"] = [[] for _ in SPEC_SEEDS]
        elif recorder is not None:
            if not all(seed in recorder.seen for seed in SPEC_SEEDS):  # acceptance did not reset them all
                recorder.source = source
                try:
                    collect_tool_specs(source, recorder, filename=filename)
                finally:
                    recorder.source = None
            if all(seed in recorder.seen for seed in SPEC_SEEDS):
                out["tool_specs_seeds"] = [json.loads(recorder.seen[seed]) for seed in SPEC_SEEDS]
    return out


class RecordedSpecs:
    """A runtime for the registry's write path (:func:`spade_envs.registry.write.register_accepted_many`,
    which measures tool specs by opening the program and resetting it on seeds 0-2) that
    answers with the specs the judging sandbox saw for exactly this source (a result's
    ``tool_specs_seeds``), so an accepted program is not opened a second time. A source it
    holds no measurement for is measured for real, in the write path's own sandbox."""

    def __init__(self) -> None:
        self._by_sha: dict[str, list[Any]] = {}

    def add(self, source: str, result: dict[str, Any]) -> None:
        from spade_envs.program import source_sha256

        seeds = result.get("tool_specs_seeds")
        if isinstance(seeds, list):
            self._by_sha[source_sha256(source)] = seeds

    def open(self, source: str, *, kwargs: dict[str, Any] | None = None, filename: str = "<env>") -> Any:
        from spade_envs.program import source_sha256
        from spade_envs.registry.toolspecs import SPEC_SEEDS
        from spade_envs.registry.write import measuring_runtime

        seeds = self._by_sha.get(source_sha256(source))
        if seeds is None or kwargs:
            return measuring_runtime().open(source, kwargs=kwargs, filename=filename)
        return _SpecReplay(dict(zip(SPEC_SEEDS, seeds)))


class _SpecReplay:
    """A session that only replays the tool specs measured per seed (see :class:`RecordedSpecs`)."""

    def __init__(self, by_seed: dict[Any, Any]) -> None:
        self._by_seed = by_seed
        self.tools: list[dict[str, Any]] = []

    def reset(self, seed: Any = None) -> tuple[str, dict]:
        if seed not in self._by_seed:
            raise SpadeError(f"no tool specs were measured for seed {seed}")
        self.tools = list(self._by_seed[seed])
        return "", {}

    def close(self) -> None:
        pass


def pipeline_for_pool(step_deadline_s: float = 2.0) -> AcceptancePipeline:
    """The pipeline a judging process uses: a fresh sandbox of its own (not the
    process-wide one), wrapped to note tool specs during acceptance."""
    from spade_envs.sandbox import SandboxRuntime

    sandbox = SandboxRuntime(step_timeout_s=float(step_deadline_s), open_timeout_s=max(10.0, 5 * float(step_deadline_s)))
    return AcceptancePipeline(AcceptanceConfig(step_deadline_s=step_deadline_s), runtime=_SpecRecorder(sandbox))


def _init(step_deadline_s: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _PIPELINE, _INIT_ERROR
    try:
        # every core runs a judging process: waiting on a sandbox worker blocks in poll at
        # once instead of spinning first (spinning took the CPU from the other processes'
        # workers: ~25 -> ~10 ms of host CPU per program and +30% programs/s measured on
        # a loaded 2-core machine; deadlines are unchanged)
        from spade_envs.sandbox import pool as sandbox_pool

        sandbox_pool.SPIN_S = 0.0
        pipeline = pipeline_for_pool(step_deadline_s)
        # a known-good program first: a sandbox that cannot judge at all must stop the
        # import, not reject (and journal) every file with the same infrastructure error
        from .pool_samples import sample_program

        check = judge_source(pipeline, sample_program("beacons", 0), "<health check>")
        if not check["accepted"]:
            failed = next((st for st in check["stages"] if not st["ok"]), {"name": "?", "detail": ""})
            raise JudgeUnavailable(f"the sandbox rejects a known-good program at {failed['name']}: {failed['detail']}")
        _PIPELINE = pipeline
    except Exception as exc:  # reported by every job, as one clear error in the caller
        _INIT_ERROR = str(exc) if isinstance(exc, JudgeUnavailable) else f"{type(exc).__name__}: {exc}"


def _job(filename: str, source: str) -> dict[str, Any]:
    if _PIPELINE is None:
        raise JudgeUnavailable(f"the judging processes could not start ({_INIT_ERROR})")
    try:
        return judge_source(_PIPELINE, source, filename)
    except UntrustedCodeError as exc:  # no sandbox: not a verdict on the file
        raise JudgeUnavailable(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - a bug this program triggers: its verdict names it
        return _internal(exc)


def _ready() -> None:
    """A job that only makes its process start (see :meth:`ParallelJudge.start`)."""


def _internal(exc: BaseException) -> dict[str, Any]:
    return {"accepted": False, "rejected_at": "internal", "verified": False, "solution_form": 0,
            "stages": [{"name": "internal", "ok": False, "detail": f"{type(exc).__name__}: {exc}", "seconds": 0.0}]}


def default_jobs() -> int:
    """One judging process per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class ParallelJudge:
    """``jobs`` judging processes; use as a context manager (see the module docstring)."""

    def __init__(self, jobs: int | None = None, *, step_deadline_s: float = 2.0) -> None:
        self.jobs = max(1, int(jobs or default_jobs()))
        self._step_deadline_s = float(step_deadline_s)
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> "ParallelJudge":
        self._executor = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init, initargs=(self._step_deadline_s,))
        return self

    def start(self) -> None:
        """Start every judging process now (imports, sandbox, health check), so that work
        the caller does before its first :meth:`results` overlaps their start-up."""
        if self._executor is None:
            raise RuntimeError("use ParallelJudge as a context manager")
        for _ in range(self.jobs):
            self._executor.submit(_ready)

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if exc_type is not None:  # interrupted: stop now, not after the jobs in flight
            procs = list((getattr(executor, "_processes", None) or {}).values())
            for proc in procs:
                try:
                    proc.kill()
                except (OSError, ValueError):
                    pass
            executor.shutdown(wait=False, cancel_futures=True)
            for proc in procs:  # reap them (no zombies left behind)
                try:
                    proc.join(timeout=2.0)
                except (OSError, ValueError, AssertionError):
                    pass
        else:
            executor.shutdown(wait=True)

    def results(self, items: Iterable[tuple[Any, str, str]]) -> Iterator[tuple[Any, dict[str, Any]]]:
        """``(key, result)`` for every ``(key, file name, source)`` item, as they finish."""
        if self._executor is None:
            raise RuntimeError("use ParallelJudge as a context manager")
        pending: dict[Future, Any] = {}
        source_iter = iter(items)
        exhausted = False
        while True:
            while not exhausted and len(pending) < self.jobs * IN_FLIGHT_PER_JOB:
                item = next(source_iter, None)
                if item is None:
                    exhausted = True
                    break
                key, name, source = item
                pending[self._executor.submit(_job, name, source)] = key
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                key = pending.pop(fut)
                try:
                    result = fut.result()
                except JudgeUnavailable as exc:
                    raise JudgeUnavailable(f"{exc}; nothing was recorded for the files not judged yet") from None
                except BrokenProcessPool:
                    raise JudgeUnavailable("a judging process died (out of memory?); run the same command again: "
                                           "what was judged so far is kept") from None
                except Exception as exc:  # noqa: BLE001 - e.g. a result that could not be sent back
                    raise JudgeUnavailable(f"judging failed: {type(exc).__name__}: {exc}") from None
                yield key, result
