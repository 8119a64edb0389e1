"""Verdicts of the acceptance pipeline (DESIGN.md sections 6 and 10).

A :class:`StageVerdict` is one named stage's outcome; an :class:`AcceptanceReport` is the
ordered list of the stages that ran (the pipeline stops at the first failure). The report
serializes to the ``spade validate --json`` shape::

    {"accepted": bool, "rejected_at": str | null,
     "stages": [{"name": str, "ok": bool, "detail": str, "seconds": float}], ...}

(``seconds``, ``file``, ``class_name``, ``sha256`` and ``seconds_total`` are extra keys,
which the contract allows.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Every stage, in pipeline order.
STAGES: tuple[str, ...] = (
    "size_syntax",
    "compile",
    "interface",
    "tool_specs",
    "smoke",
    "determinism",
    "seed_variety",
    "solution_replay",
    "garbage",
    "no_leak",
    "novelty",
)

#: The stages of a multi-player game (:mod:`spade_envs.designer.game_stages`), in order.
GAME_STAGES: tuple[str, ...] = (
    "size_syntax", "compile", "interface", "smoke", "determinism", "random_play", "scripted_play",
    "garbage", "information", "novelty",
)


@dataclass(frozen=True)
class StageVerdict:
    """Outcome of one stage: ``ok`` and a one-line ``detail`` (the reason when not ok)."""

    name: str
    ok: bool
    detail: str
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "seconds": round(self.seconds, 6)}


@dataclass
class AcceptanceReport:
    """The verdicts of one candidate source, in stage order.

    ``accepted`` is true only when every stage of ``expected`` (:data:`STAGES`, or
    :data:`GAME_STAGES` for a game) ran and passed.
    """

    filename: str = "<env>"
    stages: list[StageVerdict] = field(default_factory=list)
    class_name: str | None = None
    sha256: str = ""
    seconds: float = 0.0
    expected: tuple[str, ...] = STAGES

    @property
    def multiplayer(self) -> bool:
        return self.expected == GAME_STAGES

    @property
    def accepted(self) -> bool:
        names = [s.name for s in self.stages]
        return names == list(self.expected) and all(s.ok for s in self.stages)

    @property
    def rejected_at(self) -> str | None:
        for verdict in self.stages:
            if not verdict.ok:
                return verdict.name
        return None if self.accepted else "incomplete"

    @property
    def failure(self) -> StageVerdict | None:
        """The failing verdict, or None when accepted."""
        return next((s for s in self.stages if not s.ok), None)

    def stage(self, name: str) -> StageVerdict | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The ``spade validate --json`` object (DESIGN.md section 10, plus extra keys)."""
        out = {
            "accepted": self.accepted,
            "rejected_at": self.rejected_at,
            "stages": [s.to_json() for s in self.stages],
            "file": self.filename,
            "class_name": self.class_name,
            "sha256": self.sha256,
            "seconds_total": round(self.seconds, 6),
        }
        if self.multiplayer:
            out["multiplayer"] = True
        return out

    def summary(self) -> str:
        """One line: ``accepted`` or ``rejected at STAGE: detail``."""
        bad = self.failure
        if bad is None:
            return "accepted" if self.accepted else "incomplete"
        return f"rejected at {bad.name}: {bad.detail}"
