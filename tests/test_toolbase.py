"""ToolUseBaseEnv (spade_envs/toolbase.py) and the runtime's ToolGate (spade_envs/runtime.py).

Arguments are validated against each tool's JSON Schema before the tool runs; a violation
is an error observation naming the problem, the tool is not run and the state is unchanged.
"""

from __future__ import annotations

import copy
import json

import pytest

from spade_envs.gym_env import SpadeEnv
from spade_envs.registry.catalog import seed_records
from spade_envs.runtime import InProcessRuntime, ToolGate
from spade_envs.toolbase import ToolUseBaseEnv
from spade_envs.tools import validate_tool_specs


class CounterEnv(ToolUseBaseEnv):
    """A tiny tool-use env: a counter with a mode; the answer is the final counter value."""

    def __init__(self, max_turns: int = 5, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        self.turn_count = 0
        self._call_history = []
        self._state = {"value": 0, "mode": "up", "runs": 0}
        self._expected_answer = "1234.5"
        self._tools = {
            "add": {
                "description": "Add an amount to the counter.",
                "parameters": {
                    "type": "object",
                    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 10}},
                    "required": ["amount"],
                    "additionalProperties": False,
                },
            },
            "set_mode": {
                "description": "Set the counting mode.",
                "parameters": {
                    "type": "object",
                    "properties": {"mode": {"type": "string", "enum": ["up", "down"]},
                                   "tag": {"type": "string", "pattern": "^T[0-9]{2}$"}},
                    "required": ["mode"],
                },
            },
            "boom": {"description": "Always fails.", "parameters": {"type": "object", "properties": {}}},
        }
        return "Count things.", {}

    def tool_add(self, amount):
        self._state["runs"] += 1
        self._state["value"] += amount if self._state["mode"] == "up" else -amount
        return f"value={self._state['value']}"

    def tool_set_mode(self, mode, tag=None):
        self._state["runs"] += 1
        self._state["mode"] = mode
        return f"mode={mode}"

    def tool_boom(self):
        raise ValueError("kaboom")

    def solution(self):
        return "<answer>1234.5</answer>"


def call(tool: str, /, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


@pytest.fixture()
def env() -> CounterEnv:
    return CounterEnv()


def assert_rejected(env: CounterEnv, action: str, *needles: str, reward_is: float = 0.0) -> str:
    before = copy.deepcopy(env._state)
    obs, reward, terminated, truncated, info = env.step(action)
    assert env._state == before, "a rejected call must not change the state"
    assert env._call_history == [], "a rejected call must not run the tool"
    assert reward == reward_is and not terminated
    for needle in needles:
        assert needle in obs, (needle, obs)
    return obs


# -- argument validation before the tool runs -----------------------------------------
def test_wrong_type_is_rejected_and_named(env):
    obs = assert_rejected(env, call("add", amount="3"), "add", "amount", "integer", "not run")
    assert obs.startswith("Tool result:\nError")


def test_bool_is_not_an_integer(env):
    assert_rejected(env, call("add", amount=True), "add", "amount")


def test_missing_required_property_is_named(env):
    assert_rejected(env, call("add"), "add", "'amount' is a required property")


def test_enum_violation_is_named(env):
    assert_rejected(env, call("set_mode", mode="sideways"), "set_mode", "mode", "sideways", "up")


def test_pattern_and_bounds_and_extra_properties(env):
    assert_rejected(env, call("set_mode", mode="up", tag="X1"), "tag", "does not match")
    assert_rejected(env, call("add", amount=11), "amount", "maximum")
    assert_rejected(env, call("add", amount=0), "amount", "minimum")
    assert_rejected(env, call("add", amount=2, extra=1), "extra")


def test_non_object_arguments_are_rejected(env):
    assert_rejected(env, '<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>', "Format error", "object",
                    reward_is=-0.1)


def test_valid_call_runs_and_is_recorded(env):
    obs, reward, terminated, truncated, _ = env.step(call("add", amount=4))
    assert obs == "Tool result:\nvalue=4" and reward == 0.0 and not terminated and not truncated
    assert env._state["value"] == 4
    assert env._call_history == [{"name": "add", "arguments": {"amount": 4}, "result": "value=4"}]


def test_double_encoded_arguments_are_accepted(env):
    obs, *_ = env.step('<tool_call>{"name": "add", "arguments": "{\\"amount\\": 2}"}</tool_call>')
    assert "value=2" in obs and env._state["value"] == 2


def test_several_calls_in_one_message_run_in_order(env):
    action = call("add", amount=5) + "\nthen\n" + call("set_mode", mode="down") + call("add", amount=2)
    obs, *_ = env.step(action)
    assert obs.count("Tool result:") == 3
    assert obs.index("value=5") < obs.index("mode=down") < obs.index("value=3")
    assert env._state == {"value": 3, "mode": "down", "runs": 3}
    assert env.agent_turns == 1, "one message is one agent turn however many calls it holds"
    assert env.turn_count == 0, "tool-call-only steps do not use up max_turns (SPADE's execute_tool)"


def test_invalid_call_among_valid_ones_only_skips_itself(env):
    obs, *_ = env.step(call("add", amount=5) + call("add", amount="x") + call("add", amount=1))
    assert "value=5" in obs and "value=6" in obs and "invalid arguments for tool 'add'" in obs
    assert env._state["value"] == 6 and len(env._call_history) == 2


# -- parsing failures and unknown tools -------------------------------------------------
def test_malformed_json_is_a_format_error(env):
    assert_rejected(env, '<tool_call>{"name": "add", "arguments": {"amount": 1}</tool_call>',
                    "Format error", "not valid JSON", reward_is=-0.1)  # SPADE: -0.1 for invalid JSON
    assert_rejected(env, "<tool_call>[1, 2]</tool_call>", "Format error", reward_is=-0.1)
    assert_rejected(env, '<tool_call>{"arguments": {}}</tool_call>', "Format error", "name", reward_is=-0.1)
    assert env.turn_count == 3, "format errors use up the env's turns"


def test_unknown_tool_lists_the_available_ones(env):
    assert_rejected(env, call("delete_everything"), "unknown tool 'delete_everything'", "add", "set_mode")


def test_no_call_and_no_answer_costs_format_penalty(env):
    obs, reward, terminated, truncated, _ = env.step("I think I will just chat.")
    assert reward == pytest.approx(-0.1) and not terminated and "<tool_call>" in obs


def test_tool_exception_becomes_an_observation(env):
    obs, reward, terminated, *_ = env.step(call("boom"))
    assert "Error calling boom" in obs and "kaboom" in obs and not terminated
    assert env._call_history == []


# -- answers, turns, reset ----------------------------------------------------------------
def test_correct_answer_wins(env):
    obs, reward, terminated, truncated, _ = env.step("<answer>1234.5</answer>")
    assert (reward, terminated, truncated) == (1.0, True, False)


@pytest.mark.parametrize("answer", ["1234.50", "$1,234.5", " 1234.5 "])
def test_numeric_answers_match_within_tolerance(env, answer):
    assert env.step(f"<answer>{answer}</answer>")[1] == 1.0


@pytest.mark.parametrize("answer", ["1234", "1235.5", "", "twelve", "nan", "inf"])
def test_wrong_answer_gives_zero_and_continues(env, answer):
    obs, reward, terminated, truncated, _ = env.step(f"<answer>{answer}</answer>")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "1234" not in obs, "feedback must not reveal the answer"


def test_text_answers_are_case_insensitive():
    e = CounterEnv()
    e._expected_answer = "Room B"
    assert e.step("<answer>room b</answer>")[1] == 1.0


def test_truncation_at_max_turns_and_reset_clears_turns():
    e = CounterEnv(max_turns=3)
    flags = [e.step("<answer>wrong</answer>")[3] for _ in range(3)]
    assert flags == [False, False, True]
    assert e.step("<answer>0</answer>")[3] is True  # still truncated past the limit
    e.reset()
    assert e.turn_count == 0 and e.agent_turns == 0 and e._call_history == [] and e._state["value"] == 0
    assert e.step(call("add", amount=1))[3] is False


def test_tool_calls_do_not_use_up_max_turns_but_agent_turns_are_capped():
    # SPADE: a 12-call task fits max_turns=10, since execute_tool does not count turns;
    # the agent's own budget (25 messages by default) still ends the episode
    e = CounterEnv(max_turns=10)
    flags = [e.step(call("add", amount=1))[3] for _ in range(12)]
    assert not any(flags) and e.turn_count == 0 and e._state["runs"] == 12
    flags = [e.step(call("add", amount=1))[3] for _ in range(13)]
    assert flags[-1] is True and not any(flags[:-1]) and e.agent_turns == 25
    assert ToolUseBaseEnv.DEFAULT_AGENT_TURNS == 25
    short = CounterEnv(max_turns=10, max_agent_turns=3)
    assert [short.step(call("add", amount=1))[3] for _ in range(3)] == [False, False, True]


def test_answer_on_the_last_turn_wins_without_truncation():
    e = CounterEnv(max_turns=2)
    e.step(call("add", amount=1))
    assert e.step("<answer>1234.5</answer>")[1:4] == (1.0, True, False)


def test_get_tools_are_valid_openai_specs(env):
    specs = validate_tool_specs(env.get_tools(), implemented={"add", "set_mode", "boom"})
    assert [s["function"]["name"] for s in specs] == ["add", "set_mode", "boom"]


def test_validator_follows_tool_changes(env):
    env.step(call("add", amount=1))
    env._tools["add"]["parameters"]["properties"]["amount"]["maximum"] = 100
    obs, *_ = env.step(call("add", amount=50))
    assert "value=51" in obs


# -- SPADE sources: the base class is pre-loaded, not imported -----------------------------
SPADE_TOOL_SOURCE = '''
class NoteEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=4, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        self._state = {"notes": []}
        self._expected_answer = "7"
        self._tools = {"write": {"description": "Write a note.", "parameters": {
            "type": "object", "properties": {"text": {"type": "string", "maxLength": 5}}, "required": ["text"]}}}
        return "Write notes.", {}

    def tool_write(self, text):
        self._state["notes"].append(text)
        return "ok"

    def solution(self):
        return '<tool_call>{"name": "write", "arguments": {"text": "hi"}}</tool_call><answer>7</answer>'
'''


def test_spade_source_subclasses_base_without_import():
    session = InProcessRuntime().open(SPADE_TOOL_SOURCE)
    session.reset(0)
    assert [t["function"]["name"] for t in session.tools] == ["write"]
    obs, *_ = session.step(call("write", text="far too long"))
    assert "maxLength" in obs or "too long" in obs
    assert session.snapshot() == {"notes": []}
    assert session.step(call("write", text="hi"))[0] == "Tool result:\nok"
    assert session.snapshot() == {"notes": ["hi"]}
    assert session.step("<answer>7</answer>")[1] == 1.0


# -- ToolGate: programs with their own step() get validated arguments too --------------------
OWN_STEP_SOURCE = '''
import json
import re

class SwitchEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.reset()

    def reset(self, seed=None):
        self._state = {"steps_seen": 0, "lamp": "off"}
        return "A lamp.", {}

    def get_tools(self):
        return [{"type": "function", "function": {"name": "switch", "description": "Set the lamp.",
                 "parameters": {"type": "object", "properties": {"to": {"type": "string", "enum": ["on", "off"]}},
                                "required": ["to"]}}}]

    def tool_switch(self, to):
        self._state["lamp"] = to
        return "lamp " + to

    def step(self, action):
        self._state["steps_seen"] += 1
        m = re.search(r"<tool_call>(.*?)</tool_call>", action, re.S)
        if m:
            call = json.loads(m.group(1))
            return self.tool_switch(**call["arguments"]), 0.0, False, False, {}
        won = self._state["lamp"] == "on" and "done" in action
        return "ok", 1.0 if won else 0.0, won, False, {}

    def solution(self):
        return '<tool_call>{"name": "switch", "arguments": {"to": "on"}}</tool_call>\\n<answer>done</answer>'
'''


@pytest.fixture()
def own_step_session():
    session = InProcessRuntime().open(OWN_STEP_SOURCE)
    session.reset(0)
    return session


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [({"to": "dim"}, "'dim' is not one of"), ({}, "'to' is a required property"), ({"to": 1}, "not of type 'string'")],
)
def test_gate_blocks_invalid_arguments_before_the_program(own_step_session, arguments, needle):
    obs, reward, terminated, truncated, info = own_step_session.step(call("switch", **arguments))
    assert needle in obs and "switch" in obs and info["tool_error"] == obs
    assert reward == 0.0 and not terminated
    assert own_step_session.snapshot() == {"steps_seen": 0, "lamp": "off"}, "program must not be called"


def test_gate_blocks_unknown_tools_and_malformed_json(own_step_session):
    assert "unknown tool 'explode'" in own_step_session.step(call("explode"))[0]
    assert "not valid JSON" in own_step_session.step("<tool_call>{oops</tool_call>")[0]
    assert own_step_session.snapshot()["steps_seen"] == 0


def test_gate_passes_valid_calls_and_plain_actions(own_step_session):
    assert own_step_session.step(call("switch", to="on"))[0] == "lamp on"
    assert own_step_session.step("\\boxed{done}")[1:3] == (1.0, True)
    assert own_step_session.snapshot() == {"steps_seen": 2, "lamp": "on"}


def test_gate_through_gymnasium_wrapper():
    env = SpadeEnv(source=OWN_STEP_SOURCE, trust_remote_code=True)
    _, info = env.reset(seed=1)
    assert info["tools"][0]["function"]["name"] == "switch"
    obs, reward, terminated, truncated, info = env.step(call("switch", to="blue"))
    assert "blue" in obs and "tool_error" in info and reward == 0.0
    for action in env.solution_actions():
        obs, reward, terminated, truncated, info = env.step(action)
    assert reward == 1.0 and terminated


def test_gate_without_tools_checks_nothing():
    assert ToolGate([]).check(call("anything", x=1)) is None
    gate = ToolGate(validate_tool_specs([{"name": "f", "parameters": {"type": "object", "properties": {}}}]))
    assert gate.check("no calls here") is None
    assert gate.check(call("f")) is None
    assert "unknown tool 'g'" in gate.check(call("f") + call("g"))


# -- the shipped tool-use seeds keep their state on rejected calls ---------------------------
TOOL_SEEDS = [r for r in seed_records() if r.metadata.get("skill") == "tool use"]


@pytest.mark.parametrize("record", TOOL_SEEDS, ids=lambda r: str(r.env_id))
def test_seed_tools_reject_bad_arguments_without_side_effects(record):
    session = InProcessRuntime().open(record.source)
    session.reset(3)
    before = session.snapshot()
    for spec in session.tools:
        fn = spec["function"]
        params = fn["parameters"]
        bad = [{"__bogus__": 1}] if params.get("additionalProperties") is False else []
        if params.get("required"):
            bad.append({})  # a required property is missing
        for key, prop in params.get("properties", {}).items():
            wrong = 12345 if prop.get("type") == "string" else "not-a-number"
            bad.append({key: wrong})
        for arguments in bad:
            obs, reward, terminated, *_ = session.step(call(fn["name"], **arguments))
            assert "Error" in obs and fn["name"] in obs and not terminated, (fn["name"], arguments, obs)
    assert session.snapshot() == before
