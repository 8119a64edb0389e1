"""Rewards and advantages of both roles.

Agent: the reward of an episode is its return (the last reward clipped to [-1, 1]);
a play whose environment failed gets ``failed_play_reward`` and, when
``unterminated_reward`` is set, a play that never terminated gets it (SPADE: -1 and 0).
Advantages are TRL's (``scale_rewards="group"``: ``(r - mean) / (std + 1e-4)`` with the
unbiased std; ``"none"``: only centred, as SPADE) — :func:`group_advantages` is the hand
computation the tests compare TRL against.

Regret (:func:`regret_estimate`, the ONE place of the rule "no usable hint -> regret 0",
used by the ledger, the round's per-environment settlement and the registry's stored
scores): the estimate over hinted and plain returns; without a usable hint, or without a
hinted play, the hinted returns are the plain ones, so regret is 0.

Designer (:class:`DesignerLedger`): a candidate the acceptance pipeline rejects gets
``invalid_penalty`` at once; an accepted one waits for plays of its environment during
``play_window`` rounds. Its raw reward is ``RegretEstimate.designer_reward(mode)`` over
those plays, with three rules from SPADE: an environment without a usable hint has
regret 0 (plateau terms of ``blend``/``solve_rate`` still count); one whose step timed
out in play gets ``step_timeout_penalty``; hinted plays may be made once (``hint_once``)
and reused while plain returns accumulate over the window. A group (the candidates of
one designer prompt) is trained on when every member's reward is known;
:func:`finalize_rewards` then centres the raw rewards on their skill's mean (no std
division, ``designer_center="skill"``) and scales them, as SPADE's delayed rewards do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ..designer.regret import RegretEstimate

GROUP_EPS = 1e-4  #: TRL's epsilon in the group normalization


def group_advantages(rewards: Sequence[float], group_size: int, scale: str = "group") -> list[float]:
    """Advantages of consecutive groups of ``group_size`` rewards (TRL's ``scale_rewards``)."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        group = [float(r) for r in rewards[start:start + group_size]]
        mean = sum(group) / len(group)
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (len(group) - 1)) if len(group) > 1 else 0.0
        out.extend((r - mean) / (std + GROUP_EPS) if scale == "group" else (r - mean) for r in group)
    return out


def agent_reward(episode: Any, *, failed: float = 0.0, unterminated: float | None = None) -> float:
    """The agent's reward for one episode (see the module docstring)."""
    if getattr(episode, "error", None):
        return float(failed)
    if unterminated is not None and not getattr(episode, "terminated", True):
        return float(unterminated)
    value = float(getattr(episode, "episode_return", 0.0) or 0.0)
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


def is_step_timeout(episode: Any) -> bool:
    """True when the episode ended because a step of its environment timed out."""
    from ..errors import FailureKind

    return getattr(getattr(episode, "error", None), "kind", None) is FailureKind.TIMEOUT


def regret_estimate(plain: Sequence[float], hint: Sequence[float], *, hint_usable: bool) -> "RegretEstimate":
    """The regret estimate of an environment from its plain and hinted returns: the one
    rule of self-play. Without a usable hint (``hint_usable`` False: the hinted plays would
    only measure noise) or without any hinted return, the hinted returns are the plain
    ones, so ``regret`` is 0 and both win rates are the plain one; ``plain`` must not be empty."""
    from ..designer.regret import RegretEstimate

    return RegretEstimate.from_rewards(hint if hint_usable and hint else plain, plain)


@dataclass
class Candidate:
    """One designer completion awaiting its reward."""

    cid: str  #: unique id, e.g. "r3-p0-c1"
    group: str  #: designer prompt id (the GRPO group)
    round: int  #: round it was proposed in
    valid: bool
    env_key: str | None = None  #: replay-buffer key of the accepted environment
    skill: str | None = None
    hint_usable: bool = True  #: False: regret is 0 whatever the plays say (SPADE)
    plain: list[float] = field(default_factory=list)
    hint: list[float] = field(default_factory=list)
    rounds_played: int = 0
    step_timeout: bool = False
    reward: float | None = None  #: raw reward (before per-skill centring and scale)
    regret: float | None = None
    win_rate_plain: float | None = None
    win_rate_hint: float | None = None


class DesignerLedger:
    """Candidates waiting for their delayed reward. Persisted in checkpoints (``to_json``)."""

    def __init__(self, mode: str = "regret", invalid_penalty: float = -1.0, play_window: int = 1,
                 step_timeout_penalty: float = -1.0) -> None:
        self.mode = mode
        self.invalid_penalty = float(invalid_penalty)
        self.play_window = int(play_window)
        self.step_timeout_penalty = float(step_timeout_penalty)
        self.candidates: dict[str, Candidate] = {}

    @classmethod
    def from_config(cls, config: Any) -> "DesignerLedger":
        """The ledger of a run's settings (``reward_mode``, ``invalid_penalty``,
        ``play_window``, ``step_timeout_penalty``)."""
        return cls(config.reward_mode, config.invalid_penalty, config.play_window, config.step_timeout_penalty)

    def add(self, cand: Candidate) -> None:
        if not cand.valid:
            cand.reward = self.invalid_penalty
        self.candidates[cand.cid] = cand

    def _settle(self, cand: Candidate) -> None:
        if cand.step_timeout:
            cand.regret, cand.reward = 0.0, self.step_timeout_penalty
            return
        if not cand.plain:
            cand.regret, cand.reward = None, 0.0
            return
        est = regret_estimate(cand.plain, cand.hint, hint_usable=cand.hint_usable)
        cand.win_rate_plain, cand.win_rate_hint = est.win_rate_plain, est.win_rate_hint
        cand.regret, cand.reward = est.regret, est.designer_reward(self.mode)

    def record_plays(self, env_key: str, plain: Sequence[float], hint: Sequence[float], *,
                     step_timeout: bool = False) -> None:
        """Returns of one round of plays of ``env_key`` (``hint`` empty when the hinted plays
        were made earlier, ``hint_once``); settles the candidates whose window is complete."""
        for cand in self.candidates.values():
            if cand.env_key != env_key or cand.reward is not None:
                continue
            cand.plain.extend(float(r) for r in plain)
            cand.hint.extend(float(r) for r in hint)
            cand.step_timeout = cand.step_timeout or step_timeout
            cand.rounds_played += 1
            if cand.step_timeout or cand.rounds_played >= self.play_window:
                self._settle(cand)

    def rekey(self, old: str, new: str) -> None:
        """An environment got its registry id."""
        for cand in self.candidates.values():
            if cand.env_key == old:
                cand.env_key = new

    def finalize(self, env_key: str) -> None:
        """Settle the candidates of ``env_key`` now (it may not be played again, e.g. it
        landed in the held-out split): the plays so far, else 0."""
        for cand in self.candidates.values():
            if cand.env_key == env_key and cand.reward is None:
                self._settle(cand)

    def finalize_candidate(self, cand: Candidate) -> None:
        """Settle one candidate that will never be played (held out, or no room): reward 0."""
        if cand.reward is None:
            cand.regret, cand.reward = None, 0.0

    def pending_keys(self) -> list[str]:
        """Environment keys whose candidates still wait for plays, oldest candidate first."""
        waiting = sorted((c.round, c.cid, c.env_key) for c in self.candidates.values()
                         if c.reward is None and c.env_key)
        out: list[str] = []
        for _, _, key in waiting:
            if key not in out:
                out.append(key)
        return out

    def ready_groups(self) -> list[list[Candidate]]:
        """Groups whose every member has a reward, removed from the ledger, oldest first."""
        groups: dict[str, list[Candidate]] = {}
        for cand in self.candidates.values():
            groups.setdefault(cand.group, []).append(cand)
        ready = [sorted(g, key=lambda c: c.cid) for g in groups.values() if all(c.reward is not None for c in g)]
        ready.sort(key=lambda g: (g[0].round, g[0].group))
        for g in ready:
            for c in g:
                del self.candidates[c.cid]
        return ready

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "invalid_penalty": self.invalid_penalty, "play_window": self.play_window,
                "step_timeout_penalty": self.step_timeout_penalty,
                "candidates": [vars(c) for c in self.candidates.values()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "DesignerLedger":
        ledger = cls(data["mode"], data["invalid_penalty"], data["play_window"], data.get("step_timeout_penalty", -1.0))
        for c in data.get("candidates", []):
            ledger.candidates[c["cid"]] = Candidate(**c)
        return ledger


def finalize_rewards(groups: list[list[Candidate]], *, center: str = "none", scale: float = 1.0) -> list[float]:
    """The trained rewards of the candidates of ``groups`` (flattened, group-major):
    raw rewards, centred per skill (``center="skill"``, mean only) and multiplied by ``scale``."""
    cands = [c for g in groups for c in g]
    raw = [float(c.reward or 0.0) for c in cands]
    if center == "skill":
        by_skill: dict[str, list[float]] = {}
        for c, r in zip(cands, raw):
            by_skill.setdefault(c.skill or "unknown", []).append(r)
        means = {k: sum(v) / len(v) for k, v in by_skill.items()}
        raw = [r - means[c.skill or "unknown"] for c, r in zip(cands, raw)]
    return [r * float(scale) for r in raw]


def spade_designer_scale(agent_rows: int, designer_rows: int, regen_every: int, cap: float = 50.0) -> float:
    """SPADE's designer reward scale: agent rows per designer row, times the regeneration
    interval, at most ``cap`` (its ``compute_env_reward_scale``)."""
    if agent_rows <= 0 or designer_rows <= 0:
        return 1.0
    return min(cap, agent_rows / designer_rows * regen_every)


def designer_scale(config: Any) -> float:
    """The factor on designer rewards: ``designer_reward_scale``, or with None (SPADE's
    setting) 1: SPADE's ``min(50, agent/designer rows x regen)`` (:func:`spade_designer_scale`)
    compensates designer rows being a small share of the agent's batch; self-play trains
    them in a step of their own, normalised over their own tokens: nothing to offset."""
    return 1.0 if config.designer_reward_scale is None else float(config.designer_reward_scale)
