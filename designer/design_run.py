"""The records of a code-mode design run (:class:`~.designer.EnvironmentDesigner`): each
:class:`Candidate` is one environment the designer tried to make, with one
:class:`~.proposal.Proposal` per answer of the model (its ``attempts``: the first, then
each repair), whose verdicts are ``extract`` then the acceptance pipeline's (or one
failed ``propose``); :class:`DesignRun` is the run's candidates and its summary. A
candidate is accepted when its last answer passed every stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from ..errors import Stage
from .acceptance import verdicts_json
from .corpus import Document
from .proposal import Proposal
from .regret import RegretEstimate


def rejected_at(answer: Proposal) -> str | None:
    """The stage an answer was rejected at (None when it passed every stage)."""
    return None if answer.valid else (answer.rejected_at or str(Stage.INCOMPLETE))


@dataclass
class Candidate:
    """One environment the designer tried to make, with everything that happened to it."""

    index: int
    skill: str
    mode: str
    document: Document
    prompt_hash: str
    parents: list[str]
    conversation: list[dict[str, str]]
    attempts: list[Proposal] = field(default_factory=list)
    source: str | None = None  #: the last extracted program
    env_id: str | None = None
    new: bool | None = None
    hint_origin: str | None = None
    hint_note: str = ""
    estimate: RegretEstimate | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].valid

    @property
    def rejected_at(self) -> str | None:
        return rejected_at(self.attempts[-1]) if self.attempts else str(Stage.PROPOSE)

    @property
    def repairs(self) -> int:
        return max(0, len(self.attempts) - 1)

    def to_json(self) -> dict[str, Any]:
        est = self.estimate
        return {
            "index": self.index, "skill": self.skill, "mode": self.mode, "document_ref": self.document.ref,
            "prompt_hash": self.prompt_hash, "parents": self.parents, "accepted": self.accepted,
            "rejected_at": self.rejected_at, "repairs": self.repairs, "env_id": self.env_id, "new": self.new,
            "hint_origin": self.hint_origin,
            "regret": None if est is None else est.regret,
            "win_rate_hint": None if est is None else est.win_rate_hint,
            "win_rate_plain": None if est is None else est.win_rate_plain,
            "attempts": [{"round": a.attempt, "answer_chars": len(a.text), "rejected_at": rejected_at(a),
                          "verdicts": verdicts_json(a.verdicts)} for a in self.attempts],
            "notes": self.notes,
        }


@dataclass
class DesignRun:
    """The outcome of :meth:`EnvironmentDesigner.run`."""

    generation: int | None
    candidates: list[Candidate]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Proposed, accepted, rejected per stage, mean regret and win rates."""
        rejected: dict[str, int] = {}
        rejected_attempts: dict[str, int] = {}
        for c in self.candidates:
            if not c.accepted:
                rejected[c.rejected_at or "incomplete"] = rejected.get(c.rejected_at or "incomplete", 0) + 1
            for a in c.attempts:
                if not a.valid:
                    key = rejected_at(a) or "incomplete"
                    rejected_attempts[key] = rejected_attempts.get(key, 0) + 1
        scored = [c.estimate for c in self.candidates if c.estimate is not None]
        mean = (lambda xs: fmean(xs) if xs else None)
        return {
            "generation": self.generation,
            "proposed": len(self.candidates),
            "attempts": sum(len(c.attempts) for c in self.candidates),
            "accepted": sum(c.accepted for c in self.candidates),
            "registered": sum(bool(c.new) for c in self.candidates),
            "rejected": rejected,  # candidates, by the stage that rejected their last attempt
            "rejected_attempts": rejected_attempts,  # every attempt, repairs included
            "scored": len(scored),
            "mean_regret": mean([e.regret for e in scored]),
            "mean_win_rate_hint": mean([e.win_rate_hint for e in scored]),
            "mean_win_rate_plain": mean([e.win_rate_plain for e in scored]),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }

    def to_json(self) -> dict[str, Any]:
        return {**self.summary(), "candidates": [c.to_json() for c in self.candidates]}
