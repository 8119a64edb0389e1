"""The single-agent Gymnasium view of a multi-player game (DESIGN.md section 4).

``gym.make`` of a game id gives a :class:`~spade_envs.gym_env.SpadeEnv` whose session is a
:class:`GameViewSession`: the agent holds one seat (``seat=0`` by default) and every other
seat is played by a built-in opponent (``opponent="scripted"`` by default, ``"random"``,
or a callable ``policy(observation, legal_actions) -> str``; see
:mod:`spade_envs.games.policies`). So every id in ``gym.registry`` can be made; PettingZoo
(:func:`spade_envs.make_aec`) stays the multi-agent API.

- ``reset(seed)`` resets the game, lets the opponents move until it is the agent's turn,
  and returns the agent's own view (``observe(seat)``); ``info`` carries ``num_players``,
  ``seat``, ``opponent`` and ``simultaneous``.
- ``step(action)`` plays the agent's move (in a simultaneous game, together with the
  opponents' moves), then the opponents' moves until the agent is to move again or the
  game ends. The reward is the agent's reward summed over those moves, clipped to [-1, 1];
  the observation is the agent's view (hidden information of the other seats never
  appears); ``info`` is the game's info of the last move plus ``opponent_moves`` (how many
  moves the opponents made this step) and ``game_moves`` (moves of all players since reset,
  what the game's own ``max_turns`` counts).
- For a game that lists its legal moves (``legal_actions()``), ``info`` of ``reset`` and
  ``step`` carries ``legal_actions``: the agent's legal moves now (``[]`` once it is over).
- The ``"random"`` opponent is seeded from the episode seed, so ``reset(seed=s)`` replays
  the same game; ``solution()`` is the game's scripted move for the agent's seat.
"""

from __future__ import annotations

from typing import Any

from ..contract import StepResult
from ..errors import EnvProgramError, SpadeError
from ..runtime import EnvSession, jsonable
from .policies import resolve_opponent
from .runtime import MultiPlayerSession

#: opponent moves played in one agent step before the game is declared stuck
MAX_OPPONENT_MOVES = 1000


def opponent_name(opponent: Any) -> str:
    if opponent is None or isinstance(opponent, str):
        return opponent or "scripted"
    return getattr(opponent, "name", None) or getattr(opponent, "__name__", None) or type(opponent).__name__


class GameViewSession(EnvSession):
    """A game seen by one seat, the others played by ``opponent`` (module docstring)."""

    def __init__(self, game: MultiPlayerSession, *, opponent: Any = "scripted", seat: int = 0) -> None:
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < game.num_players:
            raise EnvProgramError(f"seat must be a player index in 0..{game.num_players - 1}, got {seat!r}")
        resolve_opponent(opponent)  # fail now on a bad value, not at the first reset
        self.game = game
        self.seat = seat
        self.opponent = opponent
        self.tools: list[dict[str, Any]] = []
        self._policy = resolve_opponent(opponent, seed=None)
        self._ended = False
        self.moves = 0

    # -- playing ---------------------------------------------------------------------
    def _opponents_move(self) -> tuple[float, bool, bool, dict, int]:
        """Opponent moves until the agent is to move or the game ends (turn-based games)."""
        reward, info, moves = 0.0, {}, 0
        game = self.game
        while not self._ended and not game.simultaneous and game.current_player != self.seat:
            if moves >= MAX_OPPONENT_MOVES:
                raise EnvProgramError(f"the opponents made {moves} moves in a row without the game ending")
            player = game.current_player
            _, rewards, terminated, truncated, info = game.step(self._policy.act(game, player))
            reward += rewards[self.seat]
            moves += 1
            self.moves += 1
            if terminated or truncated:
                self._ended = True
                return reward, terminated, truncated and not terminated, info, moves
        return reward, False, False, info, moves

    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        self._policy = resolve_opponent(self.opponent, seed=seed)
        self._ended = False
        self.moves = 0
        _, info = self.game.reset(seed)
        _, terminated, truncated, _, moves = self._opponents_move()
        info = dict(info)
        info.update(num_players=self.game.num_players, seat=self.seat, opponent=opponent_name(self.opponent),
                    simultaneous=self.game.simultaneous)
        if moves:
            info["opponent_moves"] = moves
        return self.game.observe(self.seat), self._with_legal(info)

    def step(self, action: str) -> StepResult:
        game = self.game
        if game.simultaneous:
            joint = [action if p == self.seat else self._policy.act(game, p) for p in range(game.num_players)]
            _, rewards, terminated, truncated, info = game.step(joint)
        else:  # the agent's turn (or the game is over, and the program answers that)
            _, rewards, terminated, truncated, info = game.step(action)
        self.moves += 1
        reward = rewards[self.seat]
        info = dict(info)
        if terminated or truncated:
            self._ended = True
        else:
            more, terminated, truncated, last_info, moves = self._opponents_move()
            reward += more
            if moves:
                info.update(last_info)
                info["opponent_moves"] = moves
        info["game_moves"] = self.moves
        return (self.game.observe(self.seat), max(-1.0, min(1.0, reward)), terminated, truncated and not terminated,
                self._with_legal(info))

    def _with_legal(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info["legal_actions"]``: the agent's legal moves now, for a game that lists them
        (``[]`` once the game is over)."""
        if "legal_actions" in self.game.info.methods:
            legal = None if self._ended else self.game.legal_actions(self.seat if self.game.simultaneous else None)
            info["legal_actions"] = list(legal or [])
        return info

    # -- extras ------------------------------------------------------------------------
    def solution(self) -> str:
        return self.game.scripted_action(self.seat)

    def hint(self) -> str | None:
        return self.game.hint(self.seat)

    def snapshot(self) -> Any:
        return jsonable({"seat": self.seat, "view": self.game.observe(self.seat),
                         "current_player": self.game.current_player})

    def close(self) -> None:
        try:
            self.game.close()
        except SpadeError:
            pass
