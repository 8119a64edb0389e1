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
import urllib.parse
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
    #: integers larger in magnitude are refused (jsonschema and float() overflow on them)
    max_int: int = 2**63
    #: an anchor reference (``#name``) is left to jsonschema (tool schemas, validated in
    #: the worker) instead of refused
    anchors: bool = False


PARAMETERS_LIMITS = Limits(PARAMETERS_KEYWORDS)
TOOL_LIMITS = Limits(TOOL_KEYWORDS, anchors=True)

Problem = tuple[str, str]


class SchemaJudgementError(SpadeError):
    """An untrusted schema (or an instance under it) cannot be judged: one clear reason."""


class SchemaDeadlineError(SchemaJudgementError):
    """Validation against an untrusted schema ran past :data:`DEADLINE_S`."""


class SchemaRefusedError(SchemaJudgementError):
    """A schema handed to validation breaks a cap (:func:`inlined`)."""


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
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > limits.max_int:
            return _where(list(path)), f"holds an integer of {len(str(abs(node)))} digits (limit 2**63 in magnitude)"
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
    """``(True, node)`` for a local JSON pointer ``#/a/b`` (or ``#``) into ``root``, read
    exactly as jsonschema's resolver reads it: the fragment percent-decoded first, then
    split on ``/`` (empty segments kept: ``#/$defs/a/`` names the key ``""`` under ``a``),
    ``~1`` and ``~0`` unescaped, list items by a plain decimal index; ``(False, None)``
    when it points nowhere or is not a pointer (an anchor)."""
    if not (ref.startswith("#/") or ref == "#"):
        return False, None
    target: Any = root
    if ref == "#":
        return True, target
    for part in urllib.parse.unquote(ref[2:]).split("/"):
        if isinstance(target, dict):
            part = part.replace("~1", "/").replace("~0", "~")
            if part not in target:
                return False, None
            target = target[part]
        elif isinstance(target, list) and part.isascii() and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return False, None
    return True, target


class _Refused(Exception):
    def __init__(self, where: list[str], message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


class _Walk:
    """One pass over the schema positions: keywords checked, every ``$ref`` inlined
    (memoized per target, so the copy shares nodes), cycles refused. The inlined copy is
    what jsonschema validates against: the caps count exactly what it walks."""

    def __init__(self, root: Any, limits: Limits, *, legacy_ref: bool = False) -> None:
        self.root, self.limits, self.legacy_ref = root, limits, legacy_ref
        self.memo: dict[str, tuple[Any, int, int]] = {}
        self.active: set[str] = set()

    def visit(self, node: Any, path: list[str]) -> tuple[Any, int, int]:
        """``(node with refs inlined, subschemas with refs inlined, combinator depth)``."""
        if not isinstance(node, dict):
            return node, 1, 0  # a boolean schema (or a shape error the meta-schema reports)
        size, depth = 1, 0
        out: dict[str, Any] = {}
        target: Any = None
        for key, value in node.items():
            if key in _BEHAVIOUR and key not in self.limits.keywords:
                raise _Refused(path + [key], f"the keyword {key!r} is not allowed here (allowed: "
                                             f"{', '.join(sorted(self.limits.keywords - _ANNOTATIONS))})")
            inc = 1 if key in _COMBINATORS else 0
            out[key] = value
            if key in ("$defs", "definitions"):
                del out[key]  # visited when referenced (and judged by structure_problem)
            elif key == "$ref":
                target, s, d = self.ref(value, path + [key])
                del out[key]
                size, depth = size + s, max(depth, d)
            elif key in _SUBSCHEMA and isinstance(value, list) or key in _SUBSCHEMA_LIST and isinstance(value, list):
                items = []
                for i, child in enumerate(value):
                    c, s, d = self.visit(child, path + [key, str(i)])
                    items.append(c)
                    size, depth = size + s, max(depth, d + inc)
                out[key] = items
            elif key in _SUBSCHEMA:
                out[key], s, d = self.visit(value, path + [key])
                size, depth = size + s, max(depth, d + inc)
            elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
                mapped = {}
                for name, child in value.items():
                    mapped[name], s, d = self.visit(child, path + [key, str(name)])
                    size, depth = size + s, max(depth, d + inc)
                out[key] = mapped
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
        if "$ref" in node:
            if self.legacy_ref:  # drafts 3 to 7: a $ref's siblings are ignored
                return target, size, depth
            out["allOf"] = [*(out.get("allOf") if isinstance(out.get("allOf"), list) else []), target]
        return out, size, depth

    def ref(self, ref: Any, where: list[str]) -> tuple[Any, int, int]:
        anchor = isinstance(ref, str) and ref.startswith("#") and not ref.startswith("#/") and ref != "#"
        if anchor and self.limits.anchors:
            return {"$ref": ref}, 1, 0  # kept as it is: jsonschema resolves it (or says it cannot)
        if not isinstance(ref, str) or not (ref.startswith("#/") or ref == "#"):
            raise _Refused(where, f"only local references (#/$defs/NAME) are allowed, got {str(ref)[:80]!r}")
        found, target = resolve_local_ref(self.root, ref)
        if not found:
            raise _Refused(where, f"the reference {ref[:80]!r} points to nothing in the schema")
        if not isinstance(target, (dict, bool)):
            raise _Refused(where, f"the reference {ref[:80]!r} points to a {type(target).__name__}, not a schema")
        key = str(id(target))  # two spellings of one pointer are one target
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            raise _Refused(where, f"the reference {ref[:80]!r} is recursive (a schema of keyword arguments "
                                  "never needs that)")
        self.active.add(key)
        try:
            self.memo[key] = self.visit(target, [ref])
        finally:
            self.active.discard(key)
        return self.memo[key]


def _draft(schema: Any) -> type:
    """jsonschema's validator class for ``schema``'s ``$schema`` (2020-12 when it names
    none, or names it with anything but a string: the meta check reports that)."""
    import jsonschema

    default = jsonschema.Draft202012Validator
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema", ""), str):
        return default
    return jsonschema.validators.validator_for(schema, default=default)


def _legacy_ref(schema: Any) -> bool:
    import jsonschema

    cls = _draft(schema)
    return cls in (jsonschema.Draft3Validator, jsonschema.Draft4Validator, jsonschema.Draft6Validator,
                   jsonschema.Draft7Validator)


def _walk(schema: Any, limits: Limits) -> Any:
    """The schema with every ``$ref`` inlined, after every structure check (:class:`_Refused`)."""
    walk = _Walk(schema, limits, legacy_ref=_legacy_ref(schema))
    inlined = walk.visit(schema, [])[0]
    for key in ("$defs", "definitions"):  # unreferenced definitions: their keywords are judged too
        defs = schema.get(key) if isinstance(schema, dict) else None
        for name in defs if isinstance(defs, dict) else ():
            walk.ref(f"#/{key}/{urllib.parse.quote(str(name).replace('~', '~0').replace('/', '~1'), safe='')}",
                     [key, str(name)])
    return inlined


def structure_problem(schema: Any, limits: Limits) -> Problem | None:
    """The first keyword, reference or fan-out ``schema`` may not have, or None. Run
    :func:`size_problem` first: this walk recurses as deep as the schema nests."""
    try:
        _walk(schema, limits)
    except _Refused as exc:
        return _where(exc.where), exc.message
    return None


def problem(schema: Any, limits: Limits) -> Problem | None:
    """:func:`size_problem`, then :func:`structure_problem`."""
    return size_problem(schema, limits) or structure_problem(schema, limits)


def inlined(schema: Any, limits: Limits) -> Any:
    """``schema`` with every ``$ref`` replaced by its target (an ``allOf`` member from
    draft 2019-09 on, the whole node before), ``$defs`` dropped: the only form the caller
    ever validates against. :class:`SchemaRefusedError` when a cap refuses it."""
    found = size_problem(schema, limits)
    if found is None:
        try:
            return _walk(schema, limits)
        except _Refused as exc:
            found = _where(exc.where), exc.message
    raise SchemaRefusedError(f"the schema is refused at {found[0]}: {found[1]}")


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


def _judged(run: Any, deadline_s: float) -> Any:
    token = _DEADLINE.set(time.monotonic() + deadline_s)
    try:
        return run()
    except SchemaJudgementError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of jsonschema on others' data is one clear error
        raise SchemaJudgementError(f"the schema cannot be judged ({type(exc).__name__}: {str(exc)[:200]})") from None
    finally:
        _DEADLINE.reset(token)


def best_error(schema: dict[str, Any], instance: Any, *, deadline_s: float = DEADLINE_S,
               limits: Limits = PARAMETERS_LIMITS) -> Any:
    """jsonschema's best error of ``instance`` under ``schema`` (None when valid), with
    the schema's draft (2020-12 by default), validated only in its :func:`inlined` form
    (:class:`SchemaRefusedError` when a cap refuses it) and every keyword check under a
    deadline (:class:`SchemaDeadlineError` past it); any other failure of jsonschema is a
    :class:`SchemaJudgementError`."""
    import jsonschema

    base = _draft(schema)
    flat = inlined(schema, limits)
    return _judged(lambda: jsonschema.exceptions.best_match(_timed_class(base)(flat).iter_errors(instance)),
                   deadline_s)


def meta_error(schema: Any, *, deadline_s: float = DEADLINE_S) -> Any:
    """The first meta-schema error of ``schema`` (None when it is a valid schema of its
    draft; what ``check_schema`` raises), under the same deadline as :func:`best_error`."""
    import jsonschema

    cls = _draft(schema)
    meta = jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls)

    def run() -> Any:
        checker = _timed_class(meta)(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER)
        return next(iter(checker.iter_errors(schema)), None)

    return _judged(run, deadline_s)
