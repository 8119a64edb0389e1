"""Tool-schema spellings SPADE's loader runs and JSON Schema does not allow (DESIGN.md section 3).

SPADE never validates a program's tool specs, so its designers' output sometimes marks a
parameter required the draft-3 way, on the property itself::

    {"type": "object", "properties": {"city": {"type": "string", "required": true}}}

In JSON Schema 2020-12 ``required`` is a list on the *object*. :func:`lift_property_required`
moves each property-level boolean ``required`` into its object's ``required`` list
(``true`` adds the name, ``false`` only drops the keyword), recursively through nested
object schemas, and says what it moved, like the Python type-name mapping of
:mod:`spade_envs.tools`. Anything else is left for the meta-schema check to judge.
"""

from __future__ import annotations

from typing import Any

_MAX_DEPTH = 64
#: keywords whose value is one schema or a list of schemas
_SUBSCHEMA_KEYS = ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "prefixItems")


def lift_property_required(schema: Any, notes: list[str], _depth: int = 0) -> Any:
    """A copy of ``schema`` with property-level boolean ``required`` lifted into the
    object's ``required`` list; each lifted property is appended to ``notes``."""
    if _depth > _MAX_DEPTH:
        return schema
    if isinstance(schema, list):
        return [lift_property_required(s, notes, _depth + 1) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, dict):
        new_props: dict[str, Any] = {}
        lifted: list[str] = []
        for name, prop in props.items():
            if isinstance(prop, dict) and isinstance(prop.get("required"), bool):
                prop_required = prop["required"]
                prop = {k: v for k, v in prop.items() if k != "required"}
                if prop_required:
                    lifted.append(name)
                notes.append(f"{name}: required={str(bool(prop_required)).lower()} lifted to the object")
            new_props[name] = lift_property_required(prop, notes, _depth + 1)
        out["properties"] = new_props
        if lifted:
            have = schema.get("required")
            base = list(have) if isinstance(have, list) else []
            out["required"] = base + [n for n in lifted if n not in base]
    for key in _SUBSCHEMA_KEYS:
        if key in schema and isinstance(schema[key], (dict, list)):
            out[key] = lift_property_required(schema[key], notes, _depth + 1)
    return out
