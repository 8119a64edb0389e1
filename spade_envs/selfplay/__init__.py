"""Self-play training (issue 7): regret-driven GRPO for the designer and the agent.

Light to import: torch/transformers/trl load when a trainer is built.
``run(config)`` (:mod:`.loop`) is the entry point; ``spade selfplay`` wraps it.
"""

from __future__ import annotations

from .config import SelfPlayConfig, SelfPlayConfigError
from .presets import PRESETS, build_config, preset

__all__ = ["PRESETS", "SelfPlayConfig", "SelfPlayConfigError", "build_config", "preset", "run"]


def run(config: SelfPlayConfig, **kwargs):
    """See :func:`spade_envs.selfplay.loop.run`."""
    from .loop import run as _run

    return _run(config, **kwargs)
