"""Environment parameters: the module-level ``PARAMETERS`` schema of a program.

A program may declare ``PARAMETERS``, a JSON Schema (draft 2020-12) object describing the
keyword arguments of its environment class's constructor (DESIGN.md section 3)::

    PARAMETERS = {
        "type": "object",
        "properties": {
            "difficulty": {"type": "integer", "minimum": 0, "maximum": 4, "default": 2,
                           "description": "0 trivial ... 4 beyond frontier models"},
        },
    }

Contract of this module (it never executes program code):

- :func:`read_parameters` reads ``PARAMETERS`` from the source's AST (a literal dict, or
  no declaration at all -> ``None``);
- :func:`check_schema` accepts a schema only when it keeps within the bounds the caller
  can afford (:mod:`spade_envs.schema_bounds`: size caps, an allow-list of keywords with
  no regular expression, no recursive or fanned-out ``$ref``), is valid under its
  meta-schema, is a ``"type": "object"`` with ``properties``, gives every property a
  ``default``, uses no name of ``SpadeEnv``'s own keywords
  (:data:`RESERVED_KEYWORDS`), and its defaults validate against it;
  otherwise :class:`ParametersSchemaError` (an :class:`EnvProgramError`, stage
  ``parameters``) says what to fix. Every validation runs under a deadline
  (:data:`spade_envs.schema_bounds.DEADLINE_S`);
- :func:`validate_kwargs` checks given keyword arguments against a schema: unknown names
  are refused unless the schema sets ``additionalProperties``; a violation raises ONE
  :class:`InvalidParametersError` naming the argument and the rule;
- :func:`resolve_kwargs` is what the runtimes call on ``open``: no kwargs, or no
  ``PARAMETERS``, passes the kwargs through unchanged (SPADE programs take ``**kwargs``);
- :func:`defaults` gives the default point, :func:`sample_points` a few valid points,
  deterministically (the lowest corner first, then seeded random points).
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import random
import time
from typing import Any

from . import schema_bounds
from .errors import EnvProgramError, SpadeError

#: a schema larger than this (as JSON) is a broken program, not a rich one
MAX_SCHEMA_BYTES = schema_bounds.PARAMETERS_LIMITS.max_bytes
MAX_PROPERTIES = 64
#: ``SpadeEnv``'s own keyword names: only the caller's own code passes them, so no program
#: parameter, variant param or stored kwarg may take one (DESIGN.md section 5). Importing
#: :mod:`spade_envs.gym_env` checks that ``SpadeEnv.__init__`` takes exactly these.
RESERVED_KEYWORDS = frozenset({"env_id", "version", "source", "hint", "trust_remote_code", "runtime",
                               "render_mode", "env_kwargs", "opponent", "seat"})
#: seconds :func:`sample_points` may spend validating, all points together
SAMPLE_BUDGET_S = 4.0
#: bounds of the keyword arguments validated against a schema
KWARGS_LIMITS = schema_bounds.Limits(frozenset(), max_bytes=100_000, max_depth=32, max_nodes=20_000, max_items=10_000)


class ParametersSchemaError(EnvProgramError):
    """A program's ``PARAMETERS`` is not a usable JSON Schema of its keyword arguments."""

    def __init__(self, message: str) -> None:
        super().__init__(message, stage="parameters")


class InvalidParametersError(SpadeError, ValueError):
    """Keyword arguments given to an environment violate its ``PARAMETERS`` schema.

    ``name`` is the offending argument (None when the problem is not one argument's);
    ``judgement`` is True when the schema itself could not be judged (deadline, caps)."""

    def __init__(self, message: str, name: str | None = None, *, judgement: bool = False) -> None:
        super().__init__(message)
        self.name, self.judgement = name, judgement


def read_parameters(source: str | ast.Module, filename: str = "<env>") -> dict[str, Any] | None:
    """The ``PARAMETERS`` literal of a source (``None`` when it declares none).

    Raises :class:`ParametersSchemaError` when the declaration is not a literal dict, and
    :class:`EnvProgramError` (stage ``syntax``) when the source does not parse."""
    if isinstance(source, ast.Module):
        tree = source
    else:
        from .program import parse_source

        tree = parse_source(source, filename)
    found = None
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if any(isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in targets):
            found = value
    if found is None:
        return None
    try:
        schema = ast.literal_eval(found)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise ParametersSchemaError(f"{filename}: PARAMETERS must be a literal dict (a JSON Schema object)") from None
    if not isinstance(schema, dict):
        raise ParametersSchemaError(f"{filename}: PARAMETERS must be a dict, got {type(schema).__name__}")
    return schema


def check_schema(schema: Any, filename: str = "<env>") -> dict[str, Any]:
    """``schema`` itself when it is a usable parameters schema (see the module docstring)."""
    where = f"{filename}: PARAMETERS"
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParametersSchemaError(f"{where} is not JSON ({exc})") from None
    if size > MAX_SCHEMA_BYTES:
        raise ParametersSchemaError(f"{where} is {size} bytes as JSON (limit {MAX_SCHEMA_BYTES})")
    bound = schema_bounds.problem(schema, schema_bounds.PARAMETERS_LIMITS)
    if bound is not None:
        raise ParametersSchemaError(f"{where} is refused at {bound[0]}: {bound[1]}")
    try:
        meta = schema_bounds.meta_error(schema)
    except schema_bounds.SchemaJudgementError as exc:
        raise ParametersSchemaError(f"{where}: {exc}") from None
    if meta is not None:
        path = "/".join(str(p) for p in meta.absolute_path) or "(top level)"
        raise ParametersSchemaError(f"{where} is not a valid JSON Schema at {path}: {meta.message}")
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise ParametersSchemaError(f'{where} must be {{"type": "object", "properties": {{...}}}}')
    props = schema["properties"]
    if len(props) > MAX_PROPERTIES:
        raise ParametersSchemaError(f"{where} declares {len(props)} properties (limit {MAX_PROPERTIES})")
    reserved = RESERVED_KEYWORDS
    for name, spec in props.items():
        if not name.isidentifier():
            raise ParametersSchemaError(f"{where}: property {name!r} is not a Python identifier (a keyword argument)")
        if name in reserved:
            raise ParametersSchemaError(
                f"{where}: property {name!r} is reserved by the entry points ({', '.join(sorted(reserved))}); rename it"
            )
        if not isinstance(spec, dict) or "default" not in spec:
            raise ParametersSchemaError(f"{where}: property {name!r} needs a 'default'")
    bound = schema_bounds.size_problem(defaults(schema), KWARGS_LIMITS)
    if bound is not None:
        raise ParametersSchemaError(f"{where}: the defaults are too large: {bound[1]}")
    try:
        error = schema_bounds.best_error(_closed(schema), defaults(schema))
    except schema_bounds.SchemaJudgementError as exc:
        raise ParametersSchemaError(f"{where}: checking the defaults: {exc}") from None
    if error is not None:
        raise ParametersSchemaError(f"{where}: the defaults are invalid: {_describe(error)}")
    return schema


@functools.lru_cache(maxsize=512)
def _schema_of(source: str, filename: str) -> str | None:
    schema = read_parameters(source, filename)
    return None if schema is None else json.dumps(check_schema(schema, filename))


def schema_of(source: str, filename: str = "<env>") -> dict[str, Any] | None:
    """The checked ``PARAMETERS`` of ``source`` (None when it declares none); cached."""
    text = _schema_of(source, filename)
    return None if text is None else json.loads(text)


def defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The default point: every property's ``default``."""
    return {
        name: copy.deepcopy(spec["default"])
        for name, spec in (schema.get("properties") or {}).items()
        if isinstance(spec, dict) and "default" in spec
    }


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown keyword arguments refused unless it says otherwise."""
    if "additionalProperties" in schema or "unevaluatedProperties" in schema:
        return schema
    return {**schema, "additionalProperties": False}


def _describe(error: Any) -> str:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and not path:
        return error.message
    name = path[0] if path else None
    return f"{name}: {error.message}" if name is not None else error.message


def validate_kwargs(schema: dict[str, Any], kwargs: dict[str, Any], filename: str = "<env>", *,
                    deadline_s: float = schema_bounds.DEADLINE_S) -> dict[str, Any]:
    """``kwargs`` when they satisfy ``schema``; else ONE :class:`InvalidParametersError`
    (also when they are too large, or checking them runs past the deadline)."""
    bound = schema_bounds.size_problem(kwargs, KWARGS_LIMITS)
    if bound is not None:
        raise InvalidParametersError(f"{filename}: parameters refused: {bound[1]} (at {bound[0]})")
    try:
        error = schema_bounds.best_error(_closed(schema), kwargs, deadline_s=deadline_s)
    except schema_bounds.SchemaJudgementError as exc:
        raise InvalidParametersError(f"{filename}: parameters cannot be checked: {exc}", judgement=True) from None
    if error is None:
        return kwargs
    path = list(error.absolute_path)
    name = str(path[0]) if path else None
    if error.validator == "additionalProperties" and not path:
        unknown = sorted(set(kwargs) - set(schema.get("properties") or {}))
        name = unknown[0] if unknown else None
        allowed = ", ".join(sorted(schema.get("properties") or {})) or "none"
        raise InvalidParametersError(
            f"{filename}: unknown parameter {name!r} (this environment takes: {allowed})", name
        )
    raise InvalidParametersError(f"{filename}: invalid parameter {_describe(error)}", name)


def resolve_kwargs(source: str, kwargs: dict[str, Any] | None, filename: str = "<env>") -> dict[str, Any]:
    """The constructor kwargs for ``source``: validated against its ``PARAMETERS`` when
    kwargs are given and it declares some; unchanged otherwise."""
    kwargs = dict(kwargs or {})
    if not kwargs:
        return kwargs
    try:
        json.dumps(kwargs)
    except (TypeError, ValueError):
        raise InvalidParametersError(f"{filename}: parameters must be JSON values (numbers, strings, lists...)") from None
    schema = schema_of(source, filename)
    if schema is None:
        return kwargs
    return validate_kwargs(schema, kwargs, filename)


def _sample_value(spec: dict[str, Any], rng: random.Random, corner: str | None) -> Any:
    if "const" in spec:
        return spec["const"]
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        options = spec["enum"]
        return options[0] if corner == "low" else options[-1] if corner == "high" else rng.choice(options)
    kind = spec.get("type")
    if isinstance(kind, list):  # e.g. ["integer", "null"]: a nullable knob (null = "from the level")
        kind = next((k for k in kind if k != "null"), None)
    if kind == "boolean":
        return False if corner == "low" else True if corner == "high" else rng.random() < 0.5
    if kind in ("integer", "number"):
        lo = spec.get("minimum", spec.get("exclusiveMinimum"))
        hi = spec.get("maximum", spec.get("exclusiveMaximum"))
        if lo is None or hi is None:
            return spec.get("default")
        if kind == "integer":
            lo = int(lo) + (1 if "minimum" not in spec else 0)
            hi = int(hi) - (1 if "maximum" not in spec else 0)
            if lo > hi:
                return spec.get("default")
            return lo if corner == "low" else hi if corner == "high" else rng.randint(lo, hi)
        value = float(lo) if corner == "low" else float(hi) if corner == "high" else rng.uniform(float(lo), float(hi))
        return round(value, 6)
    return copy.deepcopy(spec.get("default"))


def sample_points(schema: dict[str, Any], n: int = 3, seed: int = 0, *, include_high: bool = False,
                  budget_s: float = SAMPLE_BUDGET_S) -> list[dict[str, Any]]:
    """Up to ``n`` distinct valid points other than the defaults, the same for the same
    arguments: the lowest corner (every bounded property at its minimum, the first enum
    value), optionally the highest corner, then seeded random points. Candidates that
    violate the schema (e.g. through cross-property rules) are skipped. All the
    validations together take at most ``budget_s`` seconds: past it
    :class:`ParametersSchemaError` (the schema is too slow to judge), never a pile of
    per-point deadlines."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if isinstance(v, dict)}
    rng = random.Random(f"spade-parameters:{seed}")
    base = defaults(schema)
    seen = [json.dumps(base, sort_keys=True)]
    out: list[dict[str, Any]] = []
    corners: list[str | None] = ["low"] + (["high"] if include_high else [])
    attempts = 0
    end = time.monotonic() + budget_s
    while len(out) < n and attempts < 20 * max(1, n):
        corner = corners[attempts] if attempts < len(corners) else None
        attempts += 1
        try:
            point = {**base, **{k: _sample_value(v, rng, corner) for k, v in props.items()}}
        except (ArithmeticError, ValueError, TypeError):  # a bound jsonschema accepts but floats cannot hold
            continue
        key = json.dumps(point, sort_keys=True)
        if key in seen:
            continue
        left = end - time.monotonic()
        if left <= 0:
            raise ParametersSchemaError(f"PARAMETERS: sampling points took longer than {budget_s:g} s in all")
        try:
            validate_kwargs(schema, point, deadline_s=min(left, schema_bounds.DEADLINE_S))
        except InvalidParametersError as exc:
            if exc.judgement:
                raise ParametersSchemaError(f"PARAMETERS: sampling points: {exc}") from None
            continue
        seen.append(key)
        out.append(point)
    return out
