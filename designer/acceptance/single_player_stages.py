"""The stages of a single-player program, in order: :data:`SINGLE_PLAYER_CHECKS`.

Each is a :class:`~.runner.StageCheck` on a :class:`~.context.SingleContext` (the rules
of each stage: :mod:`spade_envs.designer.acceptance.pipeline`); :data:`STAGES` is their
names. The solution's replay (:func:`.replay.find_win`) is shared by ``seed_variety``
and ``solution_replay``.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from spade_envs.actions import parse_tool_calls
from spade_envs.errors import EnvExecutionError, EnvProgramError, FailureKind, Stage
from spade_envs.format_spec import interface_summary
from spade_envs.program import inspect_program
from spade_envs.solutions import READER_NAMES, solution_plans, tool_use_actions
from spade_envs.tools import type_note

from .context import Reject, SingleContext
from .leak import answer_candidates, find_leak, secrets
from .probes import (SPADE_PROBE_ACTIONS, SPADE_PROBE_SEED, Probe, garbage_probes, normalize_answer, raised_in_program,
                     smoke_actions)
from .replay import FATAL_KINDS, diff_text, error_text, find_win, short_repr
from .runner import Novelty, SizeSyntax, StageCheck, compile_or_reject, later_stage
from .verdicts import NO_REFERENCE, StageVerdict

class Compile(StageCheck):
    """Compiles to bytecode; the runtime compiles, executes the module and constructs the
    class with ``config.env_kwargs``; a format problem of a later stage waits for it."""

    name = Stage.COMPILE
    settings = ("env_kwargs",)

    def check(self, ctx: SingleContext) -> str:
        compile_or_reject(ctx.tree, ctx.filename)
        order = [c.name for c in SINGLE_PLAYER_CHECKS]
        try:
            info = inspect_program(ctx.source, ctx.filename)
        except EnvProgramError as exc:
            ctx.pending[later_stage(exc, order, self.name) or Stage.INTERFACE] = str(exc)
            return "compiles to bytecode"
        ctx.class_name = info.class_name
        ctx.notes.extend(info.notes)
        ctx.defines_hint = "hint" in info.methods
        t0 = time.perf_counter()
        try:
            ctx.session = ctx.runtime.open(ctx.source, kwargs=dict(ctx.config.env_kwargs), filename=ctx.filename)
        except EnvExecutionError as exc:
            if exc.kind == FailureKind.ERROR:  # the constructor raised (a module body's errors are EnvProgramError)
                ctx.pending[Stage.INTERFACE] = f"constructing {info.class_name}() failed: {exc}"
                return "compiles; module executes"
            raise
        except EnvProgramError as exc:
            later = later_stage(exc, order, self.name)
            if later is None:
                raise Reject(str(exc)) from None
            ctx.pending[later] = str(exc)  # e.g. invalid tool specs found while constructing
            return "compiled; module executes and the class constructs"
        note = "".join(f"; note: {n}" for n in info.notes)
        return f"compiled; {info.class_name}() constructed in {1000 * (time.perf_counter() - t0):.1f} ms{note}"


class Interface(StageCheck):
    """The first smoke play: the required methods of :mod:`spade_envs.format_spec` return
    what their checks accept (``reset`` -> (str, dict), ``step`` a 5-tuple); hint() noted."""

    name = Stage.INTERFACE
    settings = ("seeds",)

    def check(self, ctx: SingleContext) -> str:
        # no step before reset: a freshly constructed instance need not be playable (every
        # runtime resets first, as SPADE's loader does); the first smoke play resets
        seed = ctx.config.seeds[0]
        episode = ctx.smoke_play(seed, 0)  # doubles as the smoke play of this seed
        hint_about = self._hint(ctx)
        if isinstance(episode.error, EnvProgramError):
            raise Reject(f"{episode.error} (after reset(seed={seed}), action {short_repr(episode.error_action)})")
        if not episode.obs0.strip():
            raise Reject(f"reset(seed={seed}) returned an empty observation")
        if ctx.no_solution:
            about = "no solution() (optional, as in SPADE)"
        else:
            about = f"solution() -> {len(ctx.actions(seed))} action(s)"
        return f"{ctx.class_name}: {interface_summary()}, {about}{hint_about}"

    @staticmethod
    def _hint(ctx: SingleContext) -> str:
        """``hint()`` of the current episode: a str, or no hint when the program has none,
        it needs arguments or it fails (as SPADE, which never calls it). A call that killed
        the session gets a new one."""
        try:
            if ctx.session.hint() is not None:  # type: ignore[union-attr]
                return ", hint() -> str"
            # sessions answer None for a hint() that needs arguments or raises
            return "; note: hint() needs arguments or failed: treated as no hint" if ctx.defines_hint else ""
        except EnvExecutionError as exc:
            if exc.kind in FATAL_KINDS:
                ctx.reopen()
            why = error_text(exc)
        except EnvProgramError as exc:
            why = str(exc)
        return f"; note: hint() failed ({why[:120]}): treated as no hint"


class ToolSpecs(StageCheck):
    """Tool specs are valid (checked on load); a solution calls only declared tools."""

    name = Stage.TOOL_SPECS
    settings = ("seeds",)

    def check(self, ctx: SingleContext) -> str:
        tools = ctx.session.tools  # type: ignore[union-attr]
        names = [t["function"]["name"] for t in tools]
        solution = ctx.solutions[ctx.config.seeds[0]]
        called = {c.name for c in parse_tool_calls(solution) if not c.error}
        if tools:
            called |= {c.name for a in tool_use_actions(solution, tools) for c in parse_tool_calls(a) if not c.error}
        if called and not tools:
            raise Reject(f"solution() calls tools ({', '.join(sorted(called))}) but get_tools() declares none")
        undeclared = sorted(called - set(names))
        if undeclared:
            raise Reject(f"solution() calls undeclared tool(s): {', '.join(undeclared)}")
        if not tools:
            return "no tools (text-only environment)"
        notes = [f"{t['function']['name']}: {type_note(t)}" for t in tools if type_note(t)]
        note = f"; note: {'; '.join(notes)} (normalised to JSON Schema)" if notes else ""
        return f"{len(tools)} valid tool spec(s): {', '.join(names)}{note}"


class Smoke(StageCheck):
    """Reset with every seed and None, junk actions after each; no call over the deadline."""

    name = Stage.SMOKE
    settings = ("seeds", "step_deadline_s", "max_solution_actions")

    def check(self, ctx: SingleContext) -> str:
        cfg = ctx.config
        seeds = list(cfg.seeds) + [None]
        for i, seed in enumerate(seeds[1:], start=1):
            ctx.smoke_play(seed, i)
        for action in [a for a in smoke_actions() if a not in ctx.junk_tried]:
            ctx.smoke_plays.append(ctx.play(seeds[0], [action], want_solution=True))  # episodes ended before it
        spade = ctx.play(SPADE_PROBE_SEED, list(SPADE_PROBE_ACTIONS))
        if spade.error is not None:
            raise Reject(f"step({short_repr(spade.error_action)}) after reset(seed={SPADE_PROBE_SEED}) failed: "
                         f"{error_text(spade.error)} (SPADE's loader steps \\boxed{{1}}, \\boxed{{test}}, "
                         "\\boxed{42} and refuses a game that raises on them)")
        wild = next((st[1] for st in spade.steps if not -10 <= st[1] <= 10), None)
        if wild is not None:
            raise Reject(f"step() returned reward {wild:g} after reset(seed={SPADE_PROBE_SEED}) on SPADE's probe actions: "
                         "SPADE's loader refuses a reward outside [-10, 10]")
        n_steps = raised = 0
        for episode in ctx.smoke_plays:
            if raised_in_program(episode.error):
                raised += 1  # SPADE plays it: ("Error: ...", -1.0, terminated), the episode lost
            elif episode.error is not None:
                raise Reject(f"step({short_repr(episode.error_action)}) after reset(seed={episode.seed}) failed: {error_text(episode.error)}")
            n_steps += len(episode.steps)
            for note in episode.notes:
                if note not in ctx.notes:
                    ctx.notes.append(note)
            if ctx.no_solution:
                continue
            n_actions = len(solution_plans(episode.solution or "", ctx.session.tools)[0])  # type: ignore[union-attr]
            if n_actions > cfg.max_solution_actions:
                raise Reject(f"solution() has {n_actions} actions for seed {episode.seed} (limit {cfg.max_solution_actions})")
        notes = "".join(f"; note: {n}" for n in ctx.notes if "non-finite" in n)
        if raised:
            notes += (f"; note: step() raised on junk in {raised} play(s): played as SPADE plays it "
                      "(Error, reward -1.0, terminated)")
        return (
            f"{len(ctx.smoke_plays)} resets, {n_steps} junk steps survived; slowest call "
            f"{1000 * ctx.max_call_s:.1f} ms (deadline {cfg.step_deadline_s:g} s){notes}"
        )


class Determinism(StageCheck):
    """Resetting the SAME instance twice with one seed replays the same episode."""

    name = Stage.DETERMINISM
    settings = ("seeds", "determinism_seeds")

    def check(self, ctx: SingleContext) -> str:
        seeds = ctx.config.seeds
        twice = list(seeds)[: max(1, ctx.config.determinism_seeds)]
        for seed in seeds:
            actions = ctx.actions(seed) or smoke_actions()[:3]  # junk when there is no solution
            first = ctx.play(seed, actions, want_solution=True)
            for label, a, b in (
                ("first observation", ctx.resets[seed], first.obs0),
                ("solution()", ctx.solutions[seed], first.solution or ""),
            ):
                if a != b:
                    raise Reject(f"reset(seed={seed}) twice on one instance gave a different {label}: {diff_text(a, b)}")
            ctx.replays[seed] = first
            if seed not in twice:
                continue
            second = ctx.play(seed, actions, want_solution=True)
            if (first.obs0, first.solution) != (second.obs0, second.solution):
                raise Reject(f"reset(seed={seed}) twice on one instance gave a different episode: {diff_text(first.obs0, second.obs0)}")
            for i, (x, y) in enumerate(zip(first.steps, second.steps)):
                if x != y:
                    what = "observation" if x[0] != y[0] else "reward/end flags"
                    raise Reject(f"replaying seed {seed}: step {i + 1} gave a different {what}: {diff_text(x, y)}")
            if len(first.steps) != len(second.steps) or repr(first.error) != repr(second.error):
                raise Reject(f"replaying seed {seed} twice ended differently ({len(first.steps)} vs {len(second.steps)} steps)")
        return (
            f"every seed of {list(seeds)} replays its first observation and solution; "
            f"seed(s) {twice} replay every step identically"
        )


class SeedVariety(StageCheck):
    """Different seeds, different tasks: judged on the solutions when they replay to a
    win, else (no solution(), or a text no reader replays, such as prose) on the tasks
    themselves (first observation and public state), never on the prose."""

    name = Stage.SEED_VARIETY
    settings = ("seeds", "variety_seeds", "min_distinct_solutions")

    def check(self, ctx: SingleContext) -> str:
        seeds = list(ctx.config.seeds) + list(ctx.config.variety_seeds)
        need = ctx.config.min_distinct_solutions
        try:
            replayable = not ctx.no_solution and find_win(ctx).form is not None
        except Reject as exc:  # the replay hung or crashed the program: solution_replay's verdict
            raise EnvProgramError(str(exc), stage=Stage.SOLUTION_REPLAY) from None
        if replayable:
            distinct = len({normalize_answer(ctx.solution(s)) for s in seeds})
            if distinct < need:
                raise Reject(
                    f"the same task for every seed: {distinct} distinct solution(s) over {len(seeds)} seeds "
                    f"(need {need}); use the seed to generate the task"
                )
            return f"{distinct} distinct solutions over {len(seeds)} seeds"
        distinct = self._distinct_tasks(ctx, seeds)
        why = "no solution() to compare" if ctx.no_solution else "solution() does not replay: not compared"
        if distinct < need:
            raise Reject(f"the same task for every seed: {distinct} distinct task(s) (first observation and state) "
                         f"over {len(seeds)} seeds ({why}); use the seed to generate the task")
        return f"{distinct} distinct tasks (first observation and state) over {len(seeds)} seeds ({why})"

    @staticmethod
    def _distinct_tasks(ctx: SingleContext, seeds: list[Any]) -> int:
        """Distinct ``(first observation, public state after reset)`` over ``seeds``."""
        keys = set()
        for seed in seeds:
            if seed not in ctx.snapshots:
                ctx.budget()
                obs, _ = ctx.session.reset(seed)  # type: ignore[union-attr]
                ctx.resets.setdefault(seed, obs)
                try:
                    state = ctx.session.snapshot()  # type: ignore[union-attr]
                except (EnvExecutionError, EnvProgramError):
                    state = None  # e.g. a __slots__ class with no _state: the observation decides
                ctx.snapshots[seed] = json.dumps(state, sort_keys=True, default=repr)
            keys.add((ctx.resets[seed], ctx.snapshots[seed]))
        return len(keys)


class SolutionReplay(StageCheck):
    """A reading of ``solution()`` wins on every seed, else the program is accepted
    *unverified* (so is one without ``solution()``); the verdict carries ``verified``."""

    name = Stage.SOLUTION_REPLAY
    settings = ("seeds", "win_reward")

    def check(self, ctx: SingleContext) -> str:
        if ctx.no_solution:
            ctx.verified = False
            return NO_REFERENCE
        outcome = find_win(ctx)
        seeds = list(ctx.config.seeds)
        if outcome.form is None:
            ctx.verified = False
            return (f"unverified: no reading of solution() replays a win on seeds {seeds} (SPADE never replays it); "
                    f"readers tried: {'; '.join(outcome.tried)}; solution {short_repr(ctx.solutions[seeds[0]])}")
        how = f" (read as {READER_NAMES[outcome.reader]})" if outcome.form else ""
        return f"solution wins on seeds {seeds}{how} (terminal rewards {outcome.rewards})"

    def verdict(self, ctx: SingleContext, verdict: StageVerdict) -> StageVerdict:
        return replace(verdict, verified=ctx.verified and not ctx.no_solution, solution_form=ctx.solution_form)


class Garbage(StageCheck):
    """No garbage probe (:func:`~.probes.garbage_probes`), each from a fresh episode, wins
    or ends with the reward the solution's own win had; a probe equal to the answer is skipped."""

    name = Stage.GARBAGE
    settings = ("seeds", "max_garbage_probes", "win_reward")

    def check(self, ctx: SingleContext) -> str:
        cfg = ctx.config
        seeds = list(cfg.seeds)
        probes = garbage_probes(ctx.session.tools, ctx.actions(seeds[0]), cfg.max_garbage_probes)  # type: ignore[union-attr]
        # a garbage win reaches what the solution's own win reached (a time-shaped 0.64)
        won = ctx.replay.rewards if ctx.replay is not None and ctx.replay.form is not None else []
        threshold = min([cfg.win_reward, *won])
        played = skipped = 0
        for i, probe in enumerate(probes):
            seed = self._seed_for(ctx, probe, seeds, i)
            if seed is _NO_SEED:
                skipped += 1
                continue
            episode = ctx.play(seed, probe.actions)
            played += 1
            if episode.error is not None and not raised_in_program(episode.error):  # a raise: a lost episode (SPADE)
                raise Reject(f"probe '{probe.name}' (seed {seed}): step({short_repr(episode.error_action)}) failed: {error_text(episode.error)}")
            ended_high = episode.ended and episode.steps[-1][2] and episode.last_reward >= threshold
            if episode.best_reward >= cfg.win_reward or ended_high:
                raise Reject(
                    f"garbage wins: probe '{probe.name}' got reward {max(episode.best_reward, episode.last_reward):g} with "
                    f"{short_repr(probe.actions[-1])} (seed {seed}); check the answer exactly"
                )
            ctx.garbage_obs.extend((seed, s[0]) for s in episode.steps if not (s[2] or s[3]))
        note = f", {skipped} skipped (equal to the answer)" if skipped else ""
        return f"{played} garbage probes, none won{note}"

    @staticmethod
    def _seed_for(ctx: SingleContext, probe: Probe, seeds: list[int], i: int) -> Any:
        probe_answers = probe.answers()
        for k in range(len(seeds)):
            seed = seeds[(i + k) % len(seeds)]
            actions = ctx.actions(seed)
            truth = {normalize_answer(c) for c in answer_candidates(ctx.solutions[seed])} if actions else set()
            if tuple(actions) == probe.actions or (probe_answers & truth):
                continue
            return seed
        return _NO_SEED


class NoLeak(StageCheck):
    """No specific answer (:mod:`.leak`) in a reset observation or in one of a garbage
    play that did not end the episode; skipped when unverified."""

    name = Stage.NO_LEAK
    settings = ("seeds", "leak_min_digits", "leak_min_chars")

    def check(self, ctx: SingleContext) -> str:
        if ctx.no_solution:
            return "no reference solution: no answer to look for"
        if not ctx.verified:
            return "solution() does not replay to a win: no answer to look for"
        cfg = ctx.config
        checked = 0
        per_seed = [set(answer_candidates(sol)) for sol in ctx.solutions.values()]
        shared = set.intersection(*per_seed) if len(per_seed) > 1 else set()  # protocol words such as "done"
        for seed in cfg.seeds:
            solution = self._secret_text(ctx, seed)
            others = [(ctx.resets[s], sol) for s, sol in ctx.solutions.items() if s != seed and s in ctx.resets]
            observations = [ctx.resets[seed]] + [o for s, o in ctx.garbage_obs if s == seed]
            leak = find_leak(solution, observations, others, min_digits=cfg.leak_min_digits,
                             min_chars=cfg.leak_min_chars, shared=shared)
            if leak is not None:
                raise Reject(f"the observation leaks the answer ({short_repr(leak[0])}, seed {seed}): ...{leak[1]}...")
            checked += len(secrets(solution, cfg.leak_min_digits, cfg.leak_min_chars))
        if not checked:
            return "answers too short or generic to check (see the specificity rule)"
        return f"{checked} secret(s) absent from reset and garbage observations"

    @staticmethod
    def _secret_text(ctx: SingleContext, seed: Any) -> str:
        """The text whose answers the leak check looks for: the winning actions of a
        reading that extracts an answer (a JSON tool plan, ``answer: X``, an answer field),
        else the solution as written (a path or a list of moves is the secret as a whole,
        not its last move, which a path's goal names)."""
        reader = ctx.replay.reader if ctx.replay is not None else ""
        if reader in _ANSWER_READERS:
            return "\n".join(ctx.actions(seed))
        return ctx.solutions[seed]


#: The stages of a single-player program, in order (DESIGN.md section 6).
SINGLE_PLAYER_CHECKS: tuple[StageCheck, ...] = (
    SizeSyntax(),
    Compile(),
    Interface(),
    ToolSpecs(),
    Smoke(),
    Determinism(),
    SeedVariety(),
    SolutionReplay(),
    Garbage(),
    NoLeak(),
    Novelty(),
)
#: their names
STAGES: tuple[Stage, ...] = tuple(c.name for c in SINGLE_PLAYER_CHECKS)

_NO_SEED = object()
#: readings whose last action is an answer taken out of the solution text
_ANSWER_READERS = frozenset({"json_plan", "marked_boxed", "field_boxed", "field_answer", "tool_use_boxed"})
