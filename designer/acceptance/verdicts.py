"""Verdicts of the acceptance pipeline (DESIGN.md sections 6 and 10).

A :class:`StageVerdict` is one named stage's outcome; an :class:`AcceptanceReport` is the
ordered list of the stages that ran (the pipeline stops at the first failure). The report
serializes to the ``spade validate --json`` shape::

    {"accepted": bool, "rejected_at": str | null,
     "stages": [{"name": str, "ok": bool, "detail": str, "seconds": float}], ...}

(``seconds``, ``file``, ``class_name``, ``sha256``, ``seconds_total``, ``verified`` and
``solution_form`` are extra keys, which the contract allows; ``verified`` is false for an
accepted program without ``solution()`` or whose ``solution()`` no reader replays to a
win, and the ``solution_replay`` stage carries the same ``verified`` flag.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spade_envs.errors import Stage

#: the ``solution_replay`` detail of a program without ``solution()`` (accepted unverified;
#: the registry reads entries stored before the ``verified`` flag by this text)
NO_REFERENCE = "no reference solution: solvability unverified"


@dataclass(frozen=True)
class StageVerdict:
    """Outcome of one stage: ``ok`` and a one-line ``detail`` (the reason when not ok)."""

    name: Stage
    ok: bool
    detail: str
    seconds: float = 0.0
    #: ``solution_replay`` only: whether a win was replayed (False: accepted unverified)
    verified: bool | None = None
    #: ``solution_replay`` only: which reading of solution() won (0: the primary one)
    solution_form: int = 0

    def to_json(self) -> dict[str, Any]:
        """The stored shape (a registry entry's ``acceptance``, ``--json`` output)."""
        out: dict[str, Any] = {"name": str(self.name), "ok": self.ok, "detail": self.detail,
                               "seconds": round(self.seconds, 6)}
        if self.verified is not None:
            out["verified"] = self.verified
        if self.solution_form:
            out["solution_form"] = int(self.solution_form)
        return out


def first_failure(verdicts: "list[StageVerdict]") -> StageVerdict | None:
    """The first verdict that is not ok (None when all are)."""
    return next((v for v in verdicts if not v.ok), None)


def verdicts_json(verdicts: "list[StageVerdict]") -> list[dict[str, Any]]:
    """``verdicts`` in the stored shape (:meth:`StageVerdict.to_json` of each)."""
    return [v.to_json() for v in verdicts]


@dataclass
class AcceptanceReport:
    """The verdicts of one candidate source, in stage order.

    ``accepted`` is true only when every stage of ``expected`` (the names of the stage
    list that ran, plus ``parameters`` for a program with PARAMETERS) ran and passed.
    """

    filename: str = "<env>"
    stages: list[StageVerdict] = field(default_factory=list)
    class_name: str | None = None
    sha256: str = ""
    seconds: float = 0.0
    #: False when no win was replayed (no solution(), or no reading of it wins): accepted unverified
    verified: bool = True
    #: which reading of solution() replays the win (index into solution_plans(); 0 = primary)
    solution_form: int = 0
    #: the stages that must all run and pass (set by the runner)
    expected: tuple[Stage, ...] = ()
    #: judged as a multi-player game
    multiplayer: bool = False

    @property
    def accepted(self) -> bool:
        names = [s.name for s in self.stages]
        return bool(self.expected) and names == list(self.expected) and all(s.ok for s in self.stages)

    @property
    def rejected_at(self) -> Stage | str | None:
        for verdict in self.stages:
            if not verdict.ok:
                return verdict.name
        return None if self.accepted else "incomplete"

    @property
    def failure(self) -> StageVerdict | None:
        """The failing verdict, or None when accepted."""
        return next((s for s in self.stages if not s.ok), None)

    def stage(self, name: Stage | str) -> StageVerdict | None:
        return next((s for s in self.stages if s.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The ``spade validate --json`` object (DESIGN.md section 10, plus extra keys)."""
        out = {
            "accepted": self.accepted,
            "rejected_at": None if self.rejected_at is None else str(self.rejected_at),
            "stages": [s.to_json() for s in self.stages],
            "file": self.filename,
            "class_name": self.class_name,
            "sha256": self.sha256,
            "seconds_total": round(self.seconds, 6),
            "verified": self.verified,
            "solution_form": self.solution_form,
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


def replay_metadata(report: "AcceptanceReport | list[StageVerdict] | list[dict[str, Any]]") -> dict[str, Any]:
    """What an accepted report adds to a registry entry's metadata: ``verified: False`` for
    a program without solution(), ``solution_form`` when the win needed an alternate
    reading. Takes a report, its verdicts, or stored verdict dicts (whose
    ``solution_replay`` entry may carry ``verified``/``solution_form`` keys)."""
    if isinstance(report, AcceptanceReport):
        verified, form = report.verified, report.solution_form
    elif any(isinstance(v, StageVerdict) for v in report):
        replay = next((v for v in report if isinstance(v, StageVerdict) and v.name == Stage.SOLUTION_REPLAY), None)
        verified = True if replay is None or replay.verified is None else replay.verified
        form = 0 if replay is None else replay.solution_form
    else:
        replay = next((v for v in report if isinstance(v, dict) and v.get("name") == Stage.SOLUTION_REPLAY), {})
        verified, form = replay.get("verified", True), replay.get("solution_form", 0)
    out: dict[str, Any] = {}
    if verified is False:
        out["verified"] = False
    if form:
        out["solution_form"] = int(form)
    return out
