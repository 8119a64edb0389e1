"""Replaying ``solution()``: the readings tried until one wins, shared by the
``seed_variety`` and ``solution_replay`` stages, and the short forms verdicts quote."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import EnvExecutionError, FailureKind
from spade_envs.solutions import READER_NAMES, solution_readings

from .context import Reject, SingleContext

#: error kinds after which a session cannot be trusted to answer again
FATAL_KINDS = frozenset({FailureKind.TIMEOUT, FailureKind.CRASH, FailureKind.MEMORY, FailureKind.SECURITY,
                         FailureKind.OUTPUT})


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


def find_win(ctx: SingleContext) -> ReplayOutcome:
    """Try the readings of ``solution()`` (primary first) until one wins on every seed of
    ``config.seeds`` from a fresh episode; remembered in ``ctx.replay``. A reading whose
    replay hangs or crashes the program rejects it; one that loses or raises is noted."""
    if ctx.replay is not None:
        return ctx.replay
    outcome = ReplayOutcome()
    seeds = list(ctx.config.seeds)
    win_reward = ctx.config.win_reward
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
            episode = ctx.replays.get(seed) if form == 0 and seed in ctx.replays else ctx.play(seed, actions)
            if episode.error is not None:
                if getattr(episode.error, "kind", None) in FATAL_KINDS:
                    raise Reject(f"replaying the solution of seed {seed} ({READER_NAMES[reader]}): "
                                 f"step({short_repr(episode.error_action)}) failed: {error_text(episode.error)}")
                failure = f"seed {seed}: step({short_repr(episode.error_action, 40)}) failed: {error_text(episode.error)[:80]}"
                break
            if not episode.won(win_reward):
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


def short_repr(text: Any, limit: int = 80) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 5] + "...'"


def error_text(exc: BaseException | None) -> str:
    """``kind: message`` for execution errors (``timeout: step() exceeded ...``)."""
    kind = getattr(exc, "kind", None)
    return f"{kind}: {exc}" if isinstance(exc, EnvExecutionError) and kind and not str(exc).startswith(kind) else str(exc)


def diff_text(a: Any, b: Any) -> str:
    return f"{short_repr(a, 60)} vs {short_repr(b, 60)}"
