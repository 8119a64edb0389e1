"""Typed Python methods generated from OpenAI tool specs, for frameworks that read tools
from functions (TRL's ``environment_factory`` renders them with transformers'
``get_json_schema``: type hints + a Google-style docstring).

Contract of :func:`make_tool_method`: ``transformers.utils.get_json_schema(method)``
equals :func:`visible_tool_schema` of the spec, which is the spec itself except for what
a Python signature cannot carry:

- validation-only JSON Schema keywords (:data:`VALIDATION_ONLY_KEYWORDS`: ``pattern``,
  ``minLength``, ``maximum``, ``additionalProperties: false`` ...) are dropped from what
  the model sees. They are still enforced: every call is validated against the ORIGINAL
  spec by the environment before the tool runs (a violation is an error observation);
- a parameter without a description gets one (``get_json_schema`` requires it), which
  names the dropped constraints (``"string matching ^C[0-9]{4}$"``), so the model still
  learns them; descriptions are whitespace-normalised to one line;
- a tool without a description gets ``"Call the <name> tool."``;
- JSON Schema constructs with no Python type (nested object ``properties``, ``oneOf``,
  ``const``, ``$ref``) degrade to the nearest hint (``dict``, ``Any``); still validated
  against the original.

Parameter names must be Python identifiers that are not keywords (else
:class:`~spade_envs.errors.IntegrationError`). Required parameters come first, in the
order of the spec's ``required`` list; optional ones default to None and are left out of
the call when None.
"""

from __future__ import annotations

import copy
import inspect
import json
import keyword
import re
from collections.abc import Callable
from typing import Any, Literal, Optional, Union, get_origin

from ..errors import IntegrationError

#: Keywords a Python type hint cannot express; dropped from the visible schema, enforced
#: by argument validation against the original spec.
VALIDATION_ONLY_KEYWORDS = frozenset({
    "pattern", "minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "additionalProperties", "default", "title", "examples", "$schema",
    "$id", "$comment", "contentEncoding", "contentMediaType", "deprecated", "readOnly", "writeOnly",
})
#: Keywords carried through type hints / the docstring.
_CARRIED = frozenset({"type", "enum", "items", "description"})
_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
_PY_TO_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}
#: docstring section markers that transformers' parser would cut a description at
_MARKERS = re.compile(r"\b(Args|Returns|Raises):")
_RESERVED = frozenset({"reset", "get_reward", "answer", "self"})


def one_line(text: Any) -> str:
    """A description as the docstring parser will read it back: one line, markers defused."""
    text = " ".join(str(text or "").split())
    return _MARKERS.sub(r"\1 -", text)


def _hint(schema: Any, top: bool) -> tuple[Any, dict[str, Any]]:
    """``(type hint, visible schema)`` for one (sub)schema; the visible schema is what
    ``get_json_schema`` renders for that hint (without the parameter description)."""
    if not isinstance(schema, dict):
        return Any, {}
    enum = schema.get("enum")
    kind = schema.get("type")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        if top and kind in ("string", "integer", "number", "boolean"):
            # the docstring's "(choices: [...])" carries the enum, the hint carries the type
            return _SCALARS[kind], {"type": kind, "enum": list(enum)}
        types: list[str] = []
        for v in enum:
            t = _PY_TO_JSON[type(v)]
            if t not in types:
                types.append(t)
        return Literal[tuple(enum)], {"type": types[0] if len(types) == 1 else types, "enum": list(enum)}
    if isinstance(kind, str) and kind in _SCALARS:
        return _SCALARS[kind], {"type": kind}
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            hint, visible = _hint(items, top=False)
            return list[hint], {"type": "array", "items": visible}
        return list, {"type": "array"}
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            hint, visible = _hint(extra, top=False)
            return dict[str, hint], {"type": "object", "additionalProperties": visible}
        return dict, {"type": "object"}
    if isinstance(kind, list) and kind and all(k in _SCALARS for k in kind):
        non_null = [k for k in kind if k != "null"]
        hints = [_SCALARS[k] for k in non_null]
        hint: Any = hints[0] if len(hints) == 1 else Union[tuple(hints)]
        visible: dict[str, Any] = {"type": non_null[0]} if len(non_null) == 1 else {"type": sorted(non_null)}
        if "null" in kind:
            hint = Optional[hint]
            visible["nullable"] = True
        return hint, visible
    return Any, {}


def _constraint_note(schema: dict[str, Any]) -> str:
    """A readable summary of the keywords the visible schema drops (for filled-in descriptions)."""
    parts = []
    kind = schema.get("type")
    if isinstance(kind, str):
        parts.append(kind)
    if "pattern" in schema:
        parts.append(f"matching {schema['pattern']}")
    for key, word in (("minLength", "min length"), ("maxLength", "max length"), ("minimum", ">="),
                      ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"),
                      ("minItems", "min items"), ("maxItems", "max items"), ("format", "format")):
        if key in schema:
            parts.append(f"{word} {schema[key]}")
    return ", ".join(str(p) for p in parts)


def _params(spec_fn: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    params = spec_fn.get("parameters") or {}
    props = params.get("properties") or {}
    required = [r for r in (params.get("required") or []) if r in props]
    order = required + [p for p in props if p not in required]
    return [(name, props[name]) for name in order], required


def _function(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["function"] if isinstance(spec.get("function"), dict) else spec


def visible_tool_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """What a framework reading :func:`make_tool_method`'s method sees: the spec in
    ``{"type": "function", "function": {...}}`` form under the rules of the module
    docstring."""
    fn = _function(spec)
    name = fn["name"]
    ordered, required = _params(fn)
    properties = {}
    for pname, pschema in ordered:
        _, visible = _hint(pschema, top=True)
        desc = pschema.get("description") if isinstance(pschema, dict) else None
        visible["description"] = one_line(desc) if desc and one_line(desc) else _default_param_description(pname, pschema)
        properties[pname] = visible
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    description = one_line(fn.get("description")) or f"Call the {name} tool."
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _default_param_description(name: str, schema: Any) -> str:
    note = _constraint_note(schema) if isinstance(schema, dict) else ""
    return f"The {name} argument ({note})." if note else f"The {name} argument."


def _check_name(tool: str, name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise IntegrationError(f"tool '{tool}': {what} '{name}' is not a Python identifier, so it cannot be "
                               "exposed as a typed method; rename it in the environment's tool spec")


def make_tool_method(spec: dict[str, Any], dispatch: str = "_call_tool") -> Callable[..., str]:
    """A function ``(self, <typed params>) -> str`` for one tool spec, to be set on a class
    under the tool's name. Calling it runs ``getattr(self, dispatch)(name, arguments)``
    with the arguments that were given (None-valued optional ones left out)."""
    fn = _function(spec)
    name = fn["name"]
    if name in _RESERVED or name.startswith("_"):
        raise IntegrationError(f"tool name '{name}' clashes with a reserved method of the environment class")
    visible = visible_tool_schema(spec)["function"]
    ordered, required = _params(fn)
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    doc_args = []
    for pname, pschema in ordered:
        _check_name(name, pname, "parameter")
        if pname == "self":
            raise IntegrationError(f"tool '{name}': a parameter named 'self' cannot be exposed as a method argument")
        hint, _ = _hint(pschema, top=True)
        annotations[pname] = hint
        default = inspect.Parameter.empty if pname in required else None
        parameters.append(inspect.Parameter(pname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                            annotation=hint))
        vis = visible["parameters"]["properties"][pname]
        line = f"    {pname}: {vis['description']}"
        if "enum" in vis and get_origin(hint) is not Literal:
            line += f" (choices: {json.dumps(vis['enum'], ensure_ascii=False)})"
        doc_args.append(line)
    signature = inspect.Signature(parameters)
    doc = visible["description"] + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "")
    optional = frozenset(p for p, _ in ordered if p not in required)

    def tool(self: Any, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items()
                     if k != "self" and not (v is None and k in optional)}
        return getattr(self, dispatch)(name, copy.deepcopy(arguments))

    tool.__name__ = name
    tool.__qualname__ = name
    tool.__doc__ = doc
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    tool.__spade_spec__ = copy.deepcopy(spec)  # type: ignore[attr-defined]
    return tool
