"""The typed record of one self-play round and its metrics row.

:class:`RoundRecord` is what :meth:`~.trainer.SelfPlayTrainer.run_round_record` returns;
:meth:`RoundRecord.as_row` is the row ``metrics.jsonl``, the plot, TensorBoard and the
report read (:meth:`~.trainer.SelfPlayTrainer.run_round`). The row's keys and their
order are fixed here: a part that did not happen in the round (no environment played,
no designer group trained, no proposal, no registration) leaves its keys out, except
the one count that says so (``designer_groups_trained: 0``, ``proposed: 0``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..designer.proposal import Proposal
    from .registration import RegistrationReport
    from .rewards import LedgerEntry


def mean_or_none(xs: list[float]) -> float | None:
    """The mean of ``xs``, None when empty (a metric with nothing to average)."""
    return fmean(xs) if xs else None


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


@dataclass
class EnvOutcome:
    """One environment's settlement in a round (:meth:`~.trainer.SelfPlayTrainer.settle_env`)."""

    regret: float  #: from :func:`~.rewards.regret_estimate`: 0 without a usable hint
    win_rate_plain: float
    win_rate_hint: float | None  #: None when the environment has no hinted returns


@dataclass
class AgentStats:
    """The agent step and the regrets of the environments played (rounds with plays)."""

    agent_loss: float | None
    agent_advantages: Any
    agent_reward: float | None
    agent_micro_batches: Any
    agent_grad_norm: float | None
    agent_clip_ratio: float | None
    agent_rows_filtered: int
    mean_regret: float | None
    win_rate_plain: float | None
    win_rate_hint: float | None
    frontier: int  #: this round's valid proposals played this round in the frontier band
    scores_stored: int  #: registry entries whose stored scores were updated


@dataclass
class DesignerStats:
    """The delayed designer GRPO step (rounds where a group was ready)."""

    designer_groups_trained: int
    designer_loss: float | None
    designer_reward: float | None
    designer_advantages: Any
    designer_raw_rewards: list
    designer_trained_accepted: int
    designer_trained_regret: float | None
    designer_clip_ratio: float | None
    designer_groups_nonzero_adv: int = 0  #: groups whose trained rewards were not all equal (a signal)
    designer_grad_norm: float | None = None  #: the step's gradient norm before clipping

    @classmethod
    def of(cls, groups: "list[list[LedgerEntry]]", rewards: list[float], step: dict[str, Any]) -> "DesignerStats":
        """The stats of one step on ``groups`` (ledger entries), trained on ``rewards`` (in
        the groups' order), whose GRPO step returned ``step``."""
        cands = [c for g in groups for c in g]
        valid = [c for c in cands if c.valid]
        sizes = [len(g) for g in groups]
        starts = [sum(sizes[:i]) for i in range(len(groups))]
        nonzero = sum(max(rewards[a:a + n]) - min(rewards[a:a + n]) > 1e-9 for a, n in zip(starts, sizes))
        regrets = [c.regret for c in valid if c.regret is not None]
        return cls(
            designer_groups_trained=len(groups), designer_loss=step["loss"],
            designer_reward=mean_or_none([float(x) for x in rewards]), designer_advantages=step["advantages"],
            designer_raw_rewards=[c.reward for c in cands], designer_trained_accepted=len(valid),
            designer_trained_regret=mean_or_none(regrets), designer_clip_ratio=step.get("clip_ratio/region_mean"),
            designer_groups_nonzero_adv=nonzero, designer_grad_norm=step.get("grad_norm"))


@dataclass
class ProposalStats:
    """The round's designer proposals and their acceptance (rounds with proposals)."""

    proposed: int
    valid: int
    proposed_params: int
    valid_params: int
    valid_rate: float
    acceptance_by_stage: dict[str, float]
    rejected_at: dict[str, int]
    novelty: float | None

    @classmethod
    def of(cls, props: "list[Proposal]") -> "ProposalStats | None":
        """The stats of ``props`` (None when there are none)."""
        if not props:
            return None
        from ..designer.acceptance import STAGES
        from ..errors import Stage

        passed = {str(s): sum(any(v.name == s and v.ok for v in p.verdicts) for p in props)
                  for s in (Stage.EXTRACT, *STAGES)}
        rejected: dict[str, int] = {}
        for p in props:
            if p.rejected_at:
                rejected[p.rejected_at] = rejected.get(p.rejected_at, 0) + 1
        novelty = [p.novelty for p in props if p.novelty is not None]
        return cls(proposed=len(props), valid=sum(p.valid for p in props),
                   proposed_params=sum(p.is_params for p in props),
                   valid_params=sum(p.valid and p.is_params for p in props),
                   valid_rate=sum(p.valid for p in props) / len(props),
                   acceptance_by_stage={k: v / len(props) for k, v in passed.items()},
                   rejected_at=rejected, novelty=mean_or_none(novelty))


@dataclass
class RoundRecord:
    """Everything one round measured; :meth:`as_row` is its metrics row."""

    round: int
    envs_played: int
    designer_s: float
    agent: AgentStats | None  #: None: no environment was played
    play_s: float
    rollout_tokens: int
    generation_s: float
    rollout_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    designer: DesignerStats | None  #: None: no designer group was ready
    proposals: ProposalStats | None  #: None: the designer proposed nothing this round
    registration: "RegistrationReport | None"  #: None: not a registering round
    replay_size: int
    replay_mean_priority: float
    global_step: int
    round_s: float

    def as_row(self) -> dict[str, Any]:
        """The metrics row (JSON-ready; keys in the order of the fields above)."""
        row: dict[str, Any] = {"round": self.round, "envs_played": self.envs_played, "designer_s": self.designer_s}
        if self.agent is not None:
            row.update(_fields(self.agent))
        row.update(play_s=self.play_s, rollout_tokens=self.rollout_tokens, generation_s=self.generation_s,
                   rollout_tokens_per_s=self.rollout_tokens_per_s, generation_tokens_per_s=self.generation_tokens_per_s)
        row.update(_fields(self.designer) if self.designer is not None else {"designer_groups_trained": 0})
        row.update(_fields(self.proposals) if self.proposals is not None else {"proposed": 0})
        if self.registration is not None:
            row.update(self.registration.as_row())
        row.update(replay_size=self.replay_size, replay_mean_priority=self.replay_mean_priority,
                   global_step=self.global_step, round_s=self.round_s)
        return row
