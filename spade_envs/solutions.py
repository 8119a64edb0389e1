r"""Replay of ``solution()``: turning what a program's ``solution()`` returns into the
actions that win its episode (DESIGN.md section 3).

:func:`solution_plans` gives one or more candidate action lists, the primary first;
:func:`solution_to_actions` is the primary, which the Gymnasium wrapper's ``solution()``
returns (joined by newlines) and acceptance replays first. Forms, in order of precedence:

1. **Tool use** (the program declares tools, or the text holds ``<tool_call>`` /
   ``<answer>``): the text is scanned once, left to right, for ``<tool_call>`` blocks,
   ``<answer>X</answer>``, SPADE's free-text walkthrough calls of the DECLARED tools
   (``1. cd(path="docs") -> Changed ...``, ``tool(k='v')``, ``tool({"k": "v"})``,
   positional values mapped to the schema's properties in order, bare words as strings,
   scalars coerced to the schema's type) and ``ANSWER: X`` (to the end of its line). Each
   call is one ``<tool_call>`` action; the first answer is the last action. A tool-use
   text with none of these is a bare answer, replayed as ``<answer>text</answer>``.
2. **Boxed actions**: each non-empty line is one action; a line holding several
   ``\boxed{}`` is one action per box.
3. **Bare text**: a single line is a bare answer, replayed as ``\boxed{answer}``; several
   lines are one action per line, as written, or each boxed when the episode's first
   observation asks for ``\boxed{}`` (as SPADE's multi-turn games do).

Alternates (tried by acceptance when the primary does not win): bare lines boxed one by
one, the whole bare text boxed once, a single bare line as written, ``\boxed{X}`` for a
tool-use bare answer, and the plan shapes of :mod:`spade_envs.plan_readers`: a JSON tool
plan (primary when the program has tools), an ``A -> B -> C`` path (with and without its
start, boxed and bare), a comma list, a JSON move list, numbered lines without their
markers, the text after ``answer:`` and an ``{"answer": X}`` object (boxed). :func:`solution_readings`
names the reader of each reading (:data:`READER_NAMES`), so a verdict can say which
readers were tried. Everything here is linear in the length of the text.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from . import pyast
from .actions import (
    answer_blocks,
    boxed_spans,
    extract_all_boxed,
    parse_tool_call_body,
    tool_call_blocks,
)
from .plan_readers import (
    arrow_steps,
    comma_items,
    json_moves,
    json_plan,
    marked_answer,
    numbered_lines,
    structured_answer,
)

_ANSWER_MARK = "answer:"
_OPENERS, _CLOSERS = "([{", ")]}"


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _tool_schemas(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for spec in tools or []:
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and name:
            params = fn.get("parameters")
            out[name] = params if isinstance(params, dict) else {}
    return out


def _call_action(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"


# -- walkthrough calls ----------------------------------------------------------------
def _closing_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` before ``start`` (quotes and nested brackets
    respected), or -1 when the text ends first."""
    depth, quote, i, n = 0, "", start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            if depth == 0:
                return i if ch == ")" else -1
            depth -= 1
        i += 1
    return -1


_JSONISH = {"true": True, "false": False, "null": None, "none": None}


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Name):  # a bare word: true/false/null or an unquoted string
        return _JSONISH.get(node.id.lower(), node.id) if node.id.lower() in _JSONISH else node.id
    return ast.literal_eval(node)


def _parse_arguments(argtext: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments of a walkthrough call (``k=v``, one JSON object, or positional values in
    the order of the schema's properties); None when they are not literals."""
    body = argtext.strip()
    if not body:
        return {}
    if body.startswith("{"):
        try:
            value = json.loads(body)
            return value if isinstance(value, dict) else None
        except (ValueError, RecursionError):
            pass
    try:
        tree = pyast.parse(f"_f({body})", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id != "_f":
        return None
    try:
        positional = [_literal(a) for a in call.args]
        keywords = {k.arg: _literal(k.value) for k in call.keywords if k.arg is not None}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if len(keywords) != len(call.keywords):
        return None  # **kwargs
    if positional and not keywords and len(positional) == 1 and isinstance(positional[0], dict):
        return positional[0]
    names = [n for n in (schema.get("properties") or {}) if n not in keywords]
    if len(positional) > len(names):
        return None
    keywords.update(zip(names, positional))
    return keywords


def _coerce(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Scalars written in the walkthrough's own style (``amount="50"``) converted to the
    type the schema declares, when that conversion is exact."""
    props = schema.get("properties") or {}
    out = dict(arguments)
    for key, value in arguments.items():
        want = (props.get(key) or {}).get("type") if isinstance(props.get(key), dict) else None
        try:
            if want == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
                out[key] = int(value)
            elif want == "number" and isinstance(value, str):
                out[key] = float(value) if any(c in value for c in ".eE") else int(value)
            elif want == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
                out[key] = value.lower() == "true"
            elif want == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = str(value)
        except ValueError:
            pass
    return out


def _walkthrough_calls(text: str, schemas: dict[str, dict[str, Any]], masked: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """``(position, action)`` of each call of a declared tool written as ``name(...)``."""
    if not schemas:
        return []
    names = sorted(set(schemas) | {f"tool_{n}" for n in schemas}, key=len, reverse=True)
    finder = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(n) for n in names) + r")\(")
    out: list[tuple[int, str]] = []
    pos = 0
    while True:
        m = finder.search(text, pos)
        if m is None:
            return out
        start = m.start()
        inside = next((e for s, e in masked if s <= start < e), None)
        if inside is not None:
            pos = inside
            continue
        close = _closing_paren(text, m.end())
        if close < 0:
            return out  # nothing after an unclosed call can close either: stop (linear)
        name = m.group(0)[:-1]
        name = name if name in schemas else name[len("tool_") :]
        arguments = _parse_arguments(text[m.end() : close], schemas[name])
        if arguments is not None:
            out.append((start, _call_action(name, _coerce(arguments, schemas[name]))))
        pos = close + 1


def _answer_marks(text: str, masked: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """``(position, <answer>X</answer>)`` for the first ``ANSWER: X`` outside a block
    (to the end of its line; only the first answer counts, and taking one keeps this
    linear)."""
    lower = text.lower()
    out = []
    pos = 0
    while True:
        i = lower.find(_ANSWER_MARK, pos)
        if i < 0:
            return out
        pos = i + len(_ANSWER_MARK)
        if (i and (lower[i - 1].isalnum() or lower[i - 1] in "_<")) or any(s <= i < e for s, e in masked):
            continue
        end = text.find("\n", pos)
        value = text[pos : end if end >= 0 else len(text)].strip().strip("`'\"").strip()
        if value:
            out.append((i, f"<answer>{value}</answer>"))
            return out


def tool_use_actions(text: str, tools: list[dict[str, Any]] | None = None) -> list[str]:
    """The tool-use reading of ``text`` (form 1 of the module docstring); [] when it has
    no call and no answer."""
    schemas = _tool_schemas(tools)
    events: list[tuple[int, str]] = []
    masked: list[tuple[int, int]] = []
    for start, body, end, stop in tool_call_blocks(text):
        call = parse_tool_call_body(text[body:end])
        events.append((start, text[start:stop] if call.error else call.to_text()))
        masked.append((start, stop))
    for start, body, end, stop in answer_blocks(text):
        if not any(s <= start < e for s, e in masked):
            events.append((start, f"<answer>{text[body:end].strip()}</answer>"))
            masked.append((start, stop))
    events += _walkthrough_calls(text, schemas, masked)
    if schemas or events:
        events += _answer_marks(text, masked)
    events.sort(key=lambda e: e[0])
    actions = []
    for _, action in events:
        actions.append(action)
        if action.startswith("<answer>"):
            break  # the first answer ends the episode (SPADE checks the first <answer>)
    return actions


def needs_final_answer(text: Any, tools: list[dict[str, Any]] | None = None) -> bool:
    """True when the tool-use reading of ``text`` calls tools but gives no answer (a
    walkthrough whose answer the program keeps in ``_expected_answer``)."""
    actions = tool_use_actions(_text(text), tools)
    return bool(actions) and not actions[-1].startswith("<answer>")


def _boxed_lines(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        boxes = extract_all_boxed(line)
        out.extend([f"\\boxed{{{b}}}" for b in boxes] if len(boxes) > 1 else [line])
    return out


#: names of the readers (what a verdict says was tried)
READER_NAMES = {
    "tool_use": "tool calls and answer", "tool_use_boxed": "tool calls, then the boxed answer", "json_plan": "JSON tool plan", "answer_block": "bare answer as <answer>",
    "answer_boxed": "bare answer as \\boxed{}", "boxed": "\\boxed{} actions", "lines": "one action per line",
    "lines_boxed": "one boxed action per line", "whole_boxed": "whole text boxed", "bare": "bare answer as written",
    "arrow_tail_boxed": "arrow path, start omitted, boxed", "arrow_boxed": "arrow path, boxed",
    "arrow_tail": "arrow path, start omitted", "arrow": "arrow path", "comma_boxed": "comma list, boxed",
    "comma": "comma list", "json_moves_boxed": "JSON move list, boxed", "json_moves": "JSON move list",
    "numbered_boxed": "numbered lines, boxed", "numbered": "numbered lines", "marked_boxed": "'answer: X', boxed",
    "field_boxed": "answer field, boxed", "field_answer": "answer field as <answer>",
}


def _plan_readings(text: str) -> list[tuple[str, list[str]]]:
    """Readings of a bare text as a path, comma list or JSON move list (alternates)."""
    out: list[tuple[str, list[str]]] = []
    steps = arrow_steps(text)
    if steps:
        tail = steps[1:]
        out += [("arrow_tail_boxed", [f"\\boxed{{{s}}}" for s in tail]), ("arrow_boxed", [f"\\boxed{{{s}}}" for s in steps]),
                ("arrow_tail", tail), ("arrow", steps)]
        return out
    for name, items in (("json_moves", json_moves(text)), ("comma", comma_items(text)),
                        ("numbered", numbered_lines(text))):
        if items:
            out += [(f"{name}_boxed", [f"\\boxed{{{i}}}" for i in items]), (name, items)]
    for name, answer in (("marked_boxed", marked_answer(text)), ("field_boxed", structured_answer(text))):
        if answer:
            out.append((name, [f"\\boxed{{{answer}}}"]))
    return out


def _json_plan_actions(text: str, tools: list[dict[str, Any]] | None) -> list[str] | None:
    plan = json_plan(text)
    if plan is None:
        return None
    schemas = _tool_schemas(tools)
    calls, final = plan
    actions = [_call_action(name, _coerce(args, schemas.get(name) or {})) for name, args in calls]
    if final is not None:
        actions.append(f"<answer>{final}</answer>")
    return actions


def solution_readings(value: Any, tools: list[dict[str, Any]] | None = None,
                      observation: str | None = None) -> list[tuple[str, list[str]]]:
    """``(reader, actions)`` for every reading of a ``solution()`` value, primary first,
    no duplicate action lists (reader names: :data:`READER_NAMES`). ``observation`` (the
    episode's first observation): when it asks for ``\\boxed{}``, several bare lines are
    boxed one by one first (SPADE's multi-turn games read every action from a box)."""
    text = _text(value)
    readings: list[tuple[str, list[str]]] = []
    stripped = text.strip()
    is_tool_use = bool(_tool_schemas(tools)) or "<tool_call>" in text or "<answer>" in text
    if is_tool_use:
        planned = _json_plan_actions(stripped, tools)
        if planned:
            readings.append(("json_plan", planned))
        actions = tool_use_actions(text, tools)
        if actions:
            readings.append(("tool_use", actions))
            boxes = extract_all_boxed(text)
            if boxes:  # the calls, then the \\boxed{} answer a text-answer program reads
                calls = [a for a in actions if not a.startswith("<answer>")]
                readings.append(("tool_use_boxed", calls + [f"\\boxed{{{boxes[-1]}}}"]))
        else:
            readings += [("answer_block", [f"<answer>{stripped}</answer>"]), ("answer_boxed", [f"\\boxed{{{stripped}}}"])]
            field = structured_answer(stripped)
            if field:
                readings.append(("field_answer", [f"<answer>{field}</answer>"]))
    elif boxed_spans(text):
        readings.append(("boxed", _boxed_lines(text)))
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1:
            boxed = ("lines_boxed", [f"\\boxed{{{ln}}}" for ln in lines])
            asks_box = isinstance(observation, str) and "\\boxed" in observation
            readings += [boxed, ("lines", lines)] if asks_box else [("lines", lines), boxed]
            readings.append(("whole_boxed", [f"\\boxed{{{stripped}}}"]))
        else:
            readings += [("answer_boxed", [f"\\boxed{{{stripped}}}"]), ("bare", [stripped])]
        readings += _plan_readings(stripped)
    unique: list[tuple[str, list[str]]] = []
    seen: list[list[str]] = []
    for name, plan in readings:
        if plan and plan not in seen:
            seen.append(plan)
            unique.append((name, plan))
    return unique or [("answer_boxed", ["\\boxed{}"])]


def solution_plans(value: Any, tools: list[dict[str, Any]] | None = None,
                   observation: str | None = None) -> list[list[str]]:
    """The action lists of :func:`solution_readings`, primary first."""
    return [plan for _, plan in solution_readings(value, tools, observation)]


def solution_to_actions(value: Any, tools: list[dict[str, Any]] | None = None,
                        observation: str | None = None) -> list[str]:
    """The primary replay of a ``solution()`` value (see the module docstring)."""
    return solution_plans(value, tools, observation)[0]
