"""The acceptance pipeline: is a candidate source a valid, honest environment?

DESIGN.md section 6. :class:`AcceptancePipeline` runs the stages of
:data:`~.single_player_stages.SINGLE_PLAYER_CHECKS` in order and stops at the first failure:

``size_syntax``
    UTF-8 text within :data:`~spade_envs.program.MAX_SOURCE_BYTES` that parses.
``compile``
    compiles to bytecode, then the runtime (the sandbox by default) compiles, executes the
    module and constructs the environment class with ``config.env_kwargs``.
``interface``
    a public ``*Env`` class (the first, with a note when there are several, as SPADE's
    loader picks it) with ``reset``/``step``; nothing is stepped before a reset (a fresh
    instance need not be playable); ``reset`` returns ``(str, dict)``, ``step`` a 5-tuple
    of the right types; a ``hint()`` that needs arguments or fails is no hint (a note).
``tool_specs``
    every spec is a valid OpenAI function definition backed by a ``tool_<name>`` method;
    a solution that calls tools needs declared tools.
``smoke``
    ``reset`` with every seed of ``config.seeds`` and ``None``, each followed by junk
    actions; no call over ``config.step_deadline_s``; non-finite floats in ``info`` are
    replaced (a note), a non-finite reward fails.
``determinism``
    resetting the SAME instance twice with one seed replays the same episode: every seed of
    ``config.seeds`` gives again the first observation and solution it gave in smoke, and
    the first ``config.determinism_seeds`` seeds replay the solution twice with the same
    observation, reward and end flags at every step.
``seed_variety``
    different seeds, different tasks: at least ``config.min_distinct_solutions`` distinct
    solutions over ``seeds + variety_seeds`` when the solution replays to a win, else
    (no ``solution()``, or a text no reader replays, such as prose) as many distinct
    first observations and public states.
``solution_replay``
    the readings of ``solution()`` (:func:`spade_envs.solutions.solution_readings`,
    primary first) are replayed from fresh episodes until one wins on every seed of
    ``config.seeds``; a win is SPADE's: the episode terminates with a reward > 0 (or
    reaches ``config.win_reward``). When none wins, the program is accepted *unverified*
    (SPADE never replays ``solution()``) and the verdict names the readers tried; so is a
    program without ``solution()`` ("no reference solution: solvability unverified").
    ``report.verified`` and the verdict's ``verified`` flag say which.
``garbage``
    no probe of :func:`~spade_envs.designer.acceptance.probes.garbage_probes`, each from a fresh
    episode, reaches ``win_reward`` or terminates with the reward the solution's own win
    had (a time-shaped 0.64); a probe equal to the episode's answer is skipped.
``no_leak``
    no specific answer string (:mod:`~spade_envs.designer.acceptance.leak`) appears in a reset
    observation or in an observation of a garbage play that did not end the episode
    (revealing the answer once the episode is over is allowed; an answer listed among
    several options shown together is not a leak); skipped when unverified.
``novelty``
    ``config.novelty_check(source) -> (ok, detail)``; passes with "no memory given" when
    none is configured.

The checks are stage objects in ordered lists: :mod:`.single_player_stages` (on a
:class:`~.context.SingleContext`) and, for multi-player games (``spade_envs.games``),
:mod:`.game_stages` (on a :class:`~.context.GameContext`); :mod:`.runner` runs a list;
the probes live in :mod:`.probes`, the leak rule in :mod:`.leak`, the settings in
:mod:`.config`. :class:`StagePipeline` is one pass of the stage list that fits the
source; :class:`AcceptancePipeline` wraps it in :class:`~.parameters.ParameterSampling`
(programs with ``PARAMETERS``). All environment code runs in ONE session per candidate, through a runtime
(:func:`spade_envs.trust.get_runtime` unless one is given). Errors of the program
(exceptions, timeouts, crashes, wrong types) become a failed verdict naming the reason;
:meth:`AcceptancePipeline.run` never raises because of the candidate. The budget
``config.candidate_deadline_s`` is enforced between stages AND inside them (plays run in
batches checked against the deadline), so a slow program stops near its budget.
"""

import threading
from collections.abc import Iterable
from typing import Any

from spade_envs.games import is_multiplayer_source
from spade_envs.runtime import EnvRuntime
from spade_envs.trust import get_runtime

from .config import AcceptanceConfig, NoveltyCheck
from .context import GameContext, SingleContext
from .game_stages import GAME_CHECKS
from .parameters import ParameterSampling
from .runner import run_stages, sandbox_runtime
from .single_player_stages import SINGLE_PLAYER_CHECKS
from .verdicts import AcceptanceReport

__all__ = ["AcceptanceConfig", "AcceptancePipeline", "NoveltyCheck", "StagePipeline", "sandbox_runtime",
           "validate_source"]


class StagePipeline:
    """One pass of the stages on a source: the single-player list, or the game list for a
    multi-player game (both reports have the same shape). ``runtime``: where environment
    code runs; default ``get_runtime(trust_remote_code=...)``, i.e. the sandbox unless
    ``trust_remote_code=True``. Reused across candidates."""

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

    def run(self, source: Any, filename: str = "<env>", config: AcceptanceConfig | None = None) -> AcceptanceReport:
        """Every stage of the fitting list on ``source`` under ``config`` (default: this
        pipeline's); the report lists the stages that ran. Never raises because of the
        candidate (nor for a missing sandbox: a failed verdict says so)."""
        config = config or self.config
        report = AcceptanceReport(filename=filename)
        if is_multiplayer_source(source):
            report.multiplayer = True
            return run_stages(GAME_CHECKS, GameContext(source, filename, config, lambda: self.runtime), report)
        return run_stages(SINGLE_PLAYER_CHECKS, SingleContext(source, filename, config, lambda: self.runtime), report)


class AcceptancePipeline:
    """Runs the acceptance stages on candidate sources (see the module docstring): a
    :class:`StagePipeline` wrapped in :class:`~.parameters.ParameterSampling`."""

    def __init__(
        self,
        config: AcceptanceConfig | None = None,
        *,
        runtime: EnvRuntime | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        self.stages = StagePipeline(config, runtime=runtime, trust_remote_code=trust_remote_code)
        self._sampling = ParameterSampling(self.stages)

    @property
    def config(self) -> AcceptanceConfig:
        return self.stages.config

    @property
    def runtime(self) -> EnvRuntime:
        """The runtime in use (:attr:`StagePipeline.runtime`)."""
        return self.stages.runtime

    def run(self, source: Any, filename: str = "<env>") -> AcceptanceReport:
        """Run every stage on ``source``; a source with ``PARAMETERS`` is judged at its
        defaults and at sampled valid points (:mod:`.parameters`)."""
        return self._sampling.run(source, filename)

    def run_many(self, sources: Iterable[tuple[str, Any]], parallel: int = 2) -> list[AcceptanceReport]:
        """Reports for ``(filename, source)`` pairs, in order. With the default sandbox and
        ``parallel`` > 1, candidates run concurrently in that many sandboxes (one worker
        each), so every core checks a candidate; a given runtime is used sequentially."""
        items = list(sources)
        if parallel <= 1 or self.stages._runtime is not None or self.stages._trust or len(items) < 2:
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
