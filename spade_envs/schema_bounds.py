"""Bounded judgement of the JSON Schemas that untrusted programs write (DESIGN.md section 5).

A program's ``PARAMETERS`` and its tool specs' ``parameters`` are data that the caller
validates things against (defaults, a variant's params, ``gym.make`` kwargs). A hostile
schema must not make the caller spin or grow, so before jsonschema sees one:

- :func:`size_problem`: the schema as JSON is at most ``max_bytes`` long, nests at most
  ``max_depth`` containers deep and holds at most ``max_nodes`` values; arrays inside it
  (an ``enum``, a ``default``) hold at most ``max_items`` items;
- :func:`structure_problem`: every keyword that has validation behaviour is on the
  kind's allow-list (:data:`PARAMETERS_KEYWORDS`, :data:`TOOL_KEYWORDS`; other keys are
  inert annotations jsonschema ignores); ``$ref`` is local (``#/...``) and never
  recursive; with every ``$ref`` inlined the schema has at most ``max_expanded``
  subschemas and combinators (``anyOf``/``oneOf``/``allOf``/``not``/``if``) nest at most
  ``max_combinators`` deep, so 32 levels of ``anyOf [$ref, $ref]`` (2**32 paths) are
  refused by arithmetic, not by trying them. ``PARAMETERS`` may hold no regular
  expression at all (``pattern``, ``patternProperties``, ``format``): they are matched in
  the caller, and Python's ``re`` backtracks. Tool schemas may (SPADE's do): their
  arguments are checked inside the sandbox worker only; a pattern is at most
  ``max_pattern`` characters.
- :func:`best_error`: jsonschema's best error of an instance, under a deadline
  (:data:`DEADLINE_S`): every keyword check first looks at the clock, past the deadline
  :class:`SchemaDeadlineError`.

Each judgement is linear in the schema's size. ``(where, message)`` is the problem
format (``where``: the JSON path, ``(top level)`` for the root).
"""

from __future__ import annotations

import contextvars
import functools
import json
import time
from dataclasses import dataclass
from typing import Any

from .errors import SpadeError

#: seconds one validation against an untrusted schema may take in the caller
DEADLINE_S = 2.0

#: keywords whose value is a subschema (``items`` may also be a list of them)
_SUBSCHEMA = frozenset({"items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
                        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"})
_SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_COMBINATORS = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else"})
#: every keyword some JSON Schema draft gives behaviour to (the rest are annotations)
_BEHAVIOUR = _SUBSCHEMA | _SUBSCHEMA_LIST | _SUBSCHEMA_MAP | frozenset({
    "$ref", "$dynamicRef", "$recursiveRef", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema",
    "$vocabulary", "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "divisibleBy", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "minContains",
    "maxContains", "required", "minProperties", "maxProperties", "dependentRequired", "dependencies", "extends",
    "disallow", "contentMediaType", "contentEncoding"})
_ANNOTATIONS = frozenset({"$schema", "$comment", "title", "description", "default", "examples", "deprecated",
                          "readOnly", "writeOnly"})
#: what a program's ``PARAMETERS`` may use: no regex, no recursion, no unevaluated*, no uniqueItems
PARAMETERS_KEYWORDS = _ANNOTATIONS | frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "items", "prefixItems", "minItems", "maxItems", "contains", "minContains", "maxContains",
    "properties", "required", "additionalProperties", "minProperties", "maxProperties", "dependentRequired",
    "propertyNames", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$defs", "definitions", "$ref"})
#: what a tool's ``parameters`` may use (validated in the worker: patterns allowed)
TOOL_KEYWORDS = PARAMETERS_KEYWORDS | frozenset({"pattern", "patternProperties", "format", "uniqueItems"})


@dataclass(frozen=True)
class Limits:
    """Caps for one kind of schema (see the module docstring)."""

    keywords: frozenset[str]
    max_bytes: int = 20_000
    max_depth: int = 24
    max_nodes: int = 4_000
    max_items: int = 1_000
    max_expanded: int = 2_000
    max_combinators: int = 6
    max_pattern: int = 1_000


PARAMETERS_LIMITS = Limits(PARAMETERS_KEYWORDS)
TOOL_LIMITS = Limits(TOOL_KEYWORDS)

Problem = tuple[str, str]


class SchemaDeadlineError(SpadeError):
    """Validation against an untrusted schema ran past :data:`DEADLINE_S`."""


def _where(path: list[str]) -> str:
    return "/".join(path) or "(top level)"


def size_problem(schema: Any, limits: Limits) -> Problem | None:
    """The first size cap ``schema`` breaks (bytes, depth, values, array items), or None."""
    try:
        size = len(json.dumps(schema, allow_nan=False))
    except RecursionError:
        return "(top level)", f"nests deeper than {limits.max_depth} levels"
    except (TypeError, ValueError) as exc:
        return "(top level)", f"is not plain JSON ({exc})"
    if size > limits.max_bytes:
        return "(top level)", f"is {size} bytes as JSON (limit {limits.max_bytes})"
    nodes = 0
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(schema, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            return "(top level)", f"holds more than {limits.max_nodes} values"
        if isinstance(node, (dict, list)) and depth > limits.max_depth:
            return _where(list(path)), f"nests deeper than {limits.max_depth} levels"
        if isinstance(node, dict):
            stack.extend((v, depth + 1, path + (str(k),)) for k, v in node.items())
        elif isinstance(node, list):
            if len(node) > limits.max_items:
                return _where(list(path)), f"is a list of {len(node)} items (limit {limits.max_items})"
            stack.extend((v, depth + 1, path + (str(i),)) for i, v in enumerate(node))
    return None


def resolve_local_ref(root: Any, ref: str) -> tuple[bool, Any]:
    """``(True, node)`` for a local JSON pointer ``#/a/b`` (or ``#``) into ``root`` (``~1``
    and ``~0`` unescaped, list items by index); ``(False, None)`` when it points nowhere or
    is not a pointer (an anchor)."""
    if not (ref.startswith("#/") or ref == "#"):
        return False, None
    target: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return False, None
    return True, target


class _Refused(Exception):
    def __init__(self, where: list[str], message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


class _Walk:
    """One pass over the schema positions: keywords checked, ``$ref`` inlined by
    arithmetic (memoized per target), cycles refused."""

    def __init__(self, root: Any, limits: Limits) -> None:
        self.root, self.limits = root, limits
        self.memo: dict[str, tuple[int, int]] = {}
        self.active: set[str] = set()

    def visit(self, node: Any, path: list[str]) -> tuple[int, int]:
        """``(subschemas with refs inlined, combinator depth)`` of ``node``."""
        if not isinstance(node, dict):
            return 1, 0  # a boolean schema (or a shape error the meta-schema reports)
        size, depth = 1, 0
        for key, value in node.items():
            if key in _BEHAVIOUR and key not in self.limits.keywords:
                raise _Refused(path + [key], f"the keyword {key!r} is not allowed here (allowed: "
                                             f"{', '.join(sorted(self.limits.keywords - _ANNOTATIONS))})")
            inc = 1 if key in _COMBINATORS else 0
            for child, where in self._children(key, value, path):
                s, d = self.visit(child, where)
                size, depth = size + s, max(depth, d + inc)
            if key == "$ref":
                s, d = self.ref(value, path + [key])
                size, depth = size + s, max(depth, d)
            elif key == "pattern" and isinstance(value, str) and len(value) > self.limits.max_pattern:
                raise _Refused(path + [key], f"a pattern of {len(value)} characters (limit {self.limits.max_pattern})")
            elif key == "patternProperties" and isinstance(value, dict) and any(
                    len(str(k)) > self.limits.max_pattern for k in value):
                raise _Refused(path + [key], f"a pattern longer than {self.limits.max_pattern} characters")
            if size > self.limits.max_expanded:
                raise _Refused(path, f"expands to more than {self.limits.max_expanded} subschemas once every "
                                     "$ref is inlined (nested $ref/anyOf fan-out)")
            if depth > self.limits.max_combinators:
                raise _Refused(path, f"nests combinators (anyOf/oneOf/allOf/not/if) more than "
                                     f"{self.limits.max_combinators} deep, counting through $ref")
        return size, depth

    @staticmethod
    def _children(key: str, value: Any, path: list[str]) -> list[tuple[Any, list[str]]]:
        if key in _SUBSCHEMA:
            if isinstance(value, list):  # items as a tuple (older drafts)
                return [(v, path + [key, str(i)]) for i, v in enumerate(value)]
            return [(value, path + [key])]
        if key in _SUBSCHEMA_LIST and isinstance(value, list):
            return [(v, path + [key, str(i)]) for i, v in enumerate(value)]
        if key in _SUBSCHEMA_MAP and isinstance(value, dict) and key not in ("$defs", "definitions"):
            return [(v, path + [key, str(k)]) for k, v in value.items()]
        return []  # $defs are visited when referenced (and their keywords checked below)

    def ref(self, ref: Any, where: list[str]) -> tuple[int, int]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise _Refused(where, f"only local references (#/$defs/NAME) are allowed, got {str(ref)[:80]!r}")
        if ref in self.memo:
            return self.memo[ref]
        if ref in self.active:
            raise _Refused(where, f"the reference {ref!r} is recursive (a schema of keyword arguments never needs that)")
        found, target = resolve_local_ref(self.root, ref)
        if not found:  # points nowhere (or an anchor, not allowed): the meta checks report it
            return 1, 0
        self.active.add(ref)
        try:
            self.memo[ref] = self.visit(target, [ref])
        finally:
            self.active.discard(ref)
        return self.memo[ref]


def structure_problem(schema: Any, limits: Limits) -> Problem | None:
    """The first keyword, reference or fan-out ``schema`` may not have, or None. Run
    :func:`size_problem` first: this walk recurses as deep as the schema nests."""
    walk = _Walk(schema, limits)
    try:
        walk.visit(schema, [])
        for key in ("$defs", "definitions"):  # unreferenced definitions: their keywords are judged too
            defs = schema.get(key) if isinstance(schema, dict) else None
            for name in defs if isinstance(defs, dict) else ():
                walk.ref(f"#/{key}/{str(name).replace('~', '~0').replace('/', '~1')}", [key, str(name)])
    except _Refused as exc:
        return _where(exc.where), exc.message
    return None


def problem(schema: Any, limits: Limits) -> Problem | None:
    """:func:`size_problem`, then :func:`structure_problem`."""
    return size_problem(schema, limits) or structure_problem(schema, limits)


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("spade_schema_deadline", default=None)


def _timed(check: Any) -> Any:
    def timed(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        end = _DEADLINE.get()
        if end is not None and time.monotonic() > end:
            raise SchemaDeadlineError(f"validation against the schema took longer than {DEADLINE_S:g} s")
        return check(validator, value, instance, schema)

    return timed


@functools.cache
def _timed_class(base: type) -> type:
    import jsonschema

    return jsonschema.validators.extend(base, {k: _timed(f) for k, f in base.VALIDATORS.items()})


def best_error(schema: dict[str, Any], instance: Any, *, deadline_s: float = DEADLINE_S) -> Any:
    """jsonschema's best error of ``instance`` under ``schema`` (None when valid), with
    the schema's draft (2020-12 by default) and every keyword check under a deadline
    (:class:`SchemaDeadlineError` past it)."""
    import jsonschema

    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    token = _DEADLINE.set(time.monotonic() + deadline_s)
    try:
        return jsonschema.exceptions.best_match(_timed_class(base)(schema).iter_errors(instance))
    finally:
        _DEADLINE.reset(token)


def meta_error(schema: Any, *, deadline_s: float = DEADLINE_S) -> Any:
    """The first meta-schema error of ``schema`` (None when it is a valid schema of its
    draft; what ``check_schema`` raises), under the same deadline as :func:`best_error`."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    meta = jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls)
    token = _DEADLINE.set(time.monotonic() + deadline_s)
    try:
        checker = _timed_class(meta)(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER)
        return next(iter(checker.iter_errors(schema)), None)
    finally:
        _DEADLINE.reset(token)
