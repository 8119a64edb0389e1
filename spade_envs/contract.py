"""Checks of the values an environment program returns (DESIGN.md section 3).

One place decides what a valid ``reset``/``step``/``solution``/``hint`` result is, so the
in-process runtime, the sandbox worker and the acceptance pipeline agree; which check
belongs to which method is declared in :mod:`spade_envs.format_spec`. Each check raises
:class:`~spade_envs.errors.EnvProgramError` (stage ``interface``) with a message that
names the problem, and returns the normalised value.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import EnvProgramError

#: Longest observation or action (characters); the spaces of :mod:`.spaces` admit as much.
#: Defined here, not there, so that the checks load without gymnasium (sandbox zygote).
MAX_TEXT_CHARS = 65536

ResetResult = tuple[str, dict]
StepResult = tuple[str, float, bool, bool, dict]


def check_observation(obs: Any, where: str) -> str:
    if not isinstance(obs, str):
        raise EnvProgramError(f"{where} must return a str observation, got {type(obs).__name__}")
    if len(obs) > MAX_TEXT_CHARS:
        raise EnvProgramError(f"{where} returned an observation of {len(obs)} characters (limit {MAX_TEXT_CHARS})")
    return obs


#: key added to an ``info`` dict whose non-finite floats were replaced by None
INFO_NOTE_KEY = "spade_note"
_MAX_DEPTH = 32
_MAX_NODES = 100_000


#: dict keys JSON carries (numbers and bools become strings); any other key is dropped
_PLAIN_KEYS = (str, int, float, bool)


def _key_text(key: Any) -> str:
    try:
        text = repr(key)
    except Exception:  # noqa: BLE001 - a hostile __repr__
        text = "?"
    return text if len(text) <= 40 else text[:37] + "..."


def _has_non_finite(info: dict) -> bool:
    """True when a non-finite float is nested in ``info`` (dicts, lists, tuples; at most
    :data:`_MAX_NODES` values looked at: a larger info is left to the transport's checks)."""
    stack: list[Any] = [info]
    seen = 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        if isinstance(node, dict) and any(type(k) not in _PLAIN_KEYS for k in node):
            return True  # a key that cannot cross as JSON: cleaned with the floats
        values = node.values() if isinstance(node, dict) else node
        for value in values:
            seen += 1
            if type(value) is float or isinstance(value, float):
                if value != value or value in (math.inf, -math.inf):
                    return True
            elif isinstance(value, (dict, list, tuple)) and len(stack) < _MAX_DEPTH * 64:
                stack.append(value)
    return False


def _finite(value: Any, path: str, found: list[str], depth: int) -> Any:
    """``value`` with non-finite floats (nested in dicts, lists, tuples) replaced by None;
    the paths replaced are appended to ``found``."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        found.append(path)
        return None
    if depth >= _MAX_DEPTH or not isinstance(value, (dict, list, tuple)):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if type(k) not in _PLAIN_KEYS:  # SPADE's info is aggregated, never sent: ours crosses as JSON
                found.append(f"{path}[{_key_text(k)}] (key dropped: a {type(k).__name__} key)")
                continue
            out[k] = _finite(v, f"{path}[{k!r}]", found, depth + 1)
        return out
    seq = [_finite(v, f"{path}[{i}]", found, depth + 1) for i, v in enumerate(value)]
    return seq if isinstance(value, list) else tuple(seq)


def check_info(info: Any, where: str) -> dict:
    """``info`` must be a dict. Non-finite floats inside it are replaced by None (as
    SPADE's loader tolerates them; JSON cannot carry them), keys JSON cannot carry (not a
    str, int, float or bool: a tuple, None) are dropped (SPADE drops what it cannot use),
    and the copy gets a note under :data:`INFO_NOTE_KEY` naming where; only a non-finite
    *reward* fails."""
    if not isinstance(info, dict):
        raise EnvProgramError(f"{where} must return info as a dict, got {type(info).__name__}")
    if not info or not _has_non_finite(info):
        return info
    found: list[str] = []
    clean = _finite(info, "info", found, 0)
    if not found:
        return info
    shown = ", ".join(found[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
    what = "non-finite float(s) replaced by None" if any("key dropped" not in f for f in found) else "info cleaned"
    return {**clean, INFO_NOTE_KEY: f"{where}: {what} at {shown}"}


def check_reset_result(result: Any) -> ResetResult:
    """``reset`` must return ``(observation: str, info: dict)``; a bare string is read as
    ``(observation, {})``, as SPADE's loader reads it."""
    if isinstance(result, str):
        return check_observation(result, "reset()"), {}
    if not isinstance(result, tuple) or len(result) != 2:
        got = f"a {len(result)}-tuple" if isinstance(result, tuple) else type(result).__name__
        raise EnvProgramError(f"reset() must return a 2-tuple (observation, info), got {got}")
    return check_observation(result[0], "reset()"), check_info(result[1], "reset()")


def check_step_result(result: Any) -> StepResult:
    """``step`` must return ``(obs: str, reward: float, terminated: bool, truncated: bool,
    info: dict)``; the reward must be a finite real number and comes back as it is (SPADE
    clips only the episode's reward, its last one, to [-1, 1]: ``episode_reward``)."""
    if not isinstance(result, tuple) or len(result) != 5:
        got = f"a {len(result)}-tuple" if isinstance(result, tuple) else type(result).__name__
        raise EnvProgramError(
            f"step() must return a 5-tuple (obs, reward, terminated, truncated, info), got {got}"
        )
    obs, reward, terminated, truncated, info = result
    check_observation(obs, "step()")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        # numpy scalars are real numbers too
        if not (hasattr(reward, "dtype") and getattr(reward.dtype, "kind", "") in "iuf"):
            raise EnvProgramError(f"step() reward must be a number, got {type(reward).__name__}")
    reward = float(reward)
    if not math.isfinite(reward):
        raise EnvProgramError(f"step() returned a non-finite reward ({reward})")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool) and not (hasattr(flag, "dtype") and flag.dtype.kind == "b"):
            raise EnvProgramError(f"step() {name} must be a bool, got {type(flag).__name__}")
    info = check_info(info, "step()")
    return obs, reward, bool(terminated), bool(truncated), info


def episode_reward(rewards: list[float]) -> float:
    """SPADE's episode reward (``utils/rewards.py``): the last step's reward clipped to
    [-1, 1]; 0.0 for an episode with no step."""
    return max(-1.0, min(1.0, float(rewards[-1]))) if rewards else 0.0


def check_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise EnvProgramError(f"{where} must return a str, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise EnvProgramError(f"{where} returned {len(value)} characters (limit {MAX_TEXT_CHARS})")
    return value


def check_solution_result(value: Any) -> str:
    """``solution()`` must return a str of capped length (a session ``str()``s other
    values first, as SPADE does)."""
    return check_text(value, "solution()")


def check_hint_result(value: Any) -> str | None:
    """``hint()``: a str of capped length, or None (no hint)."""
    return None if value is None else check_text(value, "hint()")
