"""Message-level Prefix Sliding (for HTTP backends)."""

from __future__ import annotations

import pytest

from spade_envs.agents.message_window import message_token_counter, slide_messages


def words(message: dict) -> int:
    return len((message.get("content") or "").split()) + 1


def conversation() -> list[dict]:
    return [
        {"role": "system", "content": "you are an agent"},  # 5
        {"role": "user", "content": "solve the lock"},  # 4
        {"role": "assistant", "content": "try one", "tool_calls": [{"id": "a"}]},  # 3
        {"role": "tool", "tool_call_id": "a", "content": "no"},  # 2
        {"role": "user", "content": "again please"},  # 3
        {"role": "assistant", "content": "try two now", "tool_calls": [{"id": "b"}]},  # 4
        {"role": "tool", "tool_call_id": "b", "content": "closer but no"},  # 4
        {"role": "user", "content": "last"},  # 2
    ]


def test_everything_kept_when_budget_is_large():
    msgs = conversation()
    assert slide_messages(msgs, 1000, words) == msgs


def test_head_plus_most_recent_whole_turns():
    msgs = conversation()
    # head = 9 tokens; newest first: user "last" (2) -> 11, assistant+tool b (8) -> 19, user "again" (3) -> 22
    out = slide_messages(msgs, 21, words)
    assert out == msgs[:2] + msgs[5:]
    out = slide_messages(msgs, 22, words)
    assert out == msgs[:2] + msgs[4:]
    # an assistant message is never separated from its tool results
    out = slide_messages(msgs, 18, words)
    assert out == msgs[:2] + msgs[7:]
    assert all(m["role"] != "tool" or out[i - 1]["role"] in ("assistant", "tool") for i, m in enumerate(out))


def test_head_kept_even_over_budget_and_input_untouched():
    msgs = conversation()
    before = [dict(m) for m in msgs]
    assert slide_messages(msgs, 3, words) == msgs[:2]
    assert msgs == before
    with pytest.raises(ValueError):
        slide_messages(msgs, -1, words)


def test_no_holes_once_a_turn_does_not_fit():
    msgs = conversation()
    msgs[7] = {"role": "user", "content": " ".join(["x"] * 50)}
    # the newest turn does not fit, so nothing older may be kept either
    assert slide_messages(msgs, 30, words) == msgs[:2]


def test_token_counter_from_a_tokenizer():
    class Tok:
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return list(range(len(text)))

    count = message_token_counter(Tok(), overhead=4)
    assert count({"role": "user", "content": "abc"}) == 7
    assert count({"role": "assistant", "content": None, "tool_calls": [1]}) == 4 + len("[1]")
