"""``Proposal``: one completion of the designer and what happened to it, in either mode.

The designer writes in one of two modes (DESIGN.md section 3), and both produce this type:

- **code mode** (``mode`` is a program mode of :data:`.prompts.MODES`): the answer's
  Python program is ``source`` (:func:`.extract.extract_code`); its verdicts are
  ``extract`` then the acceptance pipeline's stages;
- **params mode** (``mode == PARAMS_MODE``): the answer names one of the ``offers`` and a
  JSON object of knobs (``kwargs``); the full validated point is ``point`` and the
  chosen parent ``parent``; its verdicts are ``parse``, ``params``, ``novelty``, then the
  pipeline's stages run at that point.

Every verdict is a :class:`~.acceptance.verdicts.StageVerdict`; the first failed one's
name is ``rejected_at``. The token ids and sampling logprobs are kept because the
designer's GRPO step happens later, once the regret of the environment is known
(``estimate``). ``env_id``/``new`` are set once the proposal is registered. In ``spade
design`` (code mode with repairs) a :class:`~.design_run.Candidate` is one environment
and its proposals, one per answer (``attempt``: 0, then each repair).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import Stage
from .acceptance.verdicts import StageVerdict, first_failure, verdicts_json

#: the ``mode`` of a params-mode proposal (a point of an existing program's PARAMETERS)
PARAMS_MODE = "params"


@dataclass
class Proposal:
    """One designer completion, its verdicts and outcome (see the module docstring)."""

    cid: str  #: unique within a run
    group: str  #: proposals answering one prompt share a group (GRPO)
    mode: str  #: a program mode (code mode) or :data:`PARAMS_MODE`
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]  #: the sampling logprobs of ``completion_ids``
    text: str  #: the answer as generated
    skill: str = "unknown"  #: the skill the environment trains
    doc_ref: str = ""  #: code mode: the grounding document; params mode: the parent
    messages: list[dict[str, str]] = field(default_factory=list)  #: the prompt
    prompt_hash: str = ""
    constrained: bool = False  #: decoded under a JSON schema (params mode)
    #: the JSON schema the completion was decoded under (when ``constrained``): the designer
    #: step scores its tokens under the same mask (``spade_envs.selfplay.constrained_scoring``)
    decoding_schema: dict[str, Any] | None = None
    source: str | None = None  #: code mode: the program; self-play params mode: ``variant:<id>``
    verdicts: list[StageVerdict] = field(default_factory=list)
    rejected_at: str | None = None  #: the first failed verdict's name
    parent_ids: list[str] = field(default_factory=list)  #: code mode: memory entries the prompt showed
    offers: list[str] = field(default_factory=list)  #: params mode: the parents the prompt offered
    parent: str | None = None  #: params mode: the chosen parent (full id)
    kwargs: dict[str, Any] | None = None  #: params mode: the knobs as proposed
    point: dict[str, Any] | None = None  #: params mode: the full, validated point
    novelty: float | None = None  #: 1 - max(code, text) similarity to the memory
    env_id: str | None = None  #: once registered
    new: bool | None = None  #: whether the registration added an entry
    estimate: Any = None  #: a RegretEstimate once scored
    hint_origin: str | None = None
    notes: list[str] = field(default_factory=list)
    #: ``spade design`` (code mode): 0 for a candidate's first answer, k for its k-th repair
    attempt: int = 0

    @property
    def is_params(self) -> bool:
        return self.mode == PARAMS_MODE

    @property
    def valid(self) -> bool:
        """Every check ran and passed (code mode: with a program; params mode: at a point)."""
        if self.rejected_at is not None or not self.verdicts:
            return False
        return self.point is not None if self.is_params else self.source is not None

    @property
    def failure(self) -> StageVerdict | None:
        """The first failed verdict (None when none failed)."""
        return first_failure(self.verdicts)

    def verdict(self, name: Stage, ok: bool, detail: str) -> None:
        """Record one check's outcome (the first failure becomes ``rejected_at``)."""
        self.record(StageVerdict(name, bool(ok), detail))

    def record(self, verdict: StageVerdict) -> None:
        self.verdicts.append(verdict)
        if not verdict.ok and self.rejected_at is None:
            self.rejected_at = str(verdict.name)

    def to_json(self) -> dict[str, Any]:
        est = self.estimate
        return {"cid": self.cid, "group": self.group, "mode": self.mode, "skill": self.skill,
                "doc_ref": self.doc_ref, "offers": self.offers, "parent": self.parent, "kwargs": self.kwargs,
                "point": self.point, "text": self.text, "constrained": self.constrained, "accepted": self.valid,
                "rejected_at": self.rejected_at, "env_id": self.env_id, "new": self.new,
                "hint_origin": self.hint_origin, "novelty": self.novelty,
                "regret": None if est is None else est.regret,
                "win_rate_hint": None if est is None else est.win_rate_hint,
                "win_rate_plain": None if est is None else est.win_rate_plain,
                "verdicts": verdicts_json(self.verdicts), "prompt_hash": self.prompt_hash, "notes": self.notes}
