"""Acceptance: is a candidate source a valid, honest environment? (DESIGN.md section 6)

This package owns the acceptance pipeline and nothing else: the stage lists (single-player
programs and multi-player games), the checks, the probes and the answer-leak rule, the
verdicts and the report (the ``spade validate --json`` shape of DESIGN.md section 10).
Acceptance never raises because of the candidate: every problem is a failed verdict.

Entry points (what the CLI, the registry, the designer and self-play call):
:func:`validate_source`, :class:`AcceptancePipeline` (``run``, ``run_many``),
:class:`AcceptanceConfig`, :func:`sandbox_runtime`, :class:`AcceptanceReport`.
"""

from .pipeline import AcceptanceConfig, AcceptancePipeline, NoveltyCheck, sandbox_runtime, validate_source
from .verdicts import GAME_STAGES, NO_REFERENCE, STAGES, AcceptanceReport, StageVerdict, replay_metadata

__all__ = [
    "GAME_STAGES",
    "NO_REFERENCE",
    "STAGES",
    "AcceptanceConfig",
    "AcceptancePipeline",
    "AcceptanceReport",
    "NoveltyCheck",
    "StageVerdict",
    "replay_metadata",
    "sandbox_runtime",
    "validate_source",
]
