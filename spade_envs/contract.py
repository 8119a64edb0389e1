"""Checks of the values an environment program returns (DESIGN.md section 3).

One place decides what a valid ``reset``/``step`` result is, so the in-process runtime,
the sandbox worker and the acceptance pipeline agree. Each check raises
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


def check_info(info: Any, where: str) -> dict:
    if not isinstance(info, dict):
        raise EnvProgramError(f"{where} must return info as a dict, got {type(info).__name__}")
    return info


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
    info: dict)``; the reward must be a finite real number and is clipped to [-1, 1]."""
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
    check_info(info, "step()")
    return obs, max(-1.0, min(1.0, reward)), bool(terminated), bool(truncated), info


def check_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise EnvProgramError(f"{where} must return a str, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise EnvProgramError(f"{where} returned {len(value)} characters (limit {MAX_TEXT_CHARS})")
    return value
