"""Tool specifications: OpenAI function definitions, checked with jsonschema.

A spec is ``{"type": "function", "function": {"name", "description", "parameters"}}``
(the bare inner ``{"name", ...}`` form is accepted and normalised). ``parameters`` must
itself be a valid JSON Schema (checked against the Draft 2020-12 meta-schema) describing
an object. Arguments of every call are validated against it before the tool runs.

SPADE's loader never checks schemas, so its designers' specs sometimes name Python types
(``"type": "str"``, ``"int"``, ``"list"``...). Those are mapped to the JSON Schema types
(:data:`PYTHON_TYPE_NAMES`) before the check, and the mapping is recorded in the spec's
``parameters["$comment"]`` (a keyword validators ignore), which the acceptance
``tool_specs`` verdict reports.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any

from . import schema_bounds
from .errors import ToolSpecError
from .schema_leniency import lift_property_required

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")

#: Shape of one OpenAI function tool (the outer envelope; ``parameters`` is checked
#: separately against the JSON Schema meta-schema).
OPENAI_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "function"],
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "parameters"],
            "properties": {
                "name": {"type": "string", "pattern": _NAME_RE.pattern},
                "description": {"type": "string"},
                "parameters": {"type": "object"},
                "strict": {"type": "boolean"},
            },
        },
    },
}


@functools.cache
def _jsonschema() -> Any:
    """jsonschema, imported on first use (the sandbox's quick zygote starts without it)."""
    import jsonschema

    return jsonschema


@functools.cache
def _envelope() -> Any:
    return _jsonschema().Draft202012Validator(OPENAI_TOOL_SCHEMA)


#: Python type names SPADE designers write, and the JSON Schema type each means
PYTHON_TYPE_NAMES: dict[str, str] = {
    "str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": "array",
    "tuple": "array", "dict": "object", "none": "null", "nonetype": "null", "integer": "integer",
    "string": "string", "number": "number", "boolean": "boolean", "array": "array", "object": "object",
    "null": "null",
}
#: prefix of the ``$comment`` that records a mapping
TYPE_NOTE = "spade: mapped Python type names"


def _map_types(node: Any, notes: list[str], depth: int = 0) -> Any:
    """A copy of schema ``node`` with Python type names in ``type`` mapped; what was
    mapped is appended to ``notes``."""
    if depth > 64 or not isinstance(node, (dict, list)):
        return node
    if isinstance(node, list):
        return [_map_types(v, notes, depth + 1) for v in node]
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, (str, list)):
            names = [value] if isinstance(value, str) else value
            mapped = []
            for name in names:
                new = PYTHON_TYPE_NAMES.get(name.lower(), name) if isinstance(name, str) else name
                if new != name:
                    notes.append(f"{name}->{new}")
                mapped.append(new)
            out[key] = mapped[0] if isinstance(value, str) else mapped
        elif key in _DATA_KEYWORDS:
            out[key] = value
        else:
            out[key] = _map_types(value, notes, depth + 1)
    return out


def type_note(spec: dict[str, Any]) -> str | None:
    """The type-mapping note of a normalised spec, or None."""
    comment = ((spec.get("function") or {}).get("parameters") or {}).get("$comment")
    return comment if isinstance(comment, str) and comment.startswith(TYPE_NOTE) else None


def normalize_tool_spec(spec: Any) -> dict[str, Any]:
    """Return ``spec`` in the ``{"type": "function", "function": {...}}`` form, validated.

    Raises :class:`ToolSpecError` naming the problem when the spec is not a valid
    OpenAI function definition or its ``parameters`` is not a valid JSON Schema.
    """
    if isinstance(spec, dict) and "function" not in spec and "name" in spec:
        spec = {"type": "function", "function": spec}
    if not isinstance(spec, dict):
        raise ToolSpecError(f"tool spec must be a dict, got {type(spec).__name__}")
    spec = copy.deepcopy(spec)
    fn = spec.get("function")
    if isinstance(fn, dict) and "parameters" not in fn:
        fn["parameters"] = {"type": "object", "properties": {}}
    if isinstance(fn, dict) and isinstance(fn.get("parameters"), dict):
        notes: list[str] = []
        params = _map_types(fn["parameters"], notes)
        params = lift_property_required(params, notes)  # SPADE's loader runs "required": true on a property
        if notes:
            params["$comment"] = f"{TYPE_NOTE}: {', '.join(sorted(set(notes)))}"
            fn["parameters"] = params
    errors = sorted(_envelope().iter_errors(spec), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.path) or "<root>"
        raise ToolSpecError(f"invalid tool spec at {where}: {err.message}")
    name = fn["name"]
    params = fn["parameters"]
    problem = _schema_problem_cached(params)
    if problem is not None:
        where, message = problem
        raise ToolSpecError(f"tool '{name}': 'parameters' is not a valid JSON Schema at {where}: {message}")
    if params.get("type", "object") != "object":
        raise ToolSpecError(f"tool '{name}': 'parameters' must describe an object (type: object)")
    fn.setdefault("description", "")
    return spec


def _schema_problem(params: Any) -> tuple[str, str] | None:
    """``(where, message)`` when ``params`` is not a valid JSON Schema, or one outside the
    bounds the caller can afford (:mod:`.schema_bounds`), else None."""
    bound = schema_bounds.size_problem(params, schema_bounds.TOOL_LIMITS)
    if bound is not None:
        return bound
    try:
        _jsonschema().Draft202012Validator.check_schema(params)
    except _jsonschema().SchemaError as exc:
        return "/".join(str(p) for p in exc.path) or "<root>", exc.message
    return _ref_problem(params, params, []) or schema_bounds.structure_problem(params, schema_bounds.TOOL_LIMITS)


#: keywords whose values are data, not subschemas (a "$ref" inside them is not a reference)
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _ref_problem(node: Any, root: Any, path: list[str]) -> tuple[str, str] | None:
    """``(where, message)`` for the first ``$ref`` that is remote or points nowhere.

    Remote references would need a fetch at validation time (never allowed), and a dangling
    local one makes every later argument check fail; both are rejected at registration."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            problem = _ref_problem(item, root, path + [str(i)])
            if problem:
                return problem
        return None
    if not isinstance(node, dict):
        return None
    ref = node.get("$ref")
    if isinstance(ref, str):
        where = "/".join(path + ["$ref"])
        if not ref.startswith("#"):
            return where, f"remote reference {ref!r} is not allowed; define it under $defs and use '#/$defs/...'"
        pointer = ref.startswith("#/") or ref == "#"  # an anchor ("#name") is left to jsonschema
        if pointer and not schema_bounds.resolve_local_ref(root, ref)[0]:
            return where, f"reference {ref!r} points to nothing in the schema"
    for key, value in node.items():
        if key not in _DATA_KEYWORDS and key != "$ref":
            problem = _ref_problem(value, root, path + [str(key)])
            if problem:
                return problem
    return None


@functools.lru_cache(maxsize=4096)
def _schema_problem_json(params_json: str) -> tuple[str, str] | None:
    return _schema_problem(json.loads(params_json))


def _schema_problem_cached(params: Any) -> tuple[str, str] | None:
    """Meta-schema check memoized on the canonical JSON of ``params`` (programs return the
    same specs on every reset; the check costs milliseconds)."""
    try:
        key = json.dumps(params, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _schema_problem(params)
    return _schema_problem_json(key)


def validate_tool_specs(specs: Any, implemented: set[str] | None = None) -> list[dict[str, Any]]:
    """Validate a list of specs: each valid, names unique, and (when ``implemented`` is
    given) each backed by a ``tool_<name>`` method. Returns the normalised list."""
    if specs is None:
        return []
    if not isinstance(specs, (list, tuple)):
        raise ToolSpecError(f"get_tools() must return a list of specs, got {type(specs).__name__}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for spec in specs:
        norm = normalize_tool_spec(spec)
        name = norm["function"]["name"]
        if name in seen:
            raise ToolSpecError(f"tool '{name}' is declared twice")
        seen.add(name)
        if implemented is not None and name not in implemented:
            raise ToolSpecError(f"tool '{name}' has no method tool_{name}()")
        out.append(norm)
    return out


class ArgumentValidator:
    """Validates tool-call arguments against the tools' ``parameters`` schemas.

    Validators are compiled once per tool; ``check`` returns None when the call is valid
    and otherwise an error message that names the tool and the violation.
    """

    def __init__(self, specs: list[dict[str, Any]]) -> None:
        self._validators = {
            s["function"]["name"]: _jsonschema().Draft202012Validator(s["function"]["parameters"]) for s in specs
        }

    @property
    def names(self) -> list[str]:
        return list(self._validators)

    def check(self, name: str, arguments: Any) -> str | None:
        validator = self._validators.get(name)
        if validator is None:
            avail = ", ".join(self._validators) or "none"
            return f"Error: unknown tool '{name}'. Available tools: {avail}."
        if not isinstance(arguments, dict):
            return f"Error: arguments of '{name}' must be a JSON object."
        try:
            error = _jsonschema().exceptions.best_match(validator.iter_errors(arguments))
        except Exception as exc:  # an unusable schema or pathological arguments: never raise
            return f"Error: the arguments of tool '{name}' cannot be checked ({type(exc).__name__}). The tool was not run."
        if error is None:
            return None
        where = "/".join(str(p) for p in error.path)
        where = f" at '{where}'" if where else ""
        return f"Error: invalid arguments for tool '{name}'{where}: {error.message}. The tool was not run."
