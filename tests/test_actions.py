"""Parsing of agent actions (spade_envs.actions): boxed answers, tool calls, <answer>, replay rules."""

from __future__ import annotations

import json

import pytest

from spade_envs.actions import (
    ToolCall,
    extract_answer,
    extract_boxed,
    parse_tool_calls,
)
from spade_envs.solutions import solution_to_actions


# -- \boxed{} --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("The answer is \\boxed{42}.", "42"),
        ("\\boxed{ 7 }", "7"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{{a}{b{c}}}", "{a}{b{c}}"),
        ("first \\boxed{1} then \\boxed{2}", "2"),  # the last one counts
        ("\\boxed{1} and a broken \\boxed{", "1"),  # an unclosed last box is skipped
        ("\\boxed{}", ""),
        ("no box here", None),
        ("\\boxed{unclosed {", None),
        ("", None),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_extract_boxed_is_total_on_non_strings():
    assert extract_boxed(None) is None  # type: ignore[arg-type]
    assert extract_boxed(123) is None  # type: ignore[arg-type]


# -- <answer> --------------------------------------------------------------------------
def test_extract_answer_takes_the_first_block_stripped():
    # SPADE's base class checks the first <answer> (re.search)
    assert extract_answer("<answer> 12 </answer>") == "12"
    assert extract_answer("<answer>a</answer> ... <answer>b\nc</answer>") == "a"
    assert extract_answer("<answer>b\nc</answer>") == "b\nc"
    assert extract_answer("<answer></answer>") == ""
    assert extract_answer("answer: 12") is None
    assert extract_answer("<answer>unterminated") is None
    assert extract_answer(None) is None  # type: ignore[arg-type]


# -- <tool_call> -----------------------------------------------------------------------
def test_single_tool_call():
    calls = parse_tool_calls('<tool_call>{"name": "get", "arguments": {"id": 3}}</tool_call>')
    assert calls == [ToolCall(name="get", arguments={"id": 3}, raw='{"name": "get", "arguments": {"id": 3}}')]
    assert calls[0].error is None


def test_several_tool_calls_in_order_across_lines():
    text = (
        "I will look both up.\n"
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n'
        "and then\n"
        '<tool_call>\n{"name": "b",\n "arguments": {"y": [1, 2]}}\n</tool_call>'
    )
    calls = parse_tool_calls(text)
    assert [c.name for c in calls] == ["a", "b"]
    assert calls[1].arguments == {"y": [1, 2]}
    assert all(c.error is None for c in calls)


def test_no_tool_call():
    assert parse_tool_calls("just text \\boxed{3}") == []
    assert parse_tool_calls("<tool_call>never closed") == []
    assert parse_tool_calls(None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("{not json}", "not valid JSON"),
        ('{"name": "a", "arguments": {"x": 1}', "not valid JSON"),  # missing brace
        ("[1, 2]", "JSON object"),
        ('"just a string"', "JSON object"),
        ('{"arguments": {}}', "no string 'name'"),
        ('{"name": 5, "arguments": {}}', "no string 'name'"),
        ('{"name": "", "arguments": {}}', "no string 'name'"),
        ('{"name": "a", "arguments": [1]}', "must be a JSON object"),
        ('{"name": "a", "arguments": "{broken"}', "string that is not JSON"),
        ("", "not valid JSON"),
    ],
)
def test_malformed_tool_calls_carry_an_error(body, fragment):
    (call,) = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert call.error is not None and fragment in call.error


def test_malformed_call_does_not_hide_valid_neighbours():
    text = '<tool_call>{oops}</tool_call><tool_call>{"name": "ok", "arguments": {}}</tool_call>'
    bad, good = parse_tool_calls(text)
    assert bad.error and good.error is None and good.name == "ok"


def test_argument_variants():
    (c1,) = parse_tool_calls('<tool_call>{"name": "a", "parameters": {"k": 1}}</tool_call>')
    assert c1.arguments == {"k": 1}  # some models say "parameters"
    (c2,) = parse_tool_calls('<tool_call>{"name": "a", "arguments": "{\\"k\\": 2}"}</tool_call>')
    assert c2.arguments == {"k": 2}  # double-encoded arguments
    (c3,) = parse_tool_calls('<tool_call>{"name": "a", "arguments": null}</tool_call>')
    assert c3.arguments == {} and c3.error is None
    (c4,) = parse_tool_calls('<tool_call>{"name": "a"}</tool_call>')
    assert c4.arguments == {} and c4.error is None


def test_deeply_nested_json_is_an_error_not_a_crash():
    body = "[" * 100_000 + "]" * 100_000
    (call,) = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert call.error


def test_tool_call_to_text_round_trips():
    call = ToolCall(name="send", arguments={"text": "héllo", "n": [1, 2]})
    (again,) = parse_tool_calls(call.to_text())
    assert again.name == "send" and again.arguments == call.arguments
    assert "\n" not in call.to_text()


# -- solution_to_actions ---------------------------------------------------------------
def test_bare_answer_is_replayed_boxed():
    assert solution_to_actions("42") == ["\\boxed{42}"]
    assert solution_to_actions("  Ada, Bo \n") == ["\\boxed{Ada, Bo}"]


def test_boxed_lines_are_one_action_each():
    text = "\\boxed{up}\n\n  \\boxed{left}  \n\\boxed{press}"
    assert solution_to_actions(text) == ["\\boxed{up}", "\\boxed{left}", "\\boxed{press}"]


def test_tool_use_free_text_keeps_only_blocks_in_order():
    text = (
        "First look it up:\n"
        '<tool_call>{"name":"find","arguments":{"q":"x"}}</tool_call> then '
        '<tool_call>{"name": "get", "arguments": {}}</tool_call>\n'
        "so the answer is <answer> 17 </answer>. Done."
    )
    actions = solution_to_actions(text)
    assert len(actions) == 3
    assert json.loads(actions[0][len("<tool_call>") : -len("</tool_call>")]) == {"name": "find", "arguments": {"q": "x"}}
    assert actions[1].startswith("<tool_call>") and '"get"' in actions[1]
    assert actions[2] == "<answer>17</answer>"
    assert extract_answer(actions[2]) == "17"


def test_blocks_win_over_boxed_text():
    text = "\\boxed{ignored}\n<answer>5</answer>"
    assert solution_to_actions(text) == ["<answer>5</answer>"]


def test_malformed_call_in_a_solution_is_kept_verbatim():
    actions = solution_to_actions("<tool_call>{bad}</tool_call><answer>1</answer>")
    assert actions == ["<tool_call>{bad}</tool_call>", "<answer>1</answer>"]


def test_empty_solution():
    assert solution_to_actions("") == ["\\boxed{}"]
    assert solution_to_actions(None) == ["\\boxed{}"]  # type: ignore[arg-type]
