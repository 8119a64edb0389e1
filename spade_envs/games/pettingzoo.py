"""PettingZoo surface of multi-player games (DESIGN.md section 4).

- :func:`make_aec` returns a PettingZoo ``AECEnv`` (turn-based games natively; a
  simultaneous-move game through PettingZoo's ``parallel_to_aec`` conversion).
- :func:`make_parallel` returns a ``ParallelEnv`` of any game: a simultaneous-move game
  takes every agent's action each step; a turn-based game takes the action of the agent
  to move (``infos[agent]["to_move"]``) and ignores the others'.

Agents are ``player_0 .. player_{n-1}``. Each agent's observation space is
``Dict({"observation": UnicodeText()})`` and its observation the player's own view of
the game (hidden information of the others never appears); action spaces are
``UnicodeText()``. A game that lists its legal moves (``legal_actions()``, a finite
action set per state) adds ``"legal_actions": TextList()`` (a ``Sequence(UnicodeText())``) to the
observation: the tuple of moves legal for that agent now (empty when it is not its turn
or the game is over); ``infos[agent]["legal_actions"]`` holds the same list. (The actions
are text, so this is the text form of PettingZoo's ``action_mask``.) Rewards follow the game's per-step rewards; when the game ends every
agent is terminated (or truncated at the turn limit) and leaves ``agents`` after its
final ``step(None)``, as PettingZoo requires. A game failure (exception, timeout) ends
the game for every agent with ``truncated`` and ``info["error"]``.

The observation strings are :class:`TextObservation` (a ``str`` that declares the numpy
dtype of its space, which PettingZoo's ``api_test`` compares).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import parallel_to_aec

from ..errors import EnvProgramError, SpadeError
from ..spaces import TextList, UnicodeText
from .format import is_multiplayer
from .runtime import MultiPlayerSession, open_game


class TextObservation(str):
    """A ``str`` carrying the dtype of :class:`UnicodeText` (``np.dtype('<U')``), so
    PettingZoo's observation/space dtype check holds for text."""

    __slots__ = ()
    dtype = UnicodeText().dtype


def _obs_space(game: MultiPlayerSession) -> spaces.Dict:
    parts: dict[str, spaces.Space] = {"observation": UnicodeText()}
    if _lists_moves(game):
        parts["legal_actions"] = TextList()
    return spaces.Dict(parts)


def _lists_moves(game: MultiPlayerSession) -> bool:
    return "legal_actions" in game.info.methods


def _legal(game: MultiPlayerSession, index: int, over: bool) -> tuple[str, ...]:
    """The moves legal for player ``index`` now (``()`` off turn or once the game is over)."""
    if over or (not game.simultaneous and game.current_player != index):
        return ()
    return tuple(game.legal_actions(index if game.simultaneous else None) or ())


def _observation(game: MultiPlayerSession, index: int, over: bool) -> dict[str, Any]:
    obs: dict[str, Any] = {"observation": TextObservation(game.observe(index))}
    if _lists_moves(game):
        obs["legal_actions"] = _legal(game, index, over)
    return obs


def _open(env_id: str | None, source: str | None, kwargs: dict[str, Any]) -> MultiPlayerSession:
    trust = kwargs.pop("trust_remote_code", False)
    params = {**(kwargs.pop("env_kwargs", None) or {}), **kwargs}  # the game's PARAMETERS, validated on open
    return open_game(env_id, source=source, kwargs=params, trust_remote_code=trust)


class SpadeAECEnv(AECEnv):
    """A turn-based spade game as a PettingZoo AEC environment."""

    metadata = {"render_modes": ["ansi"], "name": "spade_game_v0", "is_parallelizable": False}

    def __init__(self, game: MultiPlayerSession, *, env_id: str | None = None, render_mode: str | None = None) -> None:
        super().__init__()
        if game.simultaneous:
            raise EnvProgramError("a simultaneous-move game needs make_parallel() (or make_aec(), which converts it)")
        self.game = game
        self.env_id = env_id
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(game.num_players)]
        self._obs_spaces = {a: _obs_space(game) for a in self.possible_agents}
        self._act_spaces = {a: UnicodeText() for a in self.possible_agents}
        self._seed: int | None = None
        self._over = False
        self._reset_state()

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def _reset_state(self) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game.current_player]
        self._note_legal()

    def _note_legal(self) -> None:
        if _lists_moves(self.game):
            for a in self.agents:
                self.infos[a]["legal_actions"] = list(_legal(self.game, self.possible_agents.index(a), self._over))

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is None:
            seed = self._seed + 1 if self._seed is not None else int(np.random.SeedSequence().entropy % (2**31))
        self._seed = seed
        self.game.reset(seed)
        self._over = False
        self._reset_state()

    def observe(self, agent: str) -> dict[str, Any]:
        return _observation(self.game, self.possible_agents.index(agent), self._over)

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        try:
            _, rewards, terminated, truncated, info = self.game.step("" if action is None else str(action))
            error = None
        except SpadeError as exc:
            rewards, terminated, truncated, info, error = [0.0] * len(self.possible_agents), False, True, {}, str(exc)
        for i, a in enumerate(self.possible_agents):
            if a in self.rewards:
                self.rewards[a] = float(rewards[i])
        for a in self.agents:
            self.terminations[a] = terminated
            self.truncations[a] = truncated and not terminated
            self.infos[a] = dict(info) if error is None else {"error": error}
        self._over = bool(terminated or truncated)
        if not self._over:
            self.agent_selection = self.possible_agents[self.game.current_player]
        self._note_legal()
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return self.game.observe(self.game.current_player)

    def close(self) -> None:
        self.game.close()


class SpadeParallelEnv(ParallelEnv):
    """A spade game as a PettingZoo parallel environment: every agent acts each step in a
    simultaneous-move game; in a turn-based game only the agent to move does (its action
    is played, the others' are ignored; ``infos[agent]["to_move"]`` says who)."""

    metadata = {"render_modes": ["ansi"], "name": "spade_parallel_game_v0"}

    def __init__(self, game: MultiPlayerSession, *, env_id: str | None = None, render_mode: str | None = None) -> None:
        self.game = game
        self.env_id = env_id
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(game.num_players)]
        self.agents = list(self.possible_agents)
        self._obs_spaces = {a: _obs_space(game) for a in self.possible_agents}
        self._act_spaces = {a: UnicodeText() for a in self.possible_agents}
        self._seed: int | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def _observations(self, over: bool = False) -> dict[str, dict[str, Any]]:
        return {a: _observation(self.game, i, over) for i, a in enumerate(self.possible_agents) if a in self.agents}

    def _infos(self, live: list[str], base: dict[str, Any], over: bool) -> dict[str, dict[str, Any]]:
        out = {}
        for a in live:
            i = self.possible_agents.index(a)
            info = dict(base)
            info["to_move"] = not over and (self.game.simultaneous or self.game.current_player == i)
            if _lists_moves(self.game):
                info["legal_actions"] = list(_legal(self.game, i, over))
            out[a] = info
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is None:
            seed = self._seed + 1 if self._seed is not None else int(np.random.SeedSequence().entropy % (2**31))
        self._seed = seed
        self.game.reset(seed)
        self.agents = list(self.possible_agents)
        return self._observations(), self._infos(self.agents, {}, False)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        joint = [str(actions.get(a, "") or "") for a in self.possible_agents]
        try:
            move: Any = joint if self.game.simultaneous else joint[self.game.current_player]
            _, rewards, terminated, truncated, info = self.game.step(move)
            error = None
        except SpadeError as exc:
            rewards, terminated, truncated, info, error = [0.0] * len(joint), False, True, {}, str(exc)
        over = bool(terminated or truncated)
        live = list(self.agents)
        obs = self._observations(over)
        out_r = {a: float(rewards[i]) for i, a in enumerate(self.possible_agents) if a in live}
        terms = {a: terminated for a in live}
        truncs = {a: truncated and not terminated for a in live}
        infos = self._infos(live, dict(info) if error is None else {"error": error}, over)
        if over:
            self.agents = []
        return obs, out_r, terms, truncs, infos

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return self.game.observe(0 if self.game.simultaneous else self.game.current_player)

    def close(self) -> None:
        self.game.close()


def _refuse_single_player(env_id: str | None, source: str | None) -> None:
    if env_id is not None and source is None:
        from ..records import resolve_record

        record = resolve_record(env_id)
        if not is_multiplayer(record):
            raise EnvProgramError(f"{env_id} is a single-player environment: use gym.make({env_id!r})")


def make_parallel(env_id: str | None = None, *, source: str | None = None, render_mode: str | None = None,
                  **kwargs: Any) -> SpadeParallelEnv:
    """``ParallelEnv`` of a game id or ``source``, simultaneous-move or turn-based
    (``env_kwargs=``, ``trust_remote_code=`` pass through to
    :func:`~spade_envs.games.runtime.open_game`). A single-player id raises
    :class:`EnvProgramError` pointing to ``gym.make``."""
    _refuse_single_player(env_id, source)
    game = _open(env_id, source, kwargs)
    try:
        return SpadeParallelEnv(game, env_id=env_id, render_mode=render_mode)
    except SpadeError:
        game.close()
        raise


def make_aec(env_id: str | None = None, *, source: str | None = None, render_mode: str | None = None,
             **kwargs: Any) -> AECEnv:
    """PettingZoo AEC environment of a game id (``spade/Env-00025``) or ``source``.

    A single-player environment id raises :class:`EnvProgramError` pointing to
    ``gym.make``; a simultaneous-move game comes back through ``parallel_to_aec``."""
    _refuse_single_player(env_id, source)
    game = _open(env_id, source, kwargs)
    try:
        if game.simultaneous:
            return parallel_to_aec(SpadeParallelEnv(game, env_id=env_id, render_mode=render_mode))
        return SpadeAECEnv(game, env_id=env_id, render_mode=render_mode)
    except SpadeError:
        game.close()
        raise
