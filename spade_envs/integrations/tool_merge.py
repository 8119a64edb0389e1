"""One tool list for every seed of an environment (the TRL adapter's classes, whose
tools TRL reads once per class): :func:`merge_tool_specs`."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any


def merge_tool_specs(spec_lists: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One tool list for every seed of an environment: tools by name in first-seen order;
    a tool whose spec differs between seeds keeps the first spec with each differing
    property merged (enums united; otherwise the first schema without its enum), and only
    the parameters every seed requires stay required. The environment still validates
    each call against the episode's own spec."""
    merged: dict[str, dict[str, Any]] = {}
    for specs in spec_lists:
        for spec in specs:
            name = spec["function"]["name"]
            if name not in merged:
                merged[name] = copy.deepcopy(spec)
                continue
            have = merged[name]["function"].setdefault("parameters", {"type": "object", "properties": {}})
            new = spec["function"].get("parameters") or {}
            props = have.setdefault("properties", {})
            for pname, pschema in (new.get("properties") or {}).items():
                props[pname] = _merge_schema(props[pname], pschema) if pname in props else copy.deepcopy(pschema)
            if "required" in have or "required" in new:
                have["required"] = [r for r in have.get("required", []) if r in set(new.get("required", []))]
    return list(merged.values())


def _merge_schema(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if a == b:
        return a
    out = copy.deepcopy(a)
    if isinstance(a.get("enum"), list) and isinstance(b.get("enum"), list):
        out["enum"] = list(a["enum"]) + [v for v in b["enum"] if v not in a["enum"]]
    elif "enum" in out:
        out.pop("enum")
    if isinstance(a.get("items"), dict) and isinstance(b.get("items"), dict):
        out["items"] = _merge_schema(a["items"], b["items"])
    return out
