"""Ready reward functions for TRL's ``GRPOTrainer(reward_funcs=...)`` with the spade
environment classes (:mod:`.trl_adapter`).

TRL calls each function once per batch with keyword arguments (``prompts``,
``completions``, the dataset columns... and ``environments``: the environment instance of
each rollout) and expects one float per rollout, or ``None`` where the function does not
apply (a rollout of another environment kind). Each class's own ``get_reward`` (the
episode return) is already added by TRL as a reward source, so these are the *extra*
signals; pass them with ``reward_weights`` as you see fit:

- :func:`won`: 1.0 when the episode return reached 1.0 (a solved episode), else 0.0;
- :func:`finished`: 1.0 when the episode ended (the agent gave its final answer, or the
  environment ended it), else 0.0: a format reward for rollouts that never answer;
- :func:`episode_return`: the episode return itself (for a setup that scores through
  ``reward_funcs`` only).

``REWARD_FUNCS`` is ``[won, finished]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _ours(env: Any) -> bool:
    return callable(getattr(env, "get_reward", None)) and hasattr(env, "trajectory") and hasattr(env, "_done")


def episode_return(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """The episode return of each rollout (its environment's ``get_reward()``)."""
    return [float(e.get_reward()) if _ours(e) else None for e in environments or []]


def won(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """1.0 for a solved episode (return >= 1.0), else 0.0."""
    return [(1.0 if e.get_reward() >= 1.0 else 0.0) if _ours(e) else None for e in environments or []]


def finished(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """1.0 when the episode ended (terminated or truncated), else 0.0."""
    return [(1.0 if e._done and len(e.trajectory) > 1 else 0.0) if _ours(e) else None for e in environments or []]


REWARD_FUNCS = [won, finished]
