"""Prefix Sliding at the message level, for HTTP backends that take a chat, not a cache.

:func:`slide_messages` keeps the *head* of a conversation — every message up to and
including the first ``user`` message (system prompt, tool definitions sent as messages,
the task) — and then as many of the most recent *turns* as fit in a token budget. A turn
is a ``user`` or ``assistant`` message together with the ``tool`` messages that follow
it, so an assistant message with ``tool_calls`` is never separated from its results
(OpenAI-compatible servers reject orphaned ``tool`` messages). Kept turns are a contiguous
suffix of the conversation, in their original order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["slide_messages", "message_token_counter"]

Message = dict[str, Any]


def _split_head(messages: Sequence[Message]) -> int:
    """Index just past the first user message (the whole list if there is none)."""
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            return i + 1
    return len(messages)


def _turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Group messages into turns: a non-``tool`` message plus the ``tool`` messages after it."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "tool" and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return turns


def slide_messages(
    messages: Sequence[Message],
    budget_tokens: int,
    count_tokens: Callable[[Message], int],
) -> list[Message]:
    """Return the head (up to and including the first user message) plus the longest
    suffix of whole turns whose total ``count_tokens`` fits ``budget_tokens``.

    The head is always kept, even alone over budget (it is the prompt; nothing in it can
    go). Turns are added newest first and the first one that does not fit stops the
    search, so the result never has holes. The input list is not modified; the messages
    returned are the same objects.
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, got {budget_tokens}")
    cut = _split_head(messages)
    head, rest = list(messages[:cut]), messages[cut:]
    used = sum(count_tokens(m) for m in head)
    kept: list[list[Message]] = []
    for turn in reversed(_turns(rest)):
        cost = sum(count_tokens(m) for m in turn)
        if used + cost > budget_tokens:
            break
        kept.append(turn)
        used += cost
    return head + [m for turn in reversed(kept) for m in turn]


def message_token_counter(tokenizer: Any, overhead: int = 4) -> Callable[[Message], int]:
    """A ``count_tokens`` for :func:`slide_messages` from a Hugging Face tokenizer (any
    object whose ``encode(str)`` returns a list): tokens of the content and of the
    serialized ``tool_calls``, plus ``overhead`` per message for the role markers."""

    def count(message: Message) -> int:
        text = message.get("content") or ""
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        if message.get("tool_calls"):
            text += json.dumps(message["tool_calls"], ensure_ascii=False)
        return len(tokenizer.encode(text, add_special_tokens=False)) + overhead

    return count
