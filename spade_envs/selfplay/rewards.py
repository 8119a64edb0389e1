"""Rewards and advantages of both roles.

Agent: the reward of an episode is its return (the last reward clipped to [-1, 1]); its
advantage is normalized within its group (the plays of ONE environment with one seed):
``(r - mean(group)) / (std(group) + 1e-4)`` with the unbiased std — exactly what TRL's
``GRPOTrainer`` computes with ``scale_rewards="group"`` (:func:`group_advantages`).

Designer: a candidate the acceptance pipeline rejects gets ``invalid_penalty`` at once; an
accepted one gets ``RegretEstimate.designer_reward(mode)`` once its regret is known, i.e.
after ``play_window`` rounds of plain and hinted plays (:class:`DesignerLedger`). A group
(the candidates of one designer prompt) is trained on when every member's reward is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

GROUP_EPS = 1e-4  #: TRL's epsilon in the group normalization


def group_advantages(rewards: Sequence[float], group_size: int) -> list[float]:
    """Advantages of consecutive groups of ``group_size`` rewards (TRL's ``scale_rewards="group"``)."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        group = [float(r) for r in rewards[start:start + group_size]]
        mean = sum(group) / len(group)
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (len(group) - 1)) if len(group) > 1 else 0.0
        out.extend((r - mean) / (std + GROUP_EPS) for r in group)
    return out


def agent_reward(episode: Any) -> float:
    """The agent's reward for one episode: its return, clipped to [-1, 1] (0 on failure)."""
    value = float(getattr(episode, "episode_return", 0.0) or 0.0)
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


@dataclass
class Candidate:
    """One designer completion awaiting its reward."""

    cid: str  #: unique id, e.g. "r3-p0-c1"
    group: str  #: designer prompt id (the GRPO group)
    round: int  #: round it was proposed in
    valid: bool
    env_key: str | None = None  #: replay-buffer key of the accepted environment
    plain: list[float] = field(default_factory=list)
    hint: list[float] = field(default_factory=list)
    rounds_played: int = 0
    reward: float | None = None
    regret: float | None = None


class DesignerLedger:
    """Candidates waiting for their delayed reward. Persisted in checkpoints (``to_json``)."""

    def __init__(self, mode: str = "regret", invalid_penalty: float = -1.0, play_window: int = 1) -> None:
        self.mode = mode
        self.invalid_penalty = float(invalid_penalty)
        self.play_window = int(play_window)
        self.candidates: dict[str, Candidate] = {}

    def add(self, cand: Candidate) -> None:
        if not cand.valid:
            cand.reward = self.invalid_penalty
        self.candidates[cand.cid] = cand

    def record_plays(self, env_key: str, plain: Sequence[float], hint: Sequence[float]) -> None:
        """Returns of one round of plays of ``env_key``; completes a window when due."""
        for cand in self.candidates.values():
            if cand.env_key != env_key or cand.reward is not None:
                continue
            cand.plain.extend(float(r) for r in plain)
            cand.hint.extend(float(r) for r in hint)
            cand.rounds_played += 1
            if cand.rounds_played >= self.play_window and cand.plain and cand.hint:
                from ..designer.regret import RegretEstimate

                est = RegretEstimate.from_rewards(cand.hint, cand.plain)
                cand.regret = est.regret
                cand.reward = est.designer_reward(self.mode)

    def rekey(self, old: str, new: str) -> None:
        """An environment got its registry id."""
        for cand in self.candidates.values():
            if cand.env_key == old:
                cand.env_key = new

    def finalize(self, env_key: str) -> None:
        """Settle the candidates of ``env_key`` now (it may not be played again, e.g. it
        landed in the held-out split): the regret of the plays so far, else 0."""
        for cand in self.candidates.values():
            if cand.env_key == env_key and cand.reward is None:
                if cand.plain and cand.hint:
                    from ..designer.regret import RegretEstimate

                    est = RegretEstimate.from_rewards(cand.hint, cand.plain)
                    cand.regret, cand.reward = est.regret, est.designer_reward(self.mode)
                else:
                    cand.regret, cand.reward = None, 0.0

    def pending_keys(self) -> list[str]:
        """Environment keys whose candidates still wait for plays (they must be played)."""
        return sorted({c.env_key for c in self.candidates.values() if c.reward is None and c.env_key})

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
                "candidates": [vars(c) for c in self.candidates.values()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "DesignerLedger":
        ledger = cls(data["mode"], data["invalid_penalty"], data["play_window"])
        for c in data.get("candidates", []):
            ledger.candidates[c["cid"]] = Candidate(**c)
        return ledger
