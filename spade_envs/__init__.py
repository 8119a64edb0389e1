"""spade-envs: a Gymnasium registry of LLM-synthesized environments (after SPADE).

``import spade_envs`` registers every environment of the active registry under the
``spade/`` namespace, so ``gym.make("spade/Env-00001")`` works. The import stays light:
no torch, transformers, trl, vllm or datasets.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    EnvExecutionError,
    EnvProgramError,
    SpadeError,
    ToolSpecError,
    UnknownEnvironmentError,
)
from .toolbase import ToolUseBaseEnv  # noqa: E402


def _register() -> None:
    from .registry.gym_registration import register_all

    register_all()


_register()


def make_aec(env_id: str, **kwargs):
    """PettingZoo AEC environment for a multi-player game (see spade_envs.games)."""
    from .games import make_aec as _make_aec

    return _make_aec(env_id, **kwargs)


__all__ = [
    "EnvExecutionError",
    "EnvProgramError",
    "SpadeError",
    "ToolSpecError",
    "ToolUseBaseEnv",
    "UnknownEnvironmentError",
    "make_aec",
    "__version__",
]
