"""Multi-player games: one package for the format, the runtime, and the two views.

- :mod:`.format`: the game program format, detection (:func:`is_multiplayer`,
  :func:`is_multiplayer_source`), static inspection and the value checks;
- :mod:`.runtime`: :func:`open_game` runs a game through the ordinary runtimes (in-process
  or the sandbox) behind a hardened transport, as a :class:`MultiPlayerSession`;
- :mod:`.policies`: baseline players (scripted, random, a user callable);
- :mod:`.pettingzoo`: the multi-agent API (:func:`make_aec`, :func:`make_parallel`);
- :mod:`.gym_view`: the single-agent Gymnasium view against a built-in opponent, which is
  what ``gym.make`` of a game id gives.

Acceptance of games is a stage set of the designer's acceptance pipeline
(:mod:`spade_envs.designer.acceptance.game_stages`), built on the same stage runner as single-player
acceptance; it lives with the designer so data flows one way (designer -> acceptance ->
registry -> agents -> evals) and this package never imports the designer.

Importing this package stays light (PettingZoo loads only with :func:`make_aec`).
"""

from __future__ import annotations

from typing import Any

from .format import FORMAT_PROMPT, GameInfo, inspect_game, is_multiplayer, is_multiplayer_source
from .policies import RandomPolicy, ScriptedPolicy, resolve_opponent
from .runtime import MultiPlayerSession, open_game


def make_aec(env_id: str | None = None, **kwargs: Any) -> Any:
    """PettingZoo AEC environment of a game (see :func:`spade_envs.games.pettingzoo.make_aec`)."""
    from .pettingzoo import make_aec as _make_aec

    return _make_aec(env_id, **kwargs)


def make_parallel(env_id: str | None = None, **kwargs: Any) -> Any:
    """PettingZoo parallel environment of a simultaneous-move game."""
    from .pettingzoo import make_parallel as _make_parallel

    return _make_parallel(env_id, **kwargs)


__all__ = [
    "FORMAT_PROMPT", "GameInfo", "MultiPlayerSession", "RandomPolicy", "ScriptedPolicy", "inspect_game",
    "is_multiplayer", "is_multiplayer_source", "make_aec", "make_parallel", "open_game", "resolve_opponent",
]
