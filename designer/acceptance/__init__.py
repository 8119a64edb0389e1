"""Acceptance: is a candidate source a valid, honest environment? (DESIGN.md section 6)

This package owns the acceptance pipeline and nothing else: the stage lists (single-player
programs and multi-player games), the checks, the probes and the answer-leak rule, the
verdicts and the report (the ``spade validate --json`` shape of DESIGN.md section 10).
Acceptance never raises because of the candidate: every problem is a failed verdict.

Entry points (what the CLI, the registry, the designer and self-play call):
:func:`validate_source`, :class:`AcceptancePipeline` (``run``, ``run_many``),
:class:`AcceptanceConfig`, :func:`sandbox_runtime`, :class:`AcceptanceReport`. Every
verdict in memory, the designer's own checks included (``propose``, ``extract``,
``parse``, ``params``), is a :class:`StageVerdict`; :func:`verdicts_json` is the stored
shape (what a registry entry's ``acceptance`` holds).

Where things are: the stage lists :data:`SINGLE_PLAYER_CHECKS` (:mod:`.single_player_stages`)
and :data:`GAME_CHECKS` (:mod:`.game_stages`), their names :data:`STAGES` and
:data:`GAME_STAGES` (members of :class:`~spade_envs.errors.Stage`, the enum that verdicts
and ``EnvProgramError.stage`` share); a stage is a :class:`StageCheck` (``name``,
``settings``, ``check(ctx)``) run by :mod:`.runner` on a context (:mod:`.context`: one
for single-player programs, one for games); parameter sampling is a wrapper around a
pipeline (:mod:`.parameters`); the rules of every stage: :mod:`.pipeline`'s docstring.
To add a stage: a new :class:`StageCheck`, one entry in a list, its name in ``Stage``.
"""

from spade_envs.errors import Stage

from .config import AcceptanceConfig, NoveltyCheck
from .game_stages import GAME_CHECKS, GAME_STAGES
from .pipeline import AcceptancePipeline, StagePipeline, validate_source
from .runner import StageCheck, sandbox_runtime
from .single_player_stages import SINGLE_PLAYER_CHECKS, STAGES
from .verdicts import NO_REFERENCE, AcceptanceReport, StageVerdict, first_failure, replay_metadata, verdicts_json

__all__ = [
    "GAME_CHECKS",
    "GAME_STAGES",
    "NO_REFERENCE",
    "SINGLE_PLAYER_CHECKS",
    "STAGES",
    "AcceptanceConfig",
    "AcceptancePipeline",
    "AcceptanceReport",
    "NoveltyCheck",
    "Stage",
    "StageCheck",
    "StagePipeline",
    "StageVerdict",
    "first_failure",
    "replay_metadata",
    "sandbox_runtime",
    "validate_source",
    "verdicts_json",
]
