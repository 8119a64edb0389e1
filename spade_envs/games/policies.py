"""Baseline players of multi-player games, and the opponent of the single-agent view.

A *policy* has ``act(game, player) -> str`` (``game`` a
:class:`~spade_envs.games.runtime.MultiPlayerSession`). :func:`resolve_opponent` turns what
a user passes as ``opponent=`` into one:

- ``"scripted"`` (default): the game's own baseline strategy (``scripted_action``);
- ``"random"``: uniform over ``legal_actions()`` (a random short ``\\boxed{}`` token when
  the game lists none), seeded so that the same episode seed replays the same game;
- a callable ``policy(observation: str, legal_actions: list[str] | None) -> str``, called
  with the opponent's own view only (never the other players' hidden information). To
  pickle an environment made with it, the callable must pickle (a module-level function).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ..errors import EnvProgramError

OPPONENTS = ("scripted", "random")


class RandomPolicy:
    """Uniform over ``legal_actions()`` (seeded); when the game lists none, a random
    ``\\boxed{}`` of a short token (mostly invalid moves)."""

    name = "random"

    def __init__(self, seed: Any = 0) -> None:
        self.rng = random.Random(f"spade-random-policy:{seed}")  # independent of the game's own seed stream

    def act(self, game: Any, player: int) -> str:
        legal = game.legal_actions(player if game.simultaneous else None)
        if legal:
            return self.rng.choice(legal)
        return "\\boxed{" + str(self.rng.randint(0, 9)) + "}"


class ScriptedPolicy:
    """The game's own baseline strategy (``scripted_action``)."""

    name = "scripted"

    def act(self, game: Any, player: int) -> str:
        return game.scripted_action(player if game.simultaneous else None)


class CallablePolicy:
    """A user function ``policy(observation, legal_actions) -> str`` as a policy; a
    non-str answer is ``str()``-ed."""

    name = "callable"

    def __init__(self, fn: Callable[[str, list[str] | None], Any]) -> None:
        self.fn = fn

    def act(self, game: Any, player: int) -> str:
        legal = game.legal_actions(player if game.simultaneous else None)
        move = self.fn(game.observe(player), legal)
        return move if isinstance(move, str) else str(move)


def resolve_opponent(opponent: Any, seed: Any = 0) -> Any:
    """The policy for ``opponent=`` (see the module docstring); ``seed`` seeds ``"random"``.
    Raises :class:`EnvProgramError` naming the accepted values otherwise."""
    if opponent is None or opponent == "scripted":
        return ScriptedPolicy()
    if opponent == "random":
        return RandomPolicy(seed)
    if hasattr(opponent, "act") and not isinstance(opponent, str):
        return opponent
    if callable(opponent):
        return CallablePolicy(opponent)
    raise EnvProgramError(
        f"opponent must be 'scripted', 'random' or a callable policy(observation, legal_actions) -> str, "
        f"got {opponent!r}"
    )
