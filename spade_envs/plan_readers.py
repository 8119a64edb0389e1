r"""Readers of the plan-shaped ``solution()`` texts SPADE's designers write (DESIGN.md section 3).

SPADE never replays ``solution()``; its interactive spec allows "a reference action
sequence or goal description". Besides the forms of :mod:`spade_envs.solutions`, these
shapes are read into actions (each reader returns None when the text is not its shape):

- :func:`arrow_steps`: a path ``A -> B -> C`` (also ``=>``, ``→``, ``⟶``; newlines
  separate steps too), each step one action; an optional ``Label:`` before the first
  step is dropped (``Path: RAIL -> HAIL -> HALL``);
- :func:`comma_items`: a one-line comma list ``up, up, left`` whose items each look like
  one action (short: at most :data:`MAX_ITEM_WORDS` words and :data:`MAX_ITEM_CHARS`
  characters; at most :data:`MAX_STEPS` of them);
- :func:`json_plan`: JSON (optionally in a ```json fence) holding tool steps
  ``{"tool"|"name": ..., "args"|"arguments"|"parameters": {...}}`` as a list, or under
  ``plan``/``steps``/``calls``/``actions``/``tool_calls`` of an object, followed by a final
  answer (a last bare string or number, an ``{"answer": X}`` step, or the object's
  ``answer``/``final_answer``/``final``); the result is ``(calls, answer)``;
- :func:`json_moves`: a JSON list of plain strings or numbers, each one action;
- :func:`structured_answer`: an object with one answer field (``{"answer": 42}``);
- :func:`marked_answer`: the text after the first ``answer:`` / ``answer is`` (to the end
  of its line, trailing period dropped);
- :func:`numbered_lines`: lines of a numbered or bulleted list without their markers
  (``1. up`` / ``2) left`` / ``- right``).

A ``solution()`` that returns a Python list or dict is ``str()``-ed (as SPADE does): the
JSON readers also take Python literals (single quotes, ``True``/``None``).

Every reader is total (never raises) and linear in the length of its input.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

#: most steps a plan reader returns (a longer list is not a plan we replay)
MAX_STEPS = 200
#: an item of a comma list is one action: at most this many words and characters
MAX_ITEM_WORDS, MAX_ITEM_CHARS = 6, 64

#: arrow spellings, longest first (replaced by one separator: no regular expression, linear)
_ARROWS = ("-->", "->", "==>", "=>", "→", "⟶", "⇒")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z ]{0,30}:\s+")
_TOOL_KEYS = ("tool", "name", "function", "tool_name")
_ARG_KEYS = ("args", "arguments", "parameters", "params", "input")
_PLAN_KEYS = ("plan", "steps", "calls", "actions", "tool_calls")
_ANSWER_KEYS = ("answer", "final_answer", "final", "submit")
_FENCE = re.compile(r"^```[A-Za-z]*\n(.*)\n```$", re.DOTALL)


def _clean_step(step: str) -> str:
    return step.strip().strip("`").strip().rstrip(".;").strip()


def arrow_steps(text: str) -> list[str] | None:
    """The steps of ``A -> B -> C`` (at least two), or None."""
    if not isinstance(text, str) or len(text) > 100_000 or not any(a in text for a in _ARROWS):
        return None
    body = _LABEL.sub("", text.strip(), count=1)
    for arrow in _ARROWS:
        body = body.replace(arrow, "\x00")
    steps = [_clean_step(s) for line in body.splitlines() for s in line.split("\x00")]
    steps = [s for s in steps if s]
    if len(steps) < 2 or len(steps) > MAX_STEPS:
        return None
    return steps


def comma_items(text: str) -> list[str] | None:
    """The items of a one-line comma list of short actions (at least two), or None."""
    if not isinstance(text, str) or "," not in text or len(text) > 20_000:
        return None
    body = _LABEL.sub("", text.strip(), count=1)
    if "\n" in body:
        return None
    items = [_clean_step(s) for s in body.split(",")]
    if len(items) < 2 or len(items) > MAX_STEPS or not all(items):
        return None
    if any(len(i) > MAX_ITEM_CHARS or len(i.split()) > MAX_ITEM_WORDS for i in items):
        return None
    return items


def _load_json(text: str) -> Any:
    """JSON, else a Python literal (what ``str()`` of a list or dict looks like), else None."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body or body[0] not in "[{" or len(body) > 200_000:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(body)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def json_plan(text: str) -> tuple[list[tuple[str, dict[str, Any]]], str | None] | None:
    """``(calls, final answer)`` of a JSON tool plan (at least one call), or None."""
    data = _load_json(text) if isinstance(text, str) else None
    trailing: str | None = None
    if data is None and isinstance(text, str):
        data, trailing = _json_then_answer(text)
    final: str | None = None
    if isinstance(data, dict):
        steps = next((data[k] for k in _PLAN_KEYS if isinstance(data.get(k), list)), None)
        final = next((_scalar(data[k]) for k in _ANSWER_KEYS if k in data and _scalar(data[k]) is not None), None)
    else:
        steps = data
    if not isinstance(steps, list) or not steps or len(steps) > MAX_STEPS:
        return None
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, step in enumerate(steps):
        if isinstance(step, dict):
            name = next((step[k] for k in _TOOL_KEYS if isinstance(step.get(k), str) and step[k]), None)
            if name is None:
                answer = next((_scalar(step[k]) for k in _ANSWER_KEYS if k in step), None)
                if answer is None or i != len(steps) - 1:
                    return None
                final = answer
                continue
            args = next((step[k] for k in _ARG_KEYS if k in step), {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except (ValueError, RecursionError):
                    return None
            if args is None:
                args = {}
            if not isinstance(args, dict):
                return None
            calls.append((name, args))
        elif i == len(steps) - 1 and _scalar(step) is not None:
            final = _scalar(step)
        else:
            return None
    if final is None:
        final = trailing
    return (calls, final) if calls else None


_FENCE_HEAD = re.compile(r"^```[A-Za-z]*\n")


def _json_then_answer(text: str) -> tuple[Any, str | None]:
    """``(JSON value, marked answer)`` of a JSON document followed by a line such as
    ``Final answer: X`` (``json.dumps(plan, indent=2) + "\nFinal answer: ..."``, fenced or
    not); ``(None, None)`` when the text is not that shape."""
    body = text.strip()
    head = _FENCE_HEAD.match(body)
    if head:
        close = body.find("\n```", head.end())
        if close < 0:
            return None, None
        inner, rest = body[head.end():close], body[close + 4:]
    else:
        inner, rest = body, ""
    if not inner or inner[0] not in "[{" or len(body) > 200_000:
        return None, None
    try:
        data, end = json.JSONDecoder().raw_decode(inner)
    except (ValueError, RecursionError):
        return None, None
    rest = (inner[end:] + "\n" + rest).strip()
    answer = marked_answer(rest) if rest else None
    return (data, answer) if answer is not None else (None, None)


def json_moves(text: str) -> list[str] | None:
    """The items of a JSON list of plain strings or numbers (at least two), or None."""
    data = _load_json(text) if isinstance(text, str) else None
    if not isinstance(data, list) or not 2 <= len(data) <= MAX_STEPS:
        return None
    items = [_scalar(v) for v in data]
    if any(i is None or not i.strip() for i in items):
        return None
    return [str(i).strip() for i in items]


def structured_answer(text: str) -> str | None:
    """The answer of an object with an answer field (``{"answer": 42}``), or None."""
    data = _load_json(text) if isinstance(text, str) else None
    if not isinstance(data, dict):
        return None
    return next((_scalar(data[k]) for k in (*_ANSWER_KEYS, "solution", "result") if k in data
                 and _scalar(data[k]) is not None), None)


_MARK = re.compile(r"(?i)(?<![A-Za-z0-9_<])(?:final answer|answer)(?:\s+is\b)?(?:\s*[:=]\s*|\s+)")
_NUMBERED = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*\u2022])\s+")


def marked_answer(text: str) -> str | None:
    """What follows the first ``answer:`` / ``answer is`` / ``final answer:``, to the end of
    its line (quotes and a trailing period dropped), or None."""
    if not isinstance(text, str) or len(text) > 100_000:
        return None
    m = _MARK.search(text)
    if m is None:
        return None
    end = text.find("\n", m.end())
    value = text[m.end(): end if end >= 0 else len(text)].strip().strip("`'\"*").rstrip(".").strip()
    return value or None


def numbered_lines(text: str) -> list[str] | None:
    """The lines of a numbered or bulleted list without their markers (two or more lines,
    every non-empty line marked), or None."""
    if not isinstance(text, str) or len(text) > 100_000:
        return None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or len(lines) > MAX_STEPS or not all(_NUMBERED.match(ln) for ln in lines):
        return None
    items = [_clean_step(_NUMBERED.sub("", ln, count=1)) for ln in lines]
    return items if all(items) else None
