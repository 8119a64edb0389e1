"""Difficulty levels of registry environments, for self-play and the learning bench.

A program declaring ``PARAMETERS`` with an integer ``difficulty`` knob (the seed
ladders) has levels ``minimum..maximum``; :func:`levels_of` lists them as kwargs,
:func:`easiest` is the lowest one (``{}`` for a program without the knob: its defaults).
The source is read statically (:func:`spade_envs.parameters.schema_of`), never run.
"""

from __future__ import annotations

from typing import Any


def difficulty_spec(source: str) -> dict[str, Any] | None:
    from ..parameters import schema_of

    try:
        schema = schema_of(source, "<env>")
    except Exception:  # a malformed schema has no usable levels
        return None
    spec = ((schema or {}).get("properties") or {}).get("difficulty")
    return spec if isinstance(spec, dict) and spec.get("type") == "integer" else None


def levels_of(source: str) -> list[dict[str, Any]]:
    """``[{"difficulty": k}, ...]`` from easiest to hardest (``[{}]`` without the knob)."""
    spec = difficulty_spec(source)
    if spec is None:
        return [{}]
    lo, hi = int(spec.get("minimum", 0)), int(spec.get("maximum", spec.get("default", 0)))
    return [{"difficulty": k} for k in range(lo, hi + 1)]


def easiest(source: str) -> dict[str, Any]:
    return levels_of(source)[0]
