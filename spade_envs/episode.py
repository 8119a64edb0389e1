r"""What the Gymnasium wrapper records about an episode, and the rules for its inputs.

- :func:`coerce_action`: ``step`` takes text. A ``str`` (numpy ``str_`` included) passes
  as is; ``bytes`` are decoded as UTF-8; anything else is refused with
  :class:`InvalidActionError` (a ``TypeError`` too) naming the type and what to send.
  Numbers are NOT converted silently: ``42`` is refused, ``"\\boxed{42}"`` is an action.
- :func:`coerce_seed`: ``reset(seed=)`` takes ``None`` or an int (numpy ints included).
- :class:`EpisodeLog`: the seed of the last ``reset`` and every action since, so the
  environment can be pickled as (id/version or source) + episode and replayed elsewhere.
- :func:`end_reason`: why an episode ended, for ``info``: ``terminated_by`` is ``"env"``
  (the program reached a terminal state); ``truncated_by`` is ``"max_turns"`` (the
  program's own turn limit: ``max_turns`` from the constructor kwargs or its default),
  ``"env"`` (the program truncated for another reason), or the verdict of a failure
  (``"timeout"``, ``"crash"``, ``"memory"``, ``"error"``, ...).

After an episode ended (``terminated`` or ``truncated``), ``step`` without ``reset`` raises
:class:`~spade_envs.errors.EpisodeOverError`; the runtime's sessions keep that rule for
every environment (:mod:`spade_envs.runtime`), the wrapper for a failed episode.
"""

from __future__ import annotations

import ast
import numbers
from dataclasses import dataclass, field
from typing import Any

from . import pyast
from .errors import SpadeError


class InvalidActionError(SpadeError, TypeError):
    """``reset``/``step`` got an input of the wrong type."""


def coerce_action(action: Any) -> str:
    if isinstance(action, str):
        return str(action)
    if isinstance(action, (bytes, bytearray)):
        try:
            return bytes(action).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidActionError("step() got bytes that are not UTF-8; send the action as text (str)") from None
    raise InvalidActionError(
        f"step() takes the action as text (str), got {type(action).__name__} {_short(action)}; "
        "send the move as the environment asks for it, e.g. '\\boxed{42}'"
    )


def coerce_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidActionError(f"reset(seed=) takes None or an int, got {type(seed).__name__} {_short(seed)}")
    return int(seed)


@dataclass
class EpisodeLog:
    """The episode so far: ``seed`` of the last reset (None before any) and its actions."""

    seed: int | None = None
    started: bool = False
    actions: list[str] = field(default_factory=list)

    def reset(self, seed: int) -> None:
        self.seed, self.started, self.actions = seed, True, []

    @property
    def turns(self) -> int:
        return len(self.actions)


def constructor_default(source: str, class_name: str | None, name: str) -> Any:
    """The literal default of ``name`` in ``class_name.__init__`` (None when absent or
    not a literal). Static: never runs the program."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (class_name is None or node.name == class_name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    positional = args.posonlyargs + args.args
                    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
                    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                    for arg, default in pairs:
                        if arg.arg == name:
                            try:
                                return ast.literal_eval(default)
                            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                                return None
    return None


def end_reason(info: dict, terminated: bool, truncated: bool, turns: int, max_turns: Any) -> dict:
    """``info`` with ``turn`` (step calls since reset) and, when the episode ended,
    ``terminated_by``/``truncated_by``
    (the program's own values win when it set them)."""
    out = dict(info)
    out["turn"] = turns
    if terminated:
        out.setdefault("terminated_by", "env")
    elif truncated:
        limit = max_turns if isinstance(max_turns, int) and not isinstance(max_turns, bool) else None
        out.setdefault("truncated_by", "max_turns" if limit is not None and turns >= limit else "env")
    return out


def _short(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the real error
        text = "<unprintable>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
