r"""The multi-player program format (DESIGN.md section 3, extended for games).

A multi-player game is ONE Python source file, like any environment, whose single public
``*Env`` class follows this contract (players are numbered ``0 .. num_players - 1``)::

    METADATA = {"name": ..., "skill": "multi-agent game", "num_players": 2,
                "tags": ["zero-sum" | "cooperative", "perfect-information" | "hidden-information", ...]}

    class DuelEnv:
        num_players = 2                     # int >= 2: class attribute, property or set in __init__
        simultaneous = False                # True: every player acts at every step (see step)
        def __init__(self, max_turns=40, **kwargs): ...   # stores settings, then calls self.reset()
        def reset(self, seed=None):         # -> (observation of the player to move: str, info: dict)
        def current_player(self):           # -> int: the player to move (0 for simultaneous games)
        def observe(self, player):          # -> str: what `player` sees now. Hidden information of
                                            #    the other players never appears in it.
        def step(self, action):             # the player to move acts; simultaneous games receive a
                                            #    list with one action per player, in player order.
                                            # -> (obs: str, rewards: list[float] one per player,
                                            #     terminated: bool, truncated: bool, info: dict)
                                            #    obs is observe(current_player()) after the move.
        def scripted_action(self, player=None):  # -> str: the baseline strategy's move for `player`
                                            #    (default: the player to move)
        def solution(self):                 # -> str: scripted_action() (keeps single-player
                                            #    tooling that reads programs working)
        # optional
        def legal_actions(self, player=None):    # -> list[str]: the legal moves (random baseline)
        def hint(self, player=None):        # -> str: privileged advice for `player`
        def close(self): ...

Rules, checked by :func:`check_game_step` and by the game stages of acceptance
(:mod:`spade_envs.designer.acceptance.game_stages`):

- actions are text, final moves as ``\boxed{...}``; an invalid action never raises: the
  game answers with an observation saying why (its rule may be a retry, a forfeited turn
  or a loss, stated in the observation);
- EVERY ``step`` call, valid or not, counts towards ``max_turns``: the game terminates or
  truncates within ``max_turns`` steps, whatever the players send;
- ``rewards`` has one finite number per player, in [-1, 1] after clipping; a player's
  return is the sum of its rewards. Zero-sum games give +1 / -1 (0 each for a draw) at the
  end; cooperative games give every player the same reward (1.0 for success);
- ``info`` is seen by every player: hidden information never goes there;
- the same seed gives the same game; ``reset`` of the same instance replays it;
- stdlib plus the SPADE prelude names only, like every program (it runs in the sandbox).

This module is the static side (detection, :func:`inspect_game`) and the value checks;
:mod:`spade_envs.games.runtime` runs games through the ordinary runtimes.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

from ..contract import check_text
from ..errors import EnvProgramError
from ..format_spec import GAME_METHODS, required_methods
from ..program import parse_source, source_sha256

#: methods every multi-player ``*Env`` class defines (declared in :data:`spade_envs.format_spec.GAME_METHODS`)
REQUIRED_METHODS = required_methods(methods=GAME_METHODS)
#: the most players a game may declare
MAX_PLAYERS = 16
#: METADATA tags that name the payoff structure and the information structure
PAYOFF_TAGS = ("zero-sum", "cooperative", "general-sum")
INFORMATION_TAGS = ("perfect-information", "hidden-information")

#: the format as the designer model should read it (its game mode puts this in the prompt)
FORMAT_PROMPT = __doc__.split("Rules, checked")[0].strip() + "\n\n" + (
    "An invalid action must not raise; every step() counts towards max_turns; rewards is a "
    "list with one number per player; info must not carry hidden information."
)

MultiStepResult = tuple[str, list[float], bool, bool, dict]


@dataclass(frozen=True)
class GameInfo:
    """What can be learnt about a game source without running it."""

    class_name: str
    metadata: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    methods: frozenset[str] = frozenset()
    class_line: int = 0  # line of the ``class`` statement (1-based)
    class_end_line: int = 0

    @property
    def num_players(self) -> int | None:
        value = self.metadata.get("num_players")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def tags(self) -> list[str]:
        tags = self.metadata.get("tags") or []
        return [str(t) for t in tags] if isinstance(tags, (list, tuple)) else []

    @property
    def cooperative(self) -> bool:
        return "cooperative" in self.tags


def metadata_players(metadata: dict[str, Any] | None) -> int:
    """``METADATA["num_players"]`` as an int (1 when absent or malformed)."""
    value = (metadata or {}).get("num_players", 1)
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 1


def is_multiplayer(record_or_metadata: Any) -> bool:
    """True for a registry record (``EnvRecord``) or a METADATA dict of a game with two or
    more players: the one-line filter single-player suites use to skip games."""
    metadata = getattr(record_or_metadata, "metadata", record_or_metadata)
    return metadata_players(metadata if isinstance(metadata, dict) else None) > 1


def _env_class(tree: ast.Module) -> ast.ClassDef | None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    env = [c for c in classes if c.name.endswith("Env") and not c.name.startswith("_")]
    return env[0] if len(env) == 1 else None


def _metadata(tree: ast.Module) -> dict[str, Any]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "METADATA" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def is_multiplayer_source(source: Any) -> bool:
    """True when ``source`` declares a multi-player game: ``METADATA["num_players"] > 1``,
    or its ``*Env`` class defines ``current_player`` and ``observe``, or has a
    ``num_players`` class attribute. Never raises (an unparsable source is not a game)."""
    try:
        tree = parse_source(source)
    except EnvProgramError:
        return False
    if metadata_players(_metadata(tree)) > 1:
        return True
    cls = _env_class(tree)
    if cls is None:
        return False
    names = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assigned = {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return {"current_player", "observe"} <= names or "num_players" in assigned | names


def inspect_game(source: Any, filename: str = "<game>") -> GameInfo:
    """Parse a game source and find its class; raise :class:`EnvProgramError` (stage
    ``syntax`` or ``interface``) naming the problem otherwise."""
    tree = parse_source(source, filename)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    env = [c for c in classes if c.name.endswith("Env") and not c.name.startswith("_")]
    if len(env) != 1:
        raise EnvProgramError(f"{filename}: a game defines exactly one public class whose name ends in 'Env' "
                              f"(found {len(env)})")
    cls = env[0]
    local = {c.name: c for c in classes}
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in local:
            methods |= {n.name for n in local[base.id].body if isinstance(n, ast.FunctionDef)}
    missing = [m for m in REQUIRED_METHODS if m not in methods]
    if missing:
        raise EnvProgramError(
            f"{filename}: multi-player game class {cls.name} lacks required method(s): "
            + ", ".join(f"{m}()" for m in missing)
            + " (see spade_envs.games.format for the game format)"
        )
    metadata = _metadata(tree)
    declared = metadata.get("num_players", None)
    if declared is not None and (not isinstance(declared, int) or isinstance(declared, bool) or declared < 2):
        raise EnvProgramError(f"{filename}: METADATA['num_players'] must be an int >= 2, got {declared!r}")
    return GameInfo(
        class_name=cls.name, metadata=metadata, sha256=source_sha256(source), methods=frozenset(methods),
        class_line=cls.lineno, class_end_line=cls.end_lineno or cls.lineno,
    )


# -- value checks (one place; the runtime session applies them to every result) --------
def check_num_players(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_PLAYERS:
        raise EnvProgramError(f"num_players must be an int between 2 and {MAX_PLAYERS}, got {value!r}")
    return value


def check_player(value: Any, num_players: int, where: str = "current_player()") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < num_players:
        raise EnvProgramError(f"{where} must return a player index in 0..{num_players - 1}, got {value!r}")
    return value


#: text results of games obey the single-player rule (a str of capped length)
check_game_text = check_text


def check_game_reset(result: Any) -> tuple[str, dict]:
    if not isinstance(result, tuple) or len(result) != 2:
        raise EnvProgramError(f"reset() must return a 2-tuple (observation, info), got {_shape(result)}")
    obs, info = result
    if not isinstance(info, dict):
        raise EnvProgramError(f"reset() must return info as a dict, got {type(info).__name__}")
    return check_game_text(obs, "reset() observation"), info


def check_game_step(result: Any, num_players: int) -> MultiStepResult:
    """``step`` must return ``(obs: str, rewards: list of num_players finite numbers,
    terminated: bool, truncated: bool, info: dict)``; rewards are clipped to [-1, 1]."""
    if not isinstance(result, tuple) or len(result) != 5:
        raise EnvProgramError(
            f"step() of a game must return a 5-tuple (obs, rewards, terminated, truncated, info), got {_shape(result)}"
        )
    obs, rewards, terminated, truncated, info = result
    check_game_text(obs, "step() observation")
    if not isinstance(rewards, (list, tuple)) or len(rewards) != num_players:
        raise EnvProgramError(
            f"step() of a {num_players}-player game must return rewards as a list of {num_players} numbers "
            f"(one per player), got {_short(rewards)}"
        )
    clean = []
    for r in rewards:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r):
            raise EnvProgramError(f"step() rewards must be finite numbers, got {_short(rewards)}")
        clean.append(max(-1.0, min(1.0, float(r))))
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool):
            raise EnvProgramError(f"step() {name} must be a bool, got {type(flag).__name__}")
    if not isinstance(info, dict):
        raise EnvProgramError(f"step() info must be a dict, got {type(info).__name__}")
    return obs, clean, terminated, truncated, info


def check_actions(value: Any, where: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(a, str) for a in value):
        raise EnvProgramError(f"{where} must return a list of str, got {_short(value)}")
    return list(value)


def _shape(value: Any) -> str:
    return f"a {len(value)}-tuple" if isinstance(value, tuple) else type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
