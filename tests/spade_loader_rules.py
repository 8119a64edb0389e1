"""A small reimplementation, for tests only, of the rules SPADE's loader applies to a
generated program (spade-rl/spade ``spare/core/envs/synthetic_game_env.py``), written
from its documented behaviour so that drift between spade-envs and SPADE shows:

- the names SPADE pre-injects are available without import, and ``ToolUseBaseEnv``
  (here spade-envs' own class: the rules, not the base class, are under test), also
  importable as ``from tool_use_base_env import ToolUseBaseEnv`` (SPADE aliases the module);
- the game class is the first module-level name ending in ``Env`` that is not ``Env`` or
  ``ToolUseBaseEnv`` and is callable;
- it is built with ``max_turns=N``, or without arguments when that raises ``TypeError``;
- it must have ``reset`` and ``step`` (``solution`` is not required);
- ``reset(seed=42)`` returns ``(obs, info)`` or a bare string; ``obs`` a non-empty str,
  ``info`` a dict;
- ``step`` on ``\\boxed{1}``, ``\\boxed{test}``, ``\\boxed{42}`` (stopping when the episode
  ends) returns a 5-tuple (str, int|float, bool, bool, dict) with reward in [-10, 10];
- ``reset(seed=123)`` works again.

Trusted test programs only: this executes them with the real interpreter.
"""

from __future__ import annotations

import collections
import copy
import functools
import heapq
import itertools
import json
import math
import operator
import random
import re
import statistics
import string
import typing
from typing import Any

import numpy as np

_INJECTED: dict[str, Any] = {
    "itertools": itertools, "math": math, "random": random, "re": re, "json": json,
    "collections": collections, "functools": functools, "string": string, "copy": copy,
    "heapq": heapq, "operator": operator, "statistics": statistics, "np": np, "numpy": np,
    "deque": collections.deque, "defaultdict": collections.defaultdict, "Counter": collections.Counter,
    "OrderedDict": collections.OrderedDict, "namedtuple": collections.namedtuple,
    "combinations": itertools.combinations, "permutations": itertools.permutations,
    "product": itertools.product, "chain": itertools.chain, "accumulate": itertools.accumulate,
    "reduce": functools.reduce, "lru_cache": functools.lru_cache, "deepcopy": copy.deepcopy,
    "heappush": heapq.heappush, "heappop": heapq.heappop,
    **{n: getattr(typing, n) for n in ("Tuple", "Dict", "List", "Optional", "Union", "Any", "Set",
                                       "FrozenSet", "Callable", "Iterable", "Sequence", "Mapping")},
}
TEST_ACTIONS = ("\\boxed{1}", "\\boxed{test}", "\\boxed{42}")


class SpadeLoadError(Exception):
    pass


def spade_load(code: str, max_turns: int = 25) -> Any:
    """The game instance SPADE's rules would accept, or :class:`SpadeLoadError`."""
    import sys

    from spade_envs import toolbase
    from spade_envs.toolbase import ToolUseBaseEnv

    import types

    sys.modules.setdefault("tool_use_base_env", toolbase)
    module = types.ModuleType("dynamic_game")  # SPADE registers its module: dataclasses look it up
    sys.modules["dynamic_game"] = module
    namespace: dict[str, Any] = module.__dict__
    for name, obj in _INJECTED.items():
        namespace.setdefault(name, obj)
    namespace["ToolUseBaseEnv"] = ToolUseBaseEnv
    try:
        exec(compile(code, "<game>", "exec"), namespace)  # noqa: S102 - trusted test programs
    except Exception as exc:
        raise SpadeLoadError(f"exec: {type(exc).__name__}: {exc}") from None
    cls = next((obj for name, obj in namespace.items()
                if name.endswith("Env") and name not in ("Env", "ToolUseBaseEnv") and callable(obj)), None)
    if cls is None:
        raise SpadeLoadError("no class ending with 'Env'")
    try:
        try:
            game = cls(max_turns=max_turns)
        except TypeError:
            game = cls()
    except Exception as exc:
        raise SpadeLoadError(f"instantiate: {exc}") from None
    for method in ("reset", "step"):
        if not hasattr(game, method):
            raise SpadeLoadError(f"missing {method}")
    try:
        _check_reset(game.reset(seed=42))
        for action in TEST_ACTIONS:
            result = game.step(action)
            if not isinstance(result, tuple) or len(result) != 5:
                raise SpadeLoadError("step() must return a 5-tuple")
            obs, reward, terminated, truncated, info = result
            if not (isinstance(obs, str) and isinstance(reward, (int, float)) and isinstance(terminated, bool)
                    and isinstance(truncated, bool) and isinstance(info, dict)):
                raise SpadeLoadError("step() returned wrong types")
            if not -10 <= reward <= 10:
                raise SpadeLoadError("reward out of range")
            if terminated or truncated:
                break
        game.reset(seed=123)
    except SpadeLoadError:
        raise
    except Exception as exc:
        raise SpadeLoadError(f"play: {type(exc).__name__}: {exc}") from None
    return game


def _check_reset(result: Any) -> None:
    if isinstance(result, tuple) and len(result) == 2:
        obs, info = result
    elif isinstance(result, str):
        obs, info = result, {}
    else:
        raise SpadeLoadError("reset() returned an invalid type")
    if not isinstance(obs, str) or not obs:
        raise SpadeLoadError("empty or non-string observation")
    if not isinstance(info, dict):
        raise SpadeLoadError("info must be a dict")
