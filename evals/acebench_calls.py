"""ACEBench's call syntax: ``[ApiName(key1='v1', key2=2), Other()]``.

ACEBench's agent writes its tool calls as one bracketed list of Python-style calls with
keyword arguments, and its execution role decodes that text with ``ast`` before running
each call. This module reads and writes the same syntax, with the same rules, so that a
message decodes here exactly when it decodes there:

- a missing leading ``[`` or trailing ``]`` is added (a single leading space is dropped);
- only calls are allowed (a list or tuple of calls, or one call); positional arguments are
  ignored, as ACEBench ignores them;
- argument values are literals (strings, numbers, booleans, None, lists, dicts, tuples),
  ``-x``, bare names (read as their name, a string), arithmetic on numbers (ACEBench
  ``eval``s it; here it is computed without ``eval``), and nested calls (kept as
  ``{name: kwargs}``, or as their source text when they have no keyword arguments).

Decoding never evaluates text. :func:`format_call` writes a call back the way ACEBench's
execution list does (``name(k=repr(v), ...)``), which is also the string its ``process``
record and milestones compare against.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from spade_envs.errors import SpadeError

#: Longest message decoded; longer text is refused rather than parsed.
MAX_CALL_TEXT = 65536

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


class AceCallError(SpadeError):
    """A message is not a list of calls in ACEBench's syntax."""


def decode_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``[(name, kwargs), ...]`` of a message, or :class:`AceCallError`."""
    if not isinstance(text, str) or not text:
        raise AceCallError("empty message")
    if len(text) > MAX_CALL_TEXT:
        raise AceCallError(f"message longer than {MAX_CALL_TEXT} characters")
    func = text[1:] if text[0] == " " else text
    if not func.startswith("["):
        func = "[" + func
    if not func.endswith("]"):
        func = func + "]"
    try:
        tree = ast.parse(func.strip("[]'"), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise AceCallError(f"not a call list: {exc}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        nodes = [body]
    elif isinstance(body, (ast.Tuple, ast.List)):
        nodes = list(body.elts)
        if not all(isinstance(n, ast.Call) for n in nodes):
            raise AceCallError("element is not a function call")
    else:
        return []
    try:
        return [_call(n) for n in nodes]
    except RecursionError:
        raise AceCallError("arguments nested too deeply") from None


def _call(node: ast.Call) -> tuple[str, dict[str, Any]]:
    parts: list[str] = []
    func: ast.AST = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts)), {kw.arg: _value(kw.value) for kw in node.keywords if kw.arg is not None}


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    if isinstance(node, ast.List):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(v) for v in node.elts)
    if isinstance(node, ast.Dict):
        return {_value(k): _value(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.BinOp):
        return _arithmetic(node)
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        name, kwargs = _call(node)
        return {name: kwargs}
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise AceCallError(f"unsupported argument: {ast.unparse(node)[:80]}")


def _arithmetic(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _arithmetic(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if any(abs(v) > 1e15 for v in (left, right)):
            raise AceCallError("arithmetic on numbers too large")
        try:
            return _BINOPS[type(node.op)](left, right)
        except ZeroDivisionError:
            raise AceCallError("division by zero in an argument") from None
    raise AceCallError(f"unsupported expression: {ast.unparse(node)[:80]}")


def _literal(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), dict):
        (name, args), = value.items()
        if isinstance(name, str) and name.isidentifier():
            return format_call(name, args)
    return repr(value)


def format_call(name: str, kwargs: dict[str, Any]) -> str:
    """``name(k1=repr(v1), ...)``: one call as ACEBench's execution list writes it."""
    return f"{name}(" + ", ".join(f"{k}={_literal(v)}" for k, v in kwargs.items()) + ")"


def format_message(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """A whole agent message: ``[call, call]``."""
    return "[" + ", ".join(format_call(n, k) for n, k in calls) + "]"


def repair_quotes(text: str) -> str:
    """Escape quotes inside quoted literals that cannot end the literal.

    Some of ACEBench's reference milestones write ``message='Don't forget'``: the inner
    apostrophe ends the string for Python. A quote is kept as a closing one only when
    the next non-space character can follow a literal (``, ) ] } :`` or the end)."""
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote is None:
            if c in "'\"":
                quote = c
            out.append(c)
        elif c == "\\" and i + 1 < n:
            out.append(text[i:i + 2])
            i += 1
        elif c == quote:
            j = i + 1
            while j < n and text[j] == " ":
                j += 1
            if j >= n or text[j] in ",)]}:":
                quote = None
                out.append(c)
            else:
                out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    return "".join(out)
