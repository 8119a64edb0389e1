r"""Parsing of agent actions: ``\boxed{...}``, ``<tool_call>...</tool_call>`` and
``<answer>...</answer>`` (the SPADE conventions, DESIGN.md section 3).

Contracts:

- every parser is total: it never raises on any input (non-strings give "nothing found");
- every parser runs in time linear in the length of its input: no backtracking regular
  expression, no rescanning from each candidate start (thousands of unclosed
  ``\boxed{`` or ``<tool_call>`` cost one pass);
- malformed tool calls are returned as :class:`ToolCall` objects with ``error`` set, so
  callers can answer with an error observation that names the problem.

Tool-call bodies may be SPADE's JSON (``{"name": ..., "arguments": {...}}``, also with
``"parameters"`` or double-encoded arguments) or the Qwen3.5 XML form
(``<function=name><parameter=key>value</parameter></function>``), as SPADE's agent-side
parser reads them. ``<answer>``: the FIRST block counts, as in SPADE's base class.
Replay of ``solution()`` text lives in :mod:`spade_envs.solutions`.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

_BOX = "\\boxed{"
_TC_OPEN, _TC_CLOSE = "<tool_call>", "</tool_call>"
_ANS_OPEN, _ANS_CLOSE = "<answer>", "</answer>"


@dataclass(frozen=True)
class ToolCall:
    """One parsed ``<tool_call>`` block. ``error`` is set when the body is unusable."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    raw: str = ""

    def to_text(self) -> str:
        """The canonical ``<tool_call>`` text of this call (one line of JSON)."""
        payload = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        return f"{_TC_OPEN}{payload}{_TC_CLOSE}"


def boxed_spans(text: str) -> list[tuple[int, int]]:
    r"""``(content_start, content_end)`` of every closed ``\boxed{...}`` (nested braces
    allowed), ordered by start; one left-to-right pass with a stack of open braces."""
    if not isinstance(text, str) or _BOX not in text:
        return []
    starts: list[int] = []
    ends: list[int] = []
    stack: list[int] = []  # position after "{"; negative (-pos - 1) when not opened by \boxed
    n, i = len(text), 0
    while i < n:  # one pass; ints only (millions of tuples would make the GC superlinear)
        ch = text[i]
        if ch == "\\":
            if text.startswith(_BOX, i):
                i += len(_BOX)
                stack.append(i)
                continue
        elif ch == "{":
            stack.append(-(i + 1) - 1)
        elif ch == "}" and stack:
            start = stack.pop()
            if start >= 0:
                starts.append(start)
                ends.append(i)
        i += 1
    spans = sorted(zip(starts, ends))
    return spans


def extract_boxed(text: str) -> str | None:
    r"""Content of the LAST closed ``\boxed{...}`` in ``text`` (stripped), or None."""
    spans = boxed_spans(text)
    if not spans:
        return None
    start, end = spans[-1]
    return text[start:end].strip()


def extract_all_boxed(text: str) -> list[str]:
    r"""Contents of the outermost closed ``\boxed{...}`` of ``text``, in order."""
    out: list[str] = []
    last_end = -1
    for start, end in boxed_spans(text):
        if start > last_end:  # not nested in the previous outer box
            out.append(text[start:end].strip())
            last_end = end
    return out


def _blocks(text: str, open_tag: str, close_tag: str) -> list[tuple[int, int, int, int]]:
    """``(block_start, body_start, body_end, block_end)`` of each ``open...close`` block,
    leftmost-shortest like a lazy regex, found with ``str.find`` (linear: once no close
    tag follows an open tag, none follows any later one either)."""
    out = []
    pos = 0
    while True:
        i = text.find(open_tag, pos)
        if i < 0:
            return out
        j = text.find(close_tag, i + len(open_tag))
        if j < 0:
            return out
        out.append((i, i + len(open_tag), j, j + len(close_tag)))
        pos = j + len(close_tag)


def answer_blocks(text: str) -> list[tuple[int, int, int, int]]:
    """Spans of the ``<answer>...</answer>`` blocks of ``text``."""
    return _blocks(text, _ANS_OPEN, _ANS_CLOSE) if isinstance(text, str) else []


def extract_answer(text: str) -> str | None:
    """Content of the FIRST ``<answer>...</answer>`` block, stripped, or None (SPADE)."""
    if not isinstance(text, str):
        return None
    i = text.find(_ANS_OPEN)
    if i < 0:
        return None
    j = text.find(_ANS_CLOSE, i + len(_ANS_OPEN))
    return None if j < 0 else text[i + len(_ANS_OPEN) : j].strip()


def tool_call_blocks(text: str) -> list[tuple[int, int, int, int]]:
    """Spans of the ``<tool_call>...</tool_call>`` blocks of ``text``."""
    return _blocks(text, _TC_OPEN, _TC_CLOSE) if isinstance(text, str) else []


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Every ``<tool_call>`` block of ``text`` in order; malformed ones carry ``error``."""
    if not isinstance(text, str):
        return []
    return [parse_tool_call_body(text[b:e]) for _, b, e, _ in tool_call_blocks(text)]


def parse_tool_call_body(body: str) -> ToolCall:
    """One block's body: JSON first, then the Qwen3.5 XML form."""
    raw = body.strip()
    if raw.startswith("<function="):
        call = _parse_xml(raw)
        if call is not None:
            return call
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = getattr(exc, "msg", None) or type(exc).__name__
        return ToolCall(name="", error=f"tool call is not valid JSON ({reason})", raw=raw)
    if not isinstance(payload, dict):
        return ToolCall(name="", error="tool call must be a JSON object with 'name' and 'arguments'", raw=raw)
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(name="", error="tool call has no string 'name'", raw=raw)
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):  # some models double-encode the arguments
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return ToolCall(name=name, error="'arguments' is a string that is not JSON", raw=raw)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(name=name, error="'arguments' must be a JSON object", raw=raw)
    return ToolCall(name=name, arguments=arguments, raw=raw)


def _is_word(s: str) -> bool:
    return bool(s) and all(c.isalnum() or c == "_" for c in s) and s.isascii()


def _parse_xml(raw: str) -> ToolCall | None:
    """``<function=NAME> <parameter=KEY>VALUE</parameter>... </function>`` (values that
    are JSON literals are decoded, the rest stay strings, HTML entities unescaped)."""
    head_end = raw.find(">")
    name = raw[len("<function=") : head_end] if head_end > 0 else ""
    if not _is_word(name):
        return None
    end = raw.find("</function>", head_end)
    if end < 0:
        return ToolCall(name=name, error="XML tool call has no </function>", raw=raw)
    body = raw[head_end + 1 : end]
    arguments: dict[str, Any] = {}
    pos = 0
    while True:
        i = body.find("<parameter=", pos)
        if i < 0:
            break
        k_end = body.find(">", i)
        v_end = body.find("</parameter>", k_end + 1) if k_end > 0 else -1
        if v_end < 0:
            return ToolCall(name=name, error="XML tool call has an unclosed <parameter=...>", raw=raw)
        key = body[i + len("<parameter=") : k_end]
        if not _is_word(key):
            return ToolCall(name=name, error=f"XML tool call has a bad parameter name {key[:40]!r}", raw=raw)
        value: Any = html.unescape(body[k_end + 1 : v_end].strip())
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            pass
        arguments[key] = value
        pos = v_end + len("</parameter>")
    return ToolCall(name=name, arguments=arguments, raw=raw)
