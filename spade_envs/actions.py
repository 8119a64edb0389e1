r"""Parsing of agent actions: ``\boxed{...}``, ``<tool_call>{json}</tool_call>`` and
``<answer>...</answer>`` (the SPADE conventions, DESIGN.md section 3).

All parsers are total: they never raise on any input string. Malformed tool calls are
returned as :class:`ToolCall` objects with ``error`` set, so callers can answer with an
error observation that names the problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_BLOCK_RE = re.compile(r"<tool_call>.*?</tool_call>|<answer>.*?</answer>", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One parsed ``<tool_call>`` block. ``error`` is set when the JSON is unusable."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    raw: str = ""

    def to_text(self) -> str:
        """The canonical ``<tool_call>`` text of this call (one line of JSON)."""
        payload = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        return f"<tool_call>{payload}</tool_call>"


def extract_boxed(text: str) -> str | None:
    r"""Content of the LAST ``\boxed{...}`` in ``text`` (nested braces allowed), or None."""
    if not isinstance(text, str):
        return None
    start = text.rfind("\\boxed{")
    while start != -1:
        i = start + len("\\boxed{")
        depth = 1
        j = i
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        if depth == 0:
            return text[i : j - 1].strip()
        start = text.rfind("\\boxed{", 0, start)
    return None


def extract_answer(text: str) -> str | None:
    """Content of the last ``<answer>...</answer>`` block, stripped, or None."""
    if not isinstance(text, str):
        return None
    found = _ANSWER_RE.findall(text)
    return found[-1].strip() if found else None


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Every ``<tool_call>`` block of ``text`` in order; malformed ones carry ``error``."""
    if not isinstance(text, str):
        return []
    return [_parse_one(body) for body in _TOOL_CALL_RE.findall(text)]


def _parse_one(body: str) -> ToolCall:
    raw = body.strip()
    try:
        payload = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        return ToolCall(name="", error=f"tool call is not valid JSON ({exc.msg if hasattr(exc, 'msg') else exc})", raw=raw)
    if not isinstance(payload, dict):
        return ToolCall(name="", error="tool call must be a JSON object with 'name' and 'arguments'", raw=raw)
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return ToolCall(name="", error="tool call has no string 'name'", raw=raw)
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):  # some models double-encode the arguments
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return ToolCall(name=name, error="'arguments' is a string that is not JSON", raw=raw)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolCall(name=name, error="'arguments' must be a JSON object", raw=raw)
    return ToolCall(name=name, arguments=arguments, raw=raw)


def solution_to_actions(text: str) -> list[str]:
    r"""Split the text of an environment's ``solution()`` into replayable actions.

    - text with ``<tool_call>``/``<answer>`` blocks: each block, in order, is one action
      (SPADE's tool-use solutions are free text around those blocks);
    - text with ``\boxed{}``: each non-empty line is one action (multi-step games);
    - anything else is a bare answer, replayed as ``\boxed{answer}``.
    """
    text = "" if text is None else str(text)
    blocks = _BLOCK_RE.findall(text)
    if blocks:
        actions = []
        for block in blocks:
            if block.startswith("<tool_call>"):
                call = _parse_one(block[len("<tool_call>") : -len("</tool_call>")])
                actions.append(block if call.error else call.to_text())
            else:
                actions.append(block.strip())
        return actions
    if "\\boxed{" in text:
        return [line.strip() for line in text.splitlines() if line.strip()]
    return [f"\\boxed{{{text.strip()}}}"]
