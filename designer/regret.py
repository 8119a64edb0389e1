"""Regret: how much a privileged hint helps the agent on an environment (DESIGN.md section 6).

``regret = max(0, mean(R_hint) - mean(R_plain))`` over ``n_hint`` hinted and ``n`` plain
plays. High regret means the environment is solvable (the hint unlocks it) but not yet
by the agent alone: the edge of its ability, which is what the designer is paid for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from statistics import fmean
from typing import Sequence

#: the blend mode's regret scale: a regret of 0.15 already earns the full regret share
BLEND_REGRET_SCALE = 0.15
BLEND_REGRET_WEIGHT = 0.4
#: plateau(win rate) is 1 on [PLATEAU_LOW, PLATEAU_HIGH] and falls to 0 over PLATEAU_FALLOFF
PLATEAU_LOW, PLATEAU_HIGH, PLATEAU_FALLOFF = 0.4, 0.6, 0.25


class RewardMode(str, Enum):
    """How the designer is rewarded from a :class:`RegretEstimate`."""

    REGRET = "regret"  #: the regret itself
    BLEND = "blend"  #: 0.4 * clip(regret / 0.15, 0, 1) + 0.6 * plateau(win rate)
    SOLVE_RATE = "solve_rate"  #: plateau(win rate): aim for environments solved about half the time


def plateau(win_rate: float) -> float:
    """1 on [0.4, 0.6], falling linearly to 0 at 0.15 and at 0.85."""
    if win_rate < PLATEAU_LOW:
        return max(0.0, 1.0 - (PLATEAU_LOW - win_rate) / PLATEAU_FALLOFF)
    if win_rate > PLATEAU_HIGH:
        return max(0.0, 1.0 - (win_rate - PLATEAU_HIGH) / PLATEAU_FALLOFF)
    return 1.0


def _clean(rewards: Sequence[float]) -> list[float]:
    out = []
    for r in rewards:
        r = float(r)
        if not math.isfinite(r):
            raise ValueError(f"reward {r} is not finite")
        out.append(max(-1.0, min(1.0, r)))
    return out


@dataclass(frozen=True)
class RegretEstimate:
    """Hinted and plain episode returns of one environment, and what follows from them.

    A *win* is a return of at least ``win_threshold`` (1.0 by the format's convention).
    """

    rewards_hint: tuple[float, ...]
    rewards_plain: tuple[float, ...]
    win_threshold: float = 1.0
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_rewards(cls, rewards_hint: Sequence[float], rewards_plain: Sequence[float], **kw) -> "RegretEstimate":
        if not rewards_hint or not rewards_plain:
            raise ValueError("a regret estimate needs at least one hinted and one plain play")
        return cls(tuple(_clean(rewards_hint)), tuple(_clean(rewards_plain)), **kw)

    @property
    def mean_hint(self) -> float:
        return fmean(self.rewards_hint)

    @property
    def mean_plain(self) -> float:
        return fmean(self.rewards_plain)

    @property
    def regret(self) -> float:
        return max(0.0, self.mean_hint - self.mean_plain)

    @property
    def win_rate_plain(self) -> float:
        return fmean(r >= self.win_threshold for r in self.rewards_plain)

    @property
    def win_rate_hint(self) -> float:
        return fmean(r >= self.win_threshold for r in self.rewards_hint)

    def designer_reward(self, mode: RewardMode | str = RewardMode.REGRET) -> float:
        """The designer's reward for this environment under ``mode``."""
        mode = RewardMode(mode)
        if mode is RewardMode.REGRET:
            return self.regret
        if mode is RewardMode.BLEND:
            share = min(1.0, max(0.0, self.regret / BLEND_REGRET_SCALE))
            return BLEND_REGRET_WEIGHT * share + (1 - BLEND_REGRET_WEIGHT) * plateau(self.win_rate_plain)
        return plateau(self.win_rate_plain)

    def as_dict(self) -> dict:
        """The fields stored with the environment in the registry."""
        return {
            "regret": self.regret,
            "mean_reward_hint": self.mean_hint,
            "mean_reward_plain": self.mean_plain,
            "win_rate_hint": self.win_rate_hint,
            "win_rate_plain": self.win_rate_plain,
            "n_hint": len(self.rewards_hint),
            "n_plain": len(self.rewards_plain),
        }
