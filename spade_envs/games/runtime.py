"""Running multi-player games through the ordinary runtimes (in-process or the sandbox).

The runtimes speak the single-player protocol (``reset``/``step``/``solution``). A game
travels through them unchanged in meaning by :func:`adapt_source`: the game class is
renamed (an alias keeps its old name working inside the program) and a small transport
class, the program's only public ``*Env`` class, is appended. Each
:class:`MultiPlayerSession` call is one ``step`` of that transport with a JSON command
(``{"op": "observe", "args": [1]}``); the transport calls the game and answers with the
JSON-encoded result plus the game's state (player to move, every player's view). So the
sandbox runs games with all its guarantees (RestrictedPython, worker processes,
deadlines) and needs no game-specific operation, and every result is checked here, in the
caller, by :mod:`spade_envs.games.format`.

Hidden information: every player's view leaves the worker, but a session hands a player
only its own view (``observe(player)``); agents and baselines get nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import EnvExecutionError, EnvProgramError, FailureKind, SpadeError
from ..runtime import EnvRuntime, EnvSession
from ..trust import get_runtime
from .format import (
    GameInfo,
    MultiStepResult,
    check_actions,
    check_game_reset,
    check_game_step,
    check_game_text,
    check_num_players,
    check_player,
    inspect_game,
)

_GAME_PREFIX = "_SpadeGame_"
ADAPTER_CLASS = "SpadeGameTransportEnv"

# The transport runs next to the game's code, so it must not depend on anything the game
# can rebind at run time: every name it uses (json functions, builtins, the game class)
# is captured as a default argument when the transport is DEFINED, after the game's module
# body has run, and the per-instance ``step`` closure shadows the class attribute (a game
# that rebinds ``SpadeGameTransportEnv.step`` or the module's globals changes nothing).
# The caller trusts none of it anyway: :meth:`MultiPlayerSession.decode` type-checks
# every reply.
_ADAPTER = """

import json as _spade_transport_json

_spade_transport_error = RuntimeError


def _spade_transport_make(game, _loads=_spade_transport_json.loads, _dumps=_spade_transport_json.dumps,
                          _isinstance=isinstance, _bool=bool, _int=int, _tuple=tuple, _range=range,
                          _hasattr=hasattr, _getattr=getattr, _repr=repr, _ValueError=ValueError, _Exception=Exception):
    def plain(value):
        if _hasattr(value, "item"):
            try:
                return value.item()
            except _Exception:
                pass
        return _repr(value)

    def state():
        n = game.num_players
        sim = _bool(_getattr(game, "simultaneous", False))
        out = {{"num_players": n, "simultaneous": sim, "current_player": None, "views": None}}
        if _isinstance(n, _int) and not _isinstance(n, _bool) and 2 <= n <= 16:
            out["current_player"] = game.current_player()
            out["views"] = [game.observe(p) for p in _range(n)]
        return out

    def call(op, arg):
        if op == "state":
            return None
        if op == "reset":
            return game.reset(seed=arg)
        if op == "step":
            return game.step(arg)
        if op == "legal_actions":
            if not _hasattr(game, "legal_actions"):
                return None
            return game.legal_actions() if arg is None else game.legal_actions(arg)
        if op == "scripted_action":
            return game.scripted_action() if arg is None else game.scripted_action(arg)
        if op == "hint":
            if not _hasattr(game, "hint"):
                return None
            return game.hint() if arg is None else game.hint(arg)
        if op == "solution":
            return game.solution()
        if op == "close":
            if _hasattr(game, "close"):
                game.close()
            return None
        raise _ValueError("unknown transport operation " + _repr(op))

    def step(action):
        command = _loads(action)
        op = command["op"]
        value = call(op, (command.get("args") or [None])[0])
        out = {{"tuple": _isinstance(value, _tuple), "value": value}}
        if op in ("state", "reset", "step"):
            out["state"] = state()
        return _dumps(out, default=plain), 0.0, False, False, {{}}

    return step


class {adapter}:
    \"\"\"Transport of a multi-player game through a single-player runtime (spade-envs).\"\"\"

    def __init__(self, _make=_spade_transport_make, _game_class={game}, **kwargs):
        self.step = _make(_game_class(**kwargs))

    def reset(self, seed=None):
        return "", {{}}

    def solution(self):
        return ""

    def step(self, action):
        raise _spade_transport_error("the game transport was not constructed")
"""


def adapt_source(source: str, info: GameInfo) -> str:
    """The program the runtimes execute for a game: the game class renamed (aliased back
    to its name right after its body) and the transport class appended. Line numbers of
    the game's own code are unchanged."""
    lines = source.splitlines()
    index = info.class_line - 1
    pattern = re.compile(rf"\bclass\s+{re.escape(info.class_name)}\b")
    if not 0 <= index < len(lines) or not pattern.search(lines[index]):
        raise EnvProgramError(f"cannot locate 'class {info.class_name}' on line {info.class_line}")
    game = _GAME_PREFIX + info.class_name
    lines[index] = pattern.sub(f"class {game}", lines[index], count=1)
    end = info.class_end_line
    lines.insert(end, f"{info.class_name} = {game}")
    return "\n".join(lines) + "\n" + _ADAPTER.format(adapter=ADAPTER_CLASS, game=game)


class MultiPlayerSession:
    """One live game. Every value is checked (:mod:`spade_envs.games.format`); methods
    raise :class:`EnvProgramError` (the game broke the format) or
    :class:`EnvExecutionError` (it raised, hung or broke a limit), nothing else.

    After ``reset``/``step``, :attr:`current_player`, :attr:`num_players`,
    :attr:`simultaneous` and each player's view (:meth:`observe`) are cached."""

    def __init__(self, session: EnvSession, runtime: EnvRuntime, info: GameInfo) -> None:
        self.session = session
        self.runtime = runtime
        self.info = info
        self.num_players = 0
        self.simultaneous = False
        self.current_player = 0
        self._views: list[str] = []
        self.closed = False
        self._call("state")

    # -- transport -----------------------------------------------------------------------
    def command(self, op: str, *args: Any) -> str:
        return json.dumps({"op": op, "args": list(args) or [None]}, ensure_ascii=False)

    def decode(self, op: str, result: Any) -> Any:
        """The game's value from a transport step result (and the cached state updated).

        Nothing in the reply is trusted: it must be a JSON object ``{"tuple": bool,
        "value": ..., "state": {...}}``; anything else fails this session with
        :class:`EnvProgramError`, never another exception."""
        if isinstance(result, SpadeError):
            raise _named(op, result)
        try:
            text = result[0]
            if not isinstance(text, str):
                raise TypeError
            payload = json.loads(text)
        except (TypeError, ValueError, IndexError, KeyError, RecursionError):
            raise EnvProgramError(f"{op}(): the game transport returned malformed data") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("tuple", False), bool):
            raise EnvProgramError(f"{op}(): the game transport returned malformed data")
        if op in ("state", "reset", "step"):
            self._set_state(payload.get("state"))
        value = payload.get("value")
        return tuple(value) if payload.get("tuple") and isinstance(value, list) else value

    def _call(self, op: str, *args: Any) -> Any:
        if self.closed:
            raise EnvExecutionError("this game session is closed", kind=FailureKind.CLOSED)
        try:
            result = self.session.step(self.command(op, *args))
        except SpadeError as exc:
            result = exc
        return self.decode(op, result)

    def _set_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise EnvProgramError("the game transport returned a malformed state")
        self.num_players = check_num_players(state.get("num_players"))
        sim = state.get("simultaneous")
        if not isinstance(sim, bool):
            raise EnvProgramError("the game transport returned a malformed state")
        self.simultaneous = sim
        if self.simultaneous:
            self.current_player = 0
        else:
            self.current_player = check_player(state.get("current_player"), self.num_players)
        views = state.get("views")
        if not isinstance(views, list) or len(views) != self.num_players:
            raise EnvProgramError("observe(player) must work for every player")
        self._views = [check_game_text(v, f"observe({p})") for p, v in enumerate(views)]

    # -- the game API --------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[str, dict]:
        return check_game_reset(self._call("reset", seed))

    def step(self, action: str | Sequence[str]) -> MultiStepResult:
        """The player to move acts (``action``: str); for a simultaneous game ``action``
        is a list with one action per player."""
        return check_game_step(self._call("step", self.encode_action(action)), self.num_players)

    def encode_action(self, action: str | Sequence[str]) -> Any:
        if self.simultaneous:
            if isinstance(action, str) or len(action) != self.num_players:
                raise EnvProgramError(f"a simultaneous game takes a list of {self.num_players} actions per step")
            return [str(a) for a in action]
        if not isinstance(action, str):
            raise EnvProgramError("a turn-based game takes one action (str) per step")
        return action

    def observe(self, player: int) -> str:
        """``player``'s current view (cached since the last reset/step)."""
        check_player(player, self.num_players, "observe(player)")
        return self._views[player]

    def views(self) -> list[str]:
        return list(self._views)

    def legal_actions(self, player: int | None = None) -> list[str] | None:
        value = self._call("legal_actions", player)
        return None if value is None else check_actions(value, "legal_actions()")

    def scripted_action(self, player: int | None = None) -> str:
        return check_game_text(self._call("scripted_action", player), "scripted_action()")

    def hint(self, player: int | None = None) -> str | None:
        value = self._call("hint", player)
        return None if value is None else check_game_text(value, "hint()")

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._call("close")
            self.session.close()
        except SpadeError:
            pass
        finally:
            self.closed = True


def _named(op: str, exc: SpadeError) -> SpadeError:
    """The runtime's error, re-attributed to the game method that caused it."""
    text = re.sub(r"^step\(\)\s*", "", str(exc))
    if isinstance(exc, EnvExecutionError):
        return EnvExecutionError(f"{op}(): {text}", kind=exc.kind)
    if isinstance(exc, EnvProgramError):
        return EnvProgramError(f"{op}(): {text}", stage=exc.stage)
    return exc


def open_game(
    env_id: str | None = None,
    *,
    source: str | None = None,
    kwargs: dict[str, Any] | None = None,
    runtime: EnvRuntime | None = None,
    trust_remote_code: bool = False,
    filename: str | None = None,
) -> MultiPlayerSession:
    """Open a game by registry id (seeds run in-process, anything else in the sandbox) or
    from ``source`` (the sandbox unless ``trust_remote_code=True``)."""
    if (env_id is None) == (source is None):
        raise ValueError("give exactly one of env_id or source=")
    trusted = False
    if env_id is not None:
        from ..records import resolve_record

        record = resolve_record(env_id)
        source, trusted = record.source, record.trusted
        filename = filename or record.metadata.get("file", str(record.env_id))
    assert source is not None
    name = filename or "<game>"
    info = inspect_game(source, name)
    runtime = runtime or get_runtime(trusted=trusted, trust_remote_code=trust_remote_code)
    session = runtime.open(adapt_source(source, info), kwargs=kwargs, filename=name)
    try:
        return MultiPlayerSession(session, runtime, info)
    except SpadeError:
        try:
            session.close()
        except SpadeError:
            pass
        raise
