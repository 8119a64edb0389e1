"""spade-envs: a Gymnasium registry of LLM-synthesized environments (after SPADE).

``import spade_envs`` registers every environment of the active registry under the
``spade/`` namespace, so ``gym.make("spade/Env-00001")`` works; ``refresh()`` picks up
store changes made after the import, ``list_envs(...)`` lists and filters. The import
stays light: no torch, transformers, trl, vllm or datasets.
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


#: Interop entry points, imported on first use: ``load_environment`` (verifiers /
#: Environments Hub), ``create_dataset`` and ``score_answer`` (reasoning-gym's shape),
#: ``register_reasoning_gym`` (registers the ids with reasoning-gym's own factory).
_INTEROP = {"load_environment": ".integrations.verifiers", "create_dataset": ".integrations.answer_datasets",
            "score_answer": ".integrations.answer_datasets", "register_reasoning_gym": ".integrations.rg_datasets"}


def __getattr__(name: str):
    if name == "ToolUseBaseEnv":  # lazily: the tool base class pulls in jsonschema
        from .toolbase import ToolUseBaseEnv

        return ToolUseBaseEnv
    if name in _INTEROP:
        import importlib

        return getattr(importlib.import_module(_INTEROP[name], __name__), name)
    raise AttributeError(f"module 'spade_envs' has no attribute {name!r}")


def _quiet_latest_version_notice() -> None:
    """``gym.make("spade/Env-00001")`` means the latest version by design (DESIGN.md
    section 4), so Gymnasium's "Using the latest versioned environment" notice is noise
    here: filter exactly that notice, for ``spade/`` ids only (Python's warnings filter;
    other packages' ids keep it)."""
    import warnings

    warnings.filterwarnings("ignore", message=r"(\x1b\[[0-9;]*m)?WARN: Using the latest versioned environment `spade/",
                            category=UserWarning)


def _register() -> None:
    from .registry.gym_registration import register_all

    _quiet_latest_version_notice()
    register_all()


_register()


def refresh() -> int:
    """Re-register the local store in this running process (DESIGN.md section 4):
    environments added since ``import spade_envs`` (here or by another process, e.g.
    ``spade registry add``) become makeable, removed or quarantined ones disappear.
    Returns the number of store ids registered."""
    from .registry.gym_registration import refresh as _refresh

    return _refresh()


def list_envs(*, skill: str | None = None, generation: int | None = None, status: str | None = None,
              tags: list[str] | None = None) -> list:
    """The environments of the active registry, seeds first then the store, as
    ``EnvRecord`` objects (``env_id``, ``generation``, ``status``, ``skill``, ``metadata``...),
    filtered by skill, generation (0 = the seed suite), status (``active``,
    ``deprecated``, ``quarantined``) and tags (any of)."""
    from .registry import list_envs as _list_envs

    return _list_envs(skill=skill, generation=generation, status=status, tags=tags)


def make_aec(env_id: str, **kwargs):
    """PettingZoo AEC environment for a multi-player game (see spade_envs.games)."""
    from .games import make_aec as _make_aec

    return _make_aec(env_id, **kwargs)


def make_parallel(env_id: str, **kwargs):
    """PettingZoo Parallel environment for a multi-player game (see spade_envs.games)."""
    from .games.pettingzoo import make_parallel as _make_parallel

    return _make_parallel(env_id, **kwargs)


__all__ = [
    "EnvExecutionError",
    "EnvProgramError",
    "SpadeError",
    "ToolSpecError",
    "ToolUseBaseEnv",
    "UnknownEnvironmentError",
    "create_dataset",
    "list_envs",
    "load_environment",
    "make_aec",
    "make_parallel",
    "score_answer",
    "refresh",
    "register_reasoning_gym",
    "__version__",
]
