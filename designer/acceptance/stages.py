"""The single-player stage checks of the acceptance pipeline (see :mod:`.acceptance`).

:class:`StageChecks` holds one ``_stage_<name>`` method per stage of
:data:`~spade_envs.designer.acceptance.verdicts.STAGES` (``size_syntax`` and ``novelty`` come from
:class:`~spade_envs.designer.acceptance.stage_runner.StageRunner`, which also runs them); each
returns the verdict's detail or raises :class:`Reject` (or a
:class:`~spade_envs.errors.SpadeError`) with the reason. They share one :class:`Context`
per candidate: the live session and what earlier stages learnt (first observations,
solutions, replays, garbage observations).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from spade_envs.actions import parse_tool_calls
from spade_envs.errors import EnvExecutionError, EnvProgramError
from spade_envs.program import inspect_program
from spade_envs.solutions import READER_NAMES, solution_plans, solution_readings, tool_use_actions
from spade_envs.tools import type_note

from .leak import answer_candidates, find_leak, secrets
from .probes import (
    BudgetExceeded,
    Episode,
    Probe,
    garbage_probes,
    normalize_answer,
    play,
    smoke_actions,
)
from .stage_runner import Context, Reject, StageRunner
from .verdicts import NO_REFERENCE, STAGES

__all__ = ["FATAL_KINDS", "Context", "Reject", "StageChecks"]

#: error kinds after which a session cannot be trusted to answer again
FATAL_KINDS = frozenset({"timeout", "crash", "memory", "killed", "security", "output"})


@dataclass
class ReplayOutcome:
    """What replaying the readings of ``solution()`` found: the winning ``form`` (index
    into :func:`~spade_envs.solutions.solution_plans` of the first seed) and its
    ``reader``, or ``form`` None when no reading wins (the program is then accepted
    *unverified*); ``tried`` says, per reading that did not win, what happened."""

    form: int | None = None
    reader: str = ""
    rewards: list[float] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)


class StageChecks(StageRunner):
    """The single-player stages, run by :class:`StageRunner` in :data:`STAGES` order."""

    stage_names = STAGES

    def _play(self, ctx: Context, seed: Any, actions: list[str] | tuple[str, ...], *, want_solution: bool = False) -> Episode:
        assert ctx.session is not None
        episode = play(self.runtime, ctx.session, seed, actions, want_solution=want_solution, deadline=ctx.deadline)
        self._track(ctx, episode.max_call_s, f"a call with seed {seed}")
        if episode.no_solution:
            ctx.no_solution = True
        return episode

    def _actions(self, ctx: Context, seed: Any) -> list[str]:
        """The replay of ``seed``'s solution (the form that won, once known); [] without one."""
        if ctx.no_solution:
            return []
        tools = ctx.session.tools if ctx.session is not None else []
        readings = solution_readings(ctx.solutions.get(seed) or "", tools, ctx.resets.get(seed))
        reader = ctx.replay.reader if ctx.replay is not None else ""
        won = next((actions for name, actions in readings if reader and name == reader), None)
        return won if won is not None else readings[min(ctx.solution_form, len(readings) - 1)][1]

    def _budget(self, ctx: Context) -> None:
        if ctx.deadline is not None and time.perf_counter() > ctx.deadline:
            raise BudgetExceeded("the candidate's time budget ran out")

    def _solution(self, ctx: Context, seed: Any) -> str:
        if seed not in ctx.solutions:
            self._budget(ctx)
            obs, _ = ctx.session.reset(seed)  # type: ignore[union-attr]
            ctx.resets.setdefault(seed, obs)
            if ctx.no_solution:
                ctx.solutions[seed] = ""
                ctx.snapshots[seed] = json.dumps(ctx.session.snapshot(), sort_keys=True, default=repr)  # type: ignore[union-attr]
            else:
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
        ctx.notes.extend(info.notes)
        ctx.defines_hint = "hint" in info.methods
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
        note = "".join(f"; note: {n}" for n in info.notes)
        return f"compiled; {info.class_name}() constructed in {1000 * (time.perf_counter() - t0):.1f} ms{note}"

    def _stage_interface(self, ctx: Context) -> str:
        # no step before reset: a freshly constructed instance need not be playable (every
        # runtime resets first, as SPADE's loader does); the first smoke play resets
        seed = self.config.seeds[0]
        episode = self._smoke_play(ctx, seed, 0)  # doubles as the smoke play of this seed
        hint_about = self._hint(ctx)
        if isinstance(episode.error, EnvProgramError):
            raise Reject(f"{episode.error} (after reset(seed={seed}), action {_short(episode.error_action)})")
        if not episode.obs0.strip():
            raise Reject(f"reset(seed={seed}) returned an empty observation")
        if ctx.no_solution:
            about = "no solution() (optional, as in SPADE)"
        else:
            about = f"solution() -> {len(self._actions(ctx, seed))} action(s)"
        return f"{ctx.class_name}: reset -> (str, dict), step -> (str, float, bool, bool, dict), {about}{hint_about}"

    def _hint(self, ctx: Context) -> str:
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
                self._close(ctx)
                ctx.session = self.runtime.open(ctx.source, kwargs=dict(self.config.env_kwargs), filename=ctx.filename)
            why = _err(exc)
        except EnvProgramError as exc:
            why = str(exc)
        return f"; note: hint() failed ({why[:120]}): treated as no hint"

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

    def _stage_smoke(self, ctx: Context) -> str:
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
            for note in episode.notes:
                if note not in ctx.notes:
                    ctx.notes.append(note)
            if ctx.no_solution:
                continue
            n_actions = len(solution_plans(episode.solution or "", ctx.session.tools)[0])  # type: ignore[union-attr]
            if n_actions > self.config.max_solution_actions:
                raise Reject(f"solution() has {n_actions} actions for seed {episode.seed} (limit {self.config.max_solution_actions})")
        notes = "".join(f"; note: {n}" for n in ctx.notes if "non-finite" in n)
        return (
            f"{len(ctx.smoke_plays)} resets, {n_steps} junk steps survived; slowest call "
            f"{1000 * ctx.max_call_s:.1f} ms (deadline {self.config.step_deadline_s:g} s){notes}"
        )

    def _play_junk_alone(self, ctx: Context, seed: Any, action: str) -> None:
        episode = self._play(ctx, seed, [action], want_solution=True)
        ctx.smoke_plays.append(episode)

    def _stage_determinism(self, ctx: Context) -> str:
        twice = list(self.config.seeds)[: max(1, self.config.determinism_seeds)]
        for seed in self.config.seeds:
            actions = self._actions(ctx, seed) or smoke_actions()[:3]  # junk when there is no solution
            first = self._play(ctx, seed, actions, want_solution=True)
            for label, a, b in (
                ("first observation", ctx.resets[seed], first.obs0),
                ("solution()", ctx.solutions[seed], first.solution or ""),
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
        """Different seeds, different tasks: judged on the solutions when they replay to a
        win, else (no solution(), or a text no reader replays, such as prose) on the tasks
        themselves (first observation and public state), never on the prose."""
        seeds = list(self.config.seeds) + list(self.config.variety_seeds)
        need = self.config.min_distinct_solutions
        try:
            replayable = not ctx.no_solution and self._find_win(ctx).form is not None
        except Reject as exc:  # the replay hung or crashed the program: solution_replay's verdict
            raise EnvProgramError(str(exc), stage="solution_replay") from None
        if replayable:
            distinct = len({normalize_answer(self._solution(ctx, s)) for s in seeds})
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

    def _distinct_tasks(self, ctx: Context, seeds: list[Any]) -> int:
        """Distinct ``(first observation, public state after reset)`` over ``seeds``."""
        keys = set()
        for seed in seeds:
            if seed not in ctx.snapshots:
                self._budget(ctx)
                obs, _ = ctx.session.reset(seed)  # type: ignore[union-attr]
                ctx.resets.setdefault(seed, obs)
                try:
                    state = ctx.session.snapshot()  # type: ignore[union-attr]
                except (EnvExecutionError, EnvProgramError):
                    state = None  # e.g. a __slots__ class with no _state: the observation decides
                ctx.snapshots[seed] = json.dumps(state, sort_keys=True, default=repr)
            keys.add((ctx.resets[seed], ctx.snapshots[seed]))
        return len(keys)

    def _find_win(self, ctx: Context) -> ReplayOutcome:
        """Try the readings of ``solution()`` (primary first) until one wins on every seed of
        ``config.seeds`` from a fresh episode; remembered in ``ctx.replay``. A reading whose
        replay hangs or crashes the program rejects it; one that loses or raises is noted."""
        if ctx.replay is not None:
            return ctx.replay
        outcome = ReplayOutcome()
        seeds = list(self.config.seeds)
        tools = ctx.session.tools if ctx.session is not None else []
        readings = {s: solution_readings(ctx.solutions.get(s) or "", tools, ctx.resets.get(s)) for s in seeds}
        for form, (reader, _) in enumerate(readings[seeds[0]]):
            rewards: list[float] = []
            failure = None
            for seed in seeds:
                actions = next((a for name, a in readings[seed] if name == reader), None)
                if actions is None:
                    failure = f"no such reading for seed {seed}"
                    break
                episode = ctx.replays.get(seed) if form == 0 and seed in ctx.replays else self._play(ctx, seed, actions)
                if episode.error is not None:
                    if getattr(episode.error, "kind", None) in FATAL_KINDS:
                        raise Reject(f"replaying the solution of seed {seed} ({READER_NAMES[reader]}): "
                                     f"step({_short(episode.error_action)}) failed: {_err(episode.error)}")
                    failure = f"seed {seed}: step({_short(episode.error_action, 40)}) failed: {_err(episode.error)[:80]}"
                    break
                if not episode.won(self.config.win_reward):
                    end = "terminated" if episode.ended and episode.steps[-1][2] else (
                        "truncated" if episode.ended else "not ended")
                    failure = (f"seed {seed}: reward {episode.last_reward:g} after {len(episode.steps)} of "
                               f"{len(actions)} action(s), {end}")
                    break
                rewards.append(episode.last_reward)
            if failure is None:
                outcome.form, outcome.reader, outcome.rewards = form, reader, rewards
                ctx.solution_form = form
                break
            outcome.tried.append(f"{READER_NAMES[reader]} ({failure})")
        ctx.replay = outcome
        return outcome

    def _stage_solution_replay(self, ctx: Context) -> str:
        if ctx.no_solution:
            ctx.verified = False
            return NO_REFERENCE
        outcome = self._find_win(ctx)
        seeds = list(self.config.seeds)
        if outcome.form is None:
            ctx.verified = False
            return (f"unverified: no reading of solution() replays a win on seeds {seeds} (SPADE never replays it); "
                    f"readers tried: {'; '.join(outcome.tried)}; solution {_short(ctx.solutions[seeds[0]])}")
        how = f" (read as {READER_NAMES[outcome.reader]})" if outcome.form else ""
        return f"solution wins on seeds {seeds}{how} (terminal rewards {outcome.rewards})"

    def _stage_garbage(self, ctx: Context) -> str:
        seeds = list(self.config.seeds)
        first_actions = self._actions(ctx, seeds[0])
        probes = garbage_probes(ctx.session.tools, first_actions, self.config.max_garbage_probes)  # type: ignore[union-attr]
        # a garbage win reaches what the solution's own win reached (a time-shaped 0.64)
        won = ctx.replay.rewards if ctx.replay is not None and ctx.replay.form is not None else []
        threshold = min([self.config.win_reward, *won])
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
            ended_high = episode.ended and episode.steps[-1][2] and episode.last_reward >= threshold
            if episode.best_reward >= self.config.win_reward or ended_high:
                raise Reject(
                    f"garbage wins: probe '{probe.name}' got reward {max(episode.best_reward, episode.last_reward):g} with "
                    f"{_short(probe.actions[-1])} (seed {seed}); check the answer exactly"
                )
            ctx.garbage_obs.extend((seed, s[0]) for s in episode.steps if not (s[2] or s[3]))
        note = f", {skipped} skipped (equal to the answer)" if skipped else ""
        return f"{played} garbage probes, none won{note}"

    def _seed_for(self, ctx: Context, probe: Probe, seeds: list[int], i: int) -> Any:
        probe_answers = probe.answers()
        for k in range(len(seeds)):
            seed = seeds[(i + k) % len(seeds)]
            actions = self._actions(ctx, seed)
            truth = {normalize_answer(c) for c in answer_candidates(ctx.solutions[seed])} if actions else set()
            if tuple(actions) == probe.actions or (probe_answers & truth):
                continue
            return seed
        return _NO_SEED

    def _stage_no_leak(self, ctx: Context) -> str:
        if ctx.no_solution:
            return "no reference solution: no answer to look for"
        if not ctx.verified:
            return "solution() does not replay to a win: no answer to look for"
        cfg = self.config
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
                raise Reject(f"the observation leaks the answer ({_short(leak[0])}, seed {seed}): ...{leak[1]}...")
            checked += len(secrets(solution, cfg.leak_min_digits, cfg.leak_min_chars))
        if not checked:
            return "answers too short or generic to check (see the specificity rule)"
        return f"{checked} secret(s) absent from reset and garbage observations"


    def _secret_text(self, ctx: Context, seed: Any) -> str:
        """The text whose answers the leak check looks for: the winning actions of a
        reading that extracts an answer (a JSON tool plan, ``answer: X``, an answer field),
        else the solution as written (a path or a list of moves is the secret as a whole,
        not its last move, which a path's goal names)."""
        reader = ctx.replay.reader if ctx.replay is not None else ""
        if reader in _ANSWER_READERS:
            return "\n".join(self._actions(ctx, seed))
        return ctx.solutions[seed]


_NO_SEED = object()
#: readings whose last action is an answer taken out of the solution text
_ANSWER_READERS = frozenset({"json_plan", "marked_boxed", "field_boxed", "field_answer", "tool_use_boxed"})


def _short(text: Any, limit: int = 80) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 5] + "...'"


def _err(exc: BaseException | None) -> str:
    """``kind: message`` for execution errors (``timeout: step() exceeded ...``)."""
    kind = getattr(exc, "kind", None)
    return f"{kind}: {exc}" if isinstance(exc, EnvExecutionError) and kind and not str(exc).startswith(kind) else str(exc)


def _diff(a: Any, b: Any) -> str:
    return f"{_short(a, 60)} vs {_short(b, 60)}"
