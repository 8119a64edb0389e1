"""The acceptance pipeline: is a candidate source a valid, honest environment?

DESIGN.md section 6. :class:`AcceptancePipeline` runs the stages of
:data:`~spade_envs.designer.acceptance.verdicts.STAGES` in order and stops at the first failure:

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

The checks themselves live in :mod:`.stages`, the probes in :mod:`.probes`, the leak rule
in :mod:`.leak`; :mod:`.stage_runner` runs them (and holds :class:`AcceptanceConfig`).
Multi-player games (``spade_envs.games``) run the stages of :data:`~.verdicts.GAME_STAGES`
(:mod:`.game_stages`) on the same runner instead. All environment code runs in ONE session per candidate, through a runtime
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

from .game_stages import GameAcceptance
from .stage_runner import AcceptanceConfig, NoveltyCheck, sandbox_runtime
from .stages import StageChecks
from .verdicts import AcceptanceReport

__all__ = ["AcceptanceConfig", "AcceptancePipeline", "NoveltyCheck", "sandbox_runtime", "validate_source"]


class AcceptancePipeline(StageChecks):
    """Runs the acceptance stages on candidate sources (see the module docstring).

    ``runtime``: where environment code runs; default ``get_runtime(trust_remote_code=...)``,
    i.e. the sandbox unless ``trust_remote_code=True``. Reused across candidates.
    Multi-player games take the game stages (:class:`~.game_stages.GameAcceptance`, on the
    same runner, config and runtime) and return a report of the same shape.
    """

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
        """One pass of the stages at one point; games take their own stages."""
        if is_multiplayer_source(source):
            return GameAcceptance(self.config, runtime=self._runtime, trust_remote_code=self._trust).run(source, filename)
        return super().run(source, filename)


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
