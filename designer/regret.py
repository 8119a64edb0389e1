"""Regret: how much a privileged hint helps the agent on an environment (DESIGN.md section 6).

``regret = max(0, mean(R_hint) - mean(R_plain))`` over ``hint_plays`` hinted and ``plain_plays`` plain
plays, each R the episode's *terminal reward* as SPADE scores it (:func:`terminal_reward`:
the last step's reward, clipped to [-1, 1]; a time-shaped 0.64 counts as 0.64). A *win*
is a terminated episode with reward > 0 when the episodes are known
(:meth:`RegretEstimate.from_episodes`), else a reward of at least ``win_threshold``. High regret means the environment is solvable (the hint unlocks it) but not yet
by the agent alone: the edge of its ability, which is what the designer is paid for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from statistics import fmean
from typing import Any, Sequence

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


def terminal_reward(episode: Any) -> float:
    """An episode's reward as SPADE scores it: its last step's reward (``rewards[-1]``, else
    ``episode_return``), clipped to [-1, 1]; 0.0 when it took no step."""
    rewards = getattr(episode, "rewards", None)
    value = rewards[-1] if rewards else getattr(episode, "episode_return", 0.0)
    return _clean([value])[0]


def is_win(episode: Any) -> bool:
    """A win as SPADE scores it: the episode terminated with a terminal reward > 0."""
    return bool(getattr(episode, "terminated", False)) and terminal_reward(episode) > 0


@dataclass(frozen=True)
class RegretEstimate:
    """Hinted and plain terminal rewards of one environment, and what follows from them.

    A *win* is, per play, ``wins_hint``/``wins_plain`` when known (a terminated episode with
    reward > 0, :meth:`from_episodes`), else a reward of at least ``win_threshold``.
    """

    rewards_hint: tuple[float, ...]
    rewards_plain: tuple[float, ...]
    win_threshold: float = 1.0
    extra: dict = field(default_factory=dict, compare=False)
    wins_hint: tuple[bool, ...] | None = None
    wins_plain: tuple[bool, ...] | None = None

    @classmethod
    def from_rewards(cls, rewards_hint: Sequence[float], rewards_plain: Sequence[float], **kw) -> "RegretEstimate":
        if not rewards_hint or not rewards_plain:
            raise ValueError("a regret estimate needs at least one hinted and one plain play")
        return cls(tuple(_clean(rewards_hint)), tuple(_clean(rewards_plain)), **kw)

    @classmethod
    def from_episodes(cls, hinted: Sequence[Any], plain: Sequence[Any], **kw) -> "RegretEstimate":
        """From played episodes (``rewards``/``episode_return`` and ``terminated``): terminal
        rewards, and wins as SPADE scores them (:func:`is_win`)."""
        return cls.from_rewards([terminal_reward(e) for e in hinted], [terminal_reward(e) for e in plain],
                                wins_hint=tuple(is_win(e) for e in hinted),
                                wins_plain=tuple(is_win(e) for e in plain), **kw)

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
        if self.wins_plain is not None:
            return fmean(self.wins_plain)
        return fmean(r >= self.win_threshold for r in self.rewards_plain)

    @property
    def win_rate_hint(self) -> float:
        if self.wins_hint is not None:
            return fmean(self.wins_hint)
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
