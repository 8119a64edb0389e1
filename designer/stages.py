"""The single-player stage checks of the acceptance pipeline (see :mod:`.acceptance`).

:class:`StageChecks` holds one ``_stage_<name>`` method per stage of
:data:`~spade_envs.designer.verdicts.STAGES` (``size_syntax`` and ``novelty`` come from
:class:`~spade_envs.designer.stage_runner.StageRunner`, which also runs them); each
returns the verdict's detail or raises :class:`Reject` (or a
:class:`~spade_envs.errors.SpadeError`) with the reason. They share one :class:`Context`
per candidate: the live session and what earlier stages learnt (first observations,
solutions, replays, garbage observations).
"""

from __future__ import annotations

import time
from typing import Any

from spade_envs.actions import parse_tool_calls, solution_to_actions
from spade_envs.errors import EnvExecutionError, EnvProgramError
from spade_envs.program import inspect_program

from .leak import answer_candidates, find_leak, secrets
from .probes import Episode, Probe, garbage_probes, normalize_answer, play, smoke_actions
from .stage_runner import Context, Reject, StageRunner
from .verdicts import STAGES

__all__ = ["FATAL_KINDS", "Context", "Reject", "StageChecks"]

#: error kinds after which a session cannot be trusted to answer again
FATAL_KINDS = frozenset({"timeout", "crash", "memory", "killed", "security", "output"})


class StageChecks(StageRunner):
    """The single-player stages, run by :class:`StageRunner` in :data:`STAGES` order."""

    stage_names = STAGES

    def _play(self, ctx: Context, seed: Any, actions: list[str] | tuple[str, ...], *, want_solution: bool = False) -> Episode:
        assert ctx.session is not None
        episode = play(self.runtime, ctx.session, seed, actions, want_solution=want_solution)
        self._track(ctx, episode.max_call_s, f"a call with seed {seed}")
        return episode

    def _solution(self, ctx: Context, seed: Any) -> str:
        if seed not in ctx.solutions:
            obs, _ = ctx.session.reset(seed)  # type: ignore[union-attr]
            ctx.resets.setdefault(seed, obs)
            ctx.solutions[seed] = ctx.session.solution()  # type: ignore[union-attr]
        return ctx.solutions[seed]

    # -- stages ------------------------------------------------------------------------
    def _stage_compile(self, ctx: Context) -> str:
        try:
            compile(ctx.tree, ctx.filename, "exec")
        except (SyntaxError, ValueError) as exc:
            raise Reject(f"does not compile: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})") from None
        try:
            info = inspect_program(ctx.source, ctx.filename)
        except EnvProgramError as exc:
            ctx.pending[exc.stage if exc.stage in STAGES else "interface"] = str(exc)
            return "compiles to bytecode"
        ctx.class_name = info.class_name
        t0 = time.perf_counter()
        try:
            ctx.session = self.runtime.open(ctx.source, kwargs=dict(self.config.env_kwargs), filename=ctx.filename)
        except EnvExecutionError as exc:
            if exc.kind == "error" and "module body" not in str(exc):
                ctx.pending["interface"] = f"constructing {info.class_name}() failed: {exc}"
                return "compiles; module executes"
            raise
        except EnvProgramError as exc:
            if exc.stage not in STAGES or STAGES.index(exc.stage) <= STAGES.index("compile"):
                raise Reject(str(exc)) from None
            ctx.pending[exc.stage] = str(exc)  # e.g. invalid tool specs found while constructing
            return "compiled; module executes and the class constructs"
        return f"compiled; {info.class_name}() constructed in {1000 * (time.perf_counter() - t0):.1f} ms"

    def _stage_interface(self, ctx: Context) -> str:
        sess = ctx.session
        assert sess is not None
        # the fresh instance, stepped without reset; an execution error is judged in smoke
        try:
            t0 = time.perf_counter()
            sess.step(smoke_actions()[0])
            self._track(ctx, time.perf_counter() - t0, "step() on a fresh instance")
        except EnvProgramError as exc:
            raise Reject(f"{exc} (stepping a freshly constructed instance)") from None
        except EnvExecutionError as exc:
            ctx.fresh_error = exc
            if exc.kind in FATAL_KINDS:  # the session may be gone: start a new one
                self._close(ctx)
                ctx.session = sess = self.runtime.open(
                    ctx.source, kwargs=dict(self.config.env_kwargs), filename=ctx.filename
                )
        # hint() before the play when the instance is usable (a hung junk step kills the
        # session), after the reset when the fresh instance was not
        hint = sess.hint() if ctx.fresh_error is None else None
        seed = self.config.seeds[0]
        episode = self._smoke_play(ctx, seed, 0)  # doubles as the smoke play of this seed
        if ctx.fresh_error is not None:
            hint = sess.hint()
        if isinstance(episode.error, EnvProgramError):
            raise Reject(f"{episode.error} (after reset(seed={seed}), action {_short(episode.error_action)})")
        if not episode.obs0.strip():
            raise Reject(f"reset(seed={seed}) returned an empty observation")
        solution = episode.solution or ""
        if not solution.strip():
            raise Reject(f"solution() returned an empty string (seed {seed}); it must return the winning action text")
        return (
            f"{ctx.class_name}: reset -> (str, dict), step -> (str, float, bool, bool, dict), "
            f"solution() -> {len(solution_to_actions(solution))} action(s)"
            + (", hint() -> str" if hint is not None else "")
        )

    def _smoke_play(self, ctx: Context, seed: Any, index: int) -> Episode:
        """Reset with ``seed`` and step the junk actions (rotated by ``index``)."""
        junk = smoke_actions()
        actions = junk[index % len(junk) :] + junk[: index % len(junk)]
        episode = self._play(ctx, seed, actions, want_solution=True)
        ctx.smoke_plays.append(episode)
        tried = len(episode.steps) + (episode.error is not None)
        ctx.junk_tried.update(actions[:tried])
        if seed is not None:
            ctx.resets.setdefault(seed, episode.obs0)
            ctx.solutions.setdefault(seed, episode.solution or "")
        return episode

    def _stage_tool_specs(self, ctx: Context) -> str:
        tools = ctx.session.tools  # type: ignore[union-attr]
        names = [t["function"]["name"] for t in tools]
        solution = ctx.solutions[self.config.seeds[0]]
        called = {c.name for c in parse_tool_calls(solution) if not c.error}
        if called and not tools:
            raise Reject(f"solution() calls tools ({', '.join(sorted(called))}) but get_tools() declares none")
        undeclared = sorted(called - set(names))
        if undeclared:
            raise Reject(f"solution() calls undeclared tool(s): {', '.join(undeclared)}")
        if not tools:
            return "no tools (text-only environment)"
        return f"{len(tools)} valid tool spec(s): {', '.join(names)}"

    def _stage_smoke(self, ctx: Context) -> str:
        if ctx.fresh_error is not None:
            raise Reject(
                f"a freshly constructed instance is not playable: step() without reset() failed: "
                f"{_err(ctx.fresh_error)} (__init__ must call reset())"
            )
        seeds = list(self.config.seeds) + [None]
        for i, seed in enumerate(seeds[1:], start=1):
            self._smoke_play(ctx, seed, i)
        for action in [a for a in smoke_actions() if a not in ctx.junk_tried]:
            self._play_junk_alone(ctx, seeds[0], action)  # episodes ended before reaching it
        n_steps = 0
        for episode in ctx.smoke_plays:
            if episode.error is not None:
                raise Reject(f"step({_short(episode.error_action)}) after reset(seed={episode.seed}) failed: {_err(episode.error)}")
            n_steps += len(episode.steps)
            if not (episode.solution or "").strip():
                raise Reject(f"solution() is empty for seed {episode.seed}")
            n_actions = len(solution_to_actions(episode.solution or ""))
            if n_actions > self.config.max_solution_actions:
                raise Reject(f"solution() has {n_actions} actions for seed {episode.seed} (limit {self.config.max_solution_actions})")
        return (
            f"{len(ctx.smoke_plays)} resets, {n_steps} junk steps survived; slowest call "
            f"{1000 * ctx.max_call_s:.1f} ms (deadline {self.config.step_deadline_s:g} s)"
        )

    def _play_junk_alone(self, ctx: Context, seed: Any, action: str) -> None:
        episode = self._play(ctx, seed, [action], want_solution=True)
        ctx.smoke_plays.append(episode)

    def _stage_determinism(self, ctx: Context) -> str:
        twice = list(self.config.seeds)[: max(1, self.config.determinism_seeds)]
        for seed in self.config.seeds:
            actions = solution_to_actions(ctx.solutions[seed])
            first = self._play(ctx, seed, actions, want_solution=True)
            for label, a, b in (
                ("first observation", ctx.resets[seed], first.obs0),
                ("solution()", ctx.solutions[seed], first.solution),
            ):
                if a != b:
                    raise Reject(f"reset(seed={seed}) twice on one instance gave a different {label}: {_diff(a, b)}")
            ctx.replays[seed] = first
            if seed not in twice:
                continue
            second = self._play(ctx, seed, actions, want_solution=True)
            if (first.obs0, first.solution) != (second.obs0, second.solution):
                raise Reject(f"reset(seed={seed}) twice on one instance gave a different episode: {_diff(first.obs0, second.obs0)}")
            for i, (x, y) in enumerate(zip(first.steps, second.steps)):
                if x != y:
                    what = "observation" if x[0] != y[0] else "reward/end flags"
                    raise Reject(f"replaying seed {seed}: step {i + 1} gave a different {what}: {_diff(x, y)}")
            if len(first.steps) != len(second.steps) or repr(first.error) != repr(second.error):
                raise Reject(f"replaying seed {seed} twice ended differently ({len(first.steps)} vs {len(second.steps)} steps)")
        return (
            f"every seed of {list(self.config.seeds)} replays its first observation and solution; "
            f"seed(s) {twice} replay every step identically"
        )

    def _stage_seed_variety(self, ctx: Context) -> str:
        seeds = list(self.config.seeds) + list(self.config.variety_seeds)
        solutions = [normalize_answer(self._solution(ctx, s)) for s in seeds]
        distinct = len(set(solutions))
        if distinct < self.config.min_distinct_solutions:
            raise Reject(
                f"the same task for every seed: {distinct} distinct solution(s) over {len(seeds)} seeds "
                f"(need {self.config.min_distinct_solutions}); use the seed to generate the task"
            )
        return f"{distinct} distinct solutions over {len(seeds)} seeds"

    def _stage_solution_replay(self, ctx: Context) -> str:
        rewards = []
        for seed in self.config.seeds:
            episode = ctx.replays[seed]
            actions = solution_to_actions(ctx.solutions[seed])
            if episode.error is not None:
                raise Reject(f"replaying the solution of seed {seed}: step({_short(episode.error_action)}) failed: {_err(episode.error)}")
            if episode.last_reward < self.config.win_reward:
                short = episode.ended and len(episode.steps) < len(actions)
                ended = f"episode ended after {len(episode.steps)} of {len(actions)} actions" if short else f"{len(episode.steps)} actions played"
                raise Reject(
                    f"the solution of seed {seed} does not win: final reward {episode.last_reward:g} < "
                    f"{self.config.win_reward:g} ({ended}; solution {_short(ctx.solutions[seed])})"
                )
            rewards.append(episode.last_reward)
        return f"solution wins on seeds {list(self.config.seeds)} (final rewards {rewards})"

    def _stage_garbage(self, ctx: Context) -> str:
        seeds = list(self.config.seeds)
        first_actions = solution_to_actions(ctx.solutions[seeds[0]])
        probes = garbage_probes(ctx.session.tools, first_actions, self.config.max_garbage_probes)  # type: ignore[union-attr]
        played = skipped = 0
        for i, probe in enumerate(probes):
            seed = self._seed_for(ctx, probe, seeds, i)
            if seed is _NO_SEED:
                skipped += 1
                continue
            episode = self._play(ctx, seed, probe.actions)
            played += 1
            if episode.error is not None:
                raise Reject(f"probe '{probe.name}' (seed {seed}): step({_short(episode.error_action)}) failed: {_err(episode.error)}")
            if episode.best_reward >= self.config.win_reward:
                raise Reject(
                    f"garbage wins: probe '{probe.name}' got reward {episode.best_reward:g} with "
                    f"{_short(probe.actions[-1])} (seed {seed}); check the answer exactly"
                )
            ctx.garbage_obs.extend((seed, s[0]) for s in episode.steps if not (s[2] or s[3]))
        note = f", {skipped} skipped (equal to the answer)" if skipped else ""
        return f"{played} garbage probes, none won{note}"

    def _seed_for(self, ctx: Context, probe: Probe, seeds: list[int], i: int) -> Any:
        probe_answers = probe.answers()
        for k in range(len(seeds)):
            seed = seeds[(i + k) % len(seeds)]
            actions = solution_to_actions(ctx.solutions[seed])
            truth = {normalize_answer(c) for c in answer_candidates(ctx.solutions[seed])}
            if tuple(actions) == probe.actions or (probe_answers & truth):
                continue
            return seed
        return _NO_SEED

    def _stage_no_leak(self, ctx: Context) -> str:
        cfg = self.config
        checked = 0
        for seed in cfg.seeds:
            solution = ctx.solutions[seed]
            others = [(ctx.resets[s], sol) for s, sol in ctx.solutions.items() if s != seed and s in ctx.resets]
            observations = [ctx.resets[seed]] + [o for s, o in ctx.garbage_obs if s == seed]
            leak = find_leak(solution, observations, others, min_digits=cfg.leak_min_digits, min_chars=cfg.leak_min_chars)
            if leak is not None:
                raise Reject(f"the observation leaks the answer ({_short(leak[0])}, seed {seed}): ...{leak[1]}...")
            checked += len(secrets(solution, cfg.leak_min_digits, cfg.leak_min_chars))
        if not checked:
            return "answers too short or generic to check (see the specificity rule)"
        return f"{checked} secret(s) absent from reset and garbage observations"


_NO_SEED = object()


def _short(text: Any, limit: int = 80) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 5] + "...'"


def _err(exc: BaseException | None) -> str:
    """``kind: message`` for execution errors (``timeout: step() exceeded ...``)."""
    kind = getattr(exc, "kind", None)
    return f"{kind}: {exc}" if isinstance(exc, EnvExecutionError) and kind and not str(exc).startswith(kind) else str(exc)


def _diff(a: Any, b: Any) -> str:
    return f"{_short(a, 60)} vs {_short(b, 60)}"
