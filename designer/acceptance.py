"""The acceptance pipeline: is a candidate source a valid, honest environment?

DESIGN.md section 6. :class:`AcceptancePipeline` runs the stages of
:data:`~spade_envs.designer.verdicts.STAGES` in order and stops at the first failure:

``size_syntax``
    UTF-8 text within :data:`~spade_envs.program.MAX_SOURCE_BYTES` that parses.
``compile``
    compiles to bytecode, then the runtime (the sandbox by default) compiles, executes the
    module and constructs the environment class with ``config.env_kwargs``.
``interface``
    one public ``*Env`` class with ``reset``/``step``/``solution``; a freshly constructed
    instance is stepped WITHOUT a reset (its failure is judged in ``smoke``); ``reset``
    returns ``(str, dict)``, ``step`` a 5-tuple of the right types, ``solution()`` a
    non-empty str, ``hint()`` a str when defined.
``tool_specs``
    every spec is a valid OpenAI function definition backed by a ``tool_<name>`` method;
    a solution that calls tools needs declared tools.
``smoke``
    the fresh instance was playable; ``reset`` with every seed of ``config.seeds`` and
    ``None``, each followed by junk actions; no call over ``config.step_deadline_s``.
``determinism``
    resetting the SAME instance twice with one seed replays the same episode: every seed of
    ``config.seeds`` gives again the first observation and solution it gave in smoke, and
    the first ``config.determinism_seeds`` seeds replay the solution twice with the same
    observation, reward and end flags at every step.
``seed_variety``
    different seeds, different tasks, judged on ``solution()``: at least
    ``config.min_distinct_solutions`` distinct solutions over ``seeds + variety_seeds``.
``solution_replay``
    replaying ``solution_to_actions(solution())`` from a fresh episode ends with a reward
    >= ``config.win_reward`` for every seed of ``config.seeds``.
``garbage``
    no probe of :func:`~spade_envs.designer.probes.garbage_probes`, each from a fresh
    episode, reaches ``win_reward`` (a probe equal to the episode's answer is skipped).
``no_leak``
    no specific answer string (:mod:`~spade_envs.designer.leak`) appears in a reset
    observation or in an observation of a garbage play that did not end the episode
    (revealing the answer once the episode is over is allowed).
``novelty``
    ``config.novelty_check(source) -> (ok, detail)``; passes with "no memory given" when
    none is configured.

The checks themselves live in :mod:`.stages`, the probes in :mod:`.probes`, the leak rule
in :mod:`.leak`. All environment code runs in ONE session per candidate, through a runtime
(:func:`spade_envs.runtime.get_runtime` unless one is given). Errors of the program
(exceptions, timeouts, crashes, wrong types) become a failed verdict naming the reason;
:meth:`AcceptancePipeline.run` never raises because of the candidate.
"""

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import EnvExecutionError, EnvProgramError, SpadeError
from spade_envs.program import source_sha256
from spade_envs.runtime import EnvRuntime, get_runtime

from .stages import Context, Reject, StageChecks
from .verdicts import STAGES, AcceptanceReport, StageVerdict

NoveltyCheck = Callable[[str], "tuple[bool, str]"]


@dataclass(frozen=True)
class AcceptanceConfig:
    """Knobs of the pipeline; the defaults are what ``spade validate`` uses.

    - ``seeds``: smoke, solution replay and leak checks run on each (default 3 seeds);
    - ``determinism_seeds``: how many of ``seeds`` are replayed twice step by step
      (default 1; every seed's first observation and solution are compared anyway);
    - ``variety_seeds``: extra seeds whose ``solution()`` joins the variety check (3);
    - ``min_distinct_solutions``: distinct solutions needed over all those seeds (2);
    - ``max_garbage_probes``: cap on garbage probes, 0 = all (13 to 16; default 0);
    - ``step_deadline_s``: wall-clock limit of one call (default 2 s; the sandbox
      enforces it, in-process runs check it after the fact);
    - ``candidate_deadline_s``: total budget of one candidate (default 60 s);
    - ``win_reward``: reward that counts as a win (1.0);
    - ``max_solution_actions``: longest accepted solution (200 actions);
    - ``leak_min_digits`` / ``leak_min_chars``: the specificity rule of the leak check;
    - ``env_kwargs``: constructor arguments;
    - ``novelty_check``: ``source -> (ok, detail)``, e.g. the designer memory's MinHash.
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    determinism_seeds: int = 1
    variety_seeds: tuple[int, ...] = (3, 4, 5)
    min_distinct_solutions: int = 2
    max_garbage_probes: int = 0
    step_deadline_s: float = 2.0
    candidate_deadline_s: float = 60.0
    win_reward: float = 1.0
    max_solution_actions: int = 200
    leak_min_digits: int = 3
    leak_min_chars: int = 4
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    novelty_check: NoveltyCheck | None = None


class AcceptancePipeline(StageChecks):
    """Runs the acceptance stages on candidate sources (see the module docstring).

    ``runtime``: where environment code runs; default ``get_runtime(trust_remote_code=...)``,
    i.e. the sandbox unless ``trust_remote_code=True``. Reused across candidates.
    """

    def __init__(
        self,
        config: AcceptanceConfig | None = None,
        *,
        runtime: EnvRuntime | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.config = config or AcceptanceConfig()
        self._runtime = runtime
        self._trust = trust_remote_code

    @property
    def runtime(self) -> EnvRuntime:
        """The runtime in use: the one given, else in-process with ``trust_remote_code``,
        else a sandbox whose per-call deadline is ``config.step_deadline_s`` (raises
        :class:`~spade_envs.errors.UntrustedCodeError` when no sandbox is available)."""
        if self._runtime is None:
            if self._trust:
                self._runtime = get_runtime(trust_remote_code=True)
            else:
                self._runtime = sandbox_runtime(self.config.step_deadline_s)
        return self._runtime

    def run_many(self, sources: Iterable[tuple[str, Any]], parallel: int = 2) -> list[AcceptanceReport]:
        """Reports for ``(filename, source)`` pairs, in order. With the default sandbox and
        ``parallel`` > 1, candidates run concurrently in that many sandboxes (one worker
        each), so every core checks a candidate; a given runtime is used sequentially."""
        items = list(sources)
        if parallel <= 1 or self._runtime is not None or self._trust or len(items) < 2:
            return [self.run(src, name) for name, src in items]
        lanes = [
            AcceptancePipeline(self.config, runtime=sandbox_runtime(self.config.step_deadline_s, lane=i + 1))
            for i in range(parallel)
        ]
        queue = list(enumerate(items))
        out: list[AcceptanceReport | None] = [None] * len(items)
        lock = threading.Lock()

        def drain(pipeline: AcceptancePipeline) -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    index, (name, src) = queue.pop(0)
                out[index] = pipeline.run(src, name)

        threads = [threading.Thread(target=drain, args=(p,), daemon=True) for p in lanes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for r in out if r is not None]

    # -- driver ------------------------------------------------------------------------
    def run(self, source: Any, filename: str = "<env>") -> AcceptanceReport:
        """Run every stage on ``source``; a source with ``PARAMETERS`` is judged at its
        defaults and at sampled valid points (:mod:`.stage_parameters`)."""
        from .stage_parameters import check_parameters

        return check_parameters(self.config, source, filename, lambda config, src, name: AcceptancePipeline(
            config, runtime=self._runtime, trust_remote_code=self._trust)._run_once(src, name))

    def _run_once(self, source: Any, filename: str = "<env>") -> AcceptanceReport:
        """Run every stage on ``source``; the report lists the stages that ran.

        Multi-player games (``num_players`` > 1) take their own stages
        (:mod:`.acceptance_multiplayer`) and return a report of the same shape."""
        from .acceptance_multiplayer import dispatch

        game = dispatch(source, filename, self.config, self._runtime, self._trust)
        if game is not None:
            return game
        ctx = Context(source=source, filename=filename, started=time.perf_counter())
        report = AcceptanceReport(filename=filename)
        try:
            for index, name in enumerate(STAGES):
                verdict = self._run_stage(name, ctx)
                if verdict is None:  # a later stage's failure surfaced early: skip this one
                    continue
                report.stages.append(verdict)
                if not verdict.ok:
                    break
        finally:
            self._close(ctx)
            report.class_name = ctx.class_name
            report.sha256 = source_sha256(source) if isinstance(source, str) else ""
            report.seconds = time.perf_counter() - ctx.started
        return report

    def _run_stage(self, name: str, ctx: Context) -> StageVerdict | None:
        t0 = time.perf_counter()
        if name in ctx.pending:
            return StageVerdict(name, False, ctx.pending[name], 0.0)
        if ctx.session is None and ctx.pending and STAGES.index(min(ctx.pending, key=STAGES.index)) > STAGES.index(name):
            return None  # no live program to check this stage on; a later stage holds the failure
        if time.perf_counter() - ctx.started > self.config.candidate_deadline_s:
            return StageVerdict(name, False, f"candidate exceeded its {self.config.candidate_deadline_s:g} s budget", 0.0)
        try:
            ok, detail = True, getattr(self, f"_stage_{name}")(ctx)
        except Reject as exc:
            ok, detail = False, str(exc)
        except EnvProgramError as exc:
            if exc.stage in STAGES and STAGES.index(exc.stage) > STAGES.index(name):
                ctx.pending[exc.stage] = str(exc)
                return None
            ok, detail = False, str(exc)
        except EnvExecutionError as exc:
            ok, detail = False, f"{exc.kind}: {exc}"
        except SpadeError as exc:
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a runtime or pipeline bug must not take the caller down
            ok, detail = False, f"internal error while checking: {type(exc).__name__}: {exc}"
        return StageVerdict(name, ok, detail, time.perf_counter() - t0)

_SANDBOXES: dict[tuple[float, int], EnvRuntime] = {}
_SANDBOX_LOCK = threading.Lock()


def sandbox_runtime(step_deadline_s: float, lane: int = 0) -> EnvRuntime:
    """A process-wide sandbox for acceptance with this per-call deadline. ``lane`` 0 is
    the shared one (default worker count); lanes 1.. hold one worker each, for
    :meth:`AcceptancePipeline.run_many`."""
    key = (float(step_deadline_s), lane)
    with _SANDBOX_LOCK:
        runtime = _SANDBOXES.get(key)
        if runtime is None:
            try:
                from spade_envs.sandbox import SandboxRuntime
            except ImportError:
                get_runtime()  # raises UntrustedCodeError with the usual advice
                raise
            # construction compiles and runs reset(): allow more than a step, far less than
            # the runtime's default 30 s, so a hanging constructor is judged quickly
            kwargs: dict[str, Any] = {"step_timeout_s": float(step_deadline_s),
                                      "open_timeout_s": max(10.0, 5 * float(step_deadline_s))}
            if lane:
                kwargs["max_workers"] = 1
            runtime = _SANDBOXES[key] = SandboxRuntime(**kwargs)
        return runtime


def validate_source(
    source: Any,
    filename: str = "<env>",
    *,
    config: AcceptanceConfig | None = None,
    runtime: EnvRuntime | None = None,
    trust_remote_code: bool = False,
) -> AcceptanceReport:
    """One-shot acceptance of ``source`` (what ``spade validate`` and the registry call)."""
    return AcceptancePipeline(config, runtime=runtime, trust_remote_code=trust_remote_code).run(source, filename)
