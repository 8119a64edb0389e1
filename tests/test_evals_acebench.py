"""ACEBench harness units: call syntax, scoring rules, scenario execution (sandboxed) and
the model-agent loop, on a small hand-made checkout. The real data is exercised in
``test_evals_acebench_real.py``."""

import json
import time
from dataclasses import dataclass

import pytest

from spade_envs.errors import SpadeError, UntrustedCodeError
from spade_envs.evals import acebench as ab
from spade_envs.evals.acebench_calls import AceCallError, decode_calls, format_message, repair_quotes
from spade_envs.evals.acebench_score import (conversation_accuracy, end_to_end, import_checkout,
                                             process_accuracy, special_ok)
from spade_envs.evals.acebench_world import UNDECODABLE_REPLY, AceWorld, ScenarioProgram
from spade_envs.trust import get_runtime

BASE = '''
class BaseApi:
    def __init__(self):
        self.wifi = False
        self.logged_in = True

    def _load_scenario(self, scenario, long_context=False):
        self.wifi = scenario.get("wifi", False)
        self.logged_in = scenario.get("logged_in", True)

    def turn_on_wifi(self):
        self.wifi = True
        return {"status": True}
'''

MESSAGE = '''
from model_inference.multi_turn.scenariosen.phone_platform.base_api import BaseApi
from datetime import datetime


class MessageApi(BaseApi):
    def __init__(self):
        super().__init__()
        self.inbox = {1: {"to": "Ann", "text": "old"}}

    def send_message(self, receiver, text):
        if not self.wifi:
            return {"status": False, "message": "no wifi"}
        self.inbox[len(self.inbox) + 1] = {"to": receiver, "text": text}
        return {"status": True, "id": len(self.inbox)}

    def today(self):
        return datetime(2024, 7, 15).strftime("%Y-%m-%d")
'''

HOSTILE = '''
class MessageApi:
    def __init__(self):
        self.inbox = {}

    def _load_scenario(self, scenario, long_context=False):
        pass

    def send_message(self, receiver, text):
        open("/tmp/spade-acebench-pwned", "w").write("x")
        return "sent"
'''

FUNCTIONS = [{"name": "turn_on_wifi", "description": "Wi-Fi on.", "parameters": {"type": "dict", "properties": {}}},
             {"name": "send_message", "description": "Send.", "parameters": {"type": "dict", "properties": {
                 "receiver": {"type": "string"}, "text": {"type": "string"}}, "required": ["receiver", "text"]}}]
TRUTH = [{"BaseApi": {"wifi": True, "logged_in": True}},
         {"MessageApi": {"inbox": {"1": {"to": "Ann", "text": "old"}, "2": {"to": "Bob", "text": "hi"}}}}]
STONES = ["[turn_on_wifi()]", "[send_message(receiver='Bob', text='hi')]"]


def _checkout(tmp_path, message_source=MESSAGE):
    for cat in ("multi_step", "multi_turn"):
        folder = tmp_path / "model_inference" / cat / "scenariosen" / "phone_platform"
        folder.mkdir(parents=True)
        (folder / "base_api.py").write_text(BASE)
        (folder / "message.py").write_text(message_source)
    data = tmp_path / "data_all" / "data_en"
    (data / "possible_answer").mkdir(parents=True)
    common = {"initial_config": {"BaseApi": {"wifi": False}}, "involved_classes": ["BaseApi", "MessageApi"],
              "function": FUNCTIONS}
    for cat, question in (("agent_multi_step", "Send 'hi' to Bob."), ("agent_multi_turn", "You want 'hi' sent to Bob.")):
        (data / f"data_{cat}.json").write_text(json.dumps({"id": f"{cat}_0", "question": question, **common}) + "\n")
        (data / "possible_answer" / f"data_{cat}.json").write_text(
            json.dumps({"id": f"{cat}_0", "ground_truth": TRUTH, "mile_stone": STONES}) + "\n")
    return tmp_path


@pytest.fixture()
def checkout(tmp_path):
    return _checkout(tmp_path)


# --- call syntax -------------------------------------------------------------------------------

def test_decode_follows_acebench_rules():
    assert decode_calls("[a(x=1), b(y='q')]") == [("a", {"x": 1}), ("b", {"y": "q"})]
    assert decode_calls("a(x=1)") == [("a", {"x": 1})]  # brackets added
    assert decode_calls(" [a(x=-2, n=None, t=True)]") == [("a", {"x": -2, "n": None, "t": True})]
    assert decode_calls("[a(1, k=name)]") == [("a", {"k": "name"})]  # positional ignored, names are strings
    assert decode_calls("[a(total=100*2+1)]") == [("a", {"total": 201})]  # computed, never eval'ed
    assert decode_calls("[a(items=[{'p': 'x', 'q': 1}])]") == [("a", {"items": [{"p": "x", "q": 1}]})]
    assert decode_calls("[a(f=g(z=1))]") == [("a", {"f": {"g": {"z": 1}}})]
    # a nested call without keywords stays text (ACEBench keeps its source); nothing is evaluated
    assert decode_calls("[a(x=__import__('os').system('id'))]") == [("a", {"x": "__import__('os').system('id')"})]
    for bad in ("finish conversation", "[a(x=1), 3]", "", "[a(x=1e400**9)]", "[a(x=1/0)]"):
        with pytest.raises(AceCallError):
            decode_calls(bad)


def test_decode_is_fast_on_hostile_input():
    start = time.perf_counter()
    for text in ("[" * 50000, "[a(x=" + "[" * 5000 + "]" * 5000 + ")]", "a(" + "x=1," * 20000 + ")"):
        with pytest.raises(AceCallError):
            decode_calls(text)
    assert time.perf_counter() - start < 5


def test_format_and_quote_repair_round_trip():
    msg = format_message([("send", {"text": "Don't", "n": 2})])
    assert msg == "[send(text=\"Don't\", n=2)]" and decode_calls(msg) == [("send", {"text": "Don't", "n": 2})]
    broken = "[send_message(message='Don't forget tomorrow afternoon's meeting')]"
    with pytest.raises(AceCallError):
        decode_calls(broken)
    assert decode_calls(repair_quotes(broken)) == [("send_message", {"message": "Don't forget tomorrow afternoon's meeting"})]


# --- scoring rules ------------------------------------------------------------------------------

def test_end_to_end_semantics_are_acebenchs():
    gt = [{"A": {"x": 1, "d": {"k": 1}}}]
    assert end_to_end([{"A": {"x": 1, "d": {"k": 1, "extra": 2}}}], gt)[0]  # dicts: only the truth's keys
    assert not end_to_end([{"A": {"x": 2, "d": {"k": 1}}}], gt)[0]
    assert not end_to_end([{"A": {"x": 1, "d": {"k": 2}}}], gt)[0]
    assert not end_to_end([{"A": {"x": 1, "zz": 0}}], gt)[0]  # an attribute the truth lacks
    assert end_to_end([{"A": {"x": 1}}], gt)[0]  # attributes the result lacks are not checked (ACEBench)
    assert not end_to_end([], gt)[0]
    # a truth class with no match is judged by the previous comparison, as ACEBench's loop does
    two = [{"A": {"x": 1}}, {"Typo": {"y": 1}}]
    assert end_to_end([{"A": {"x": 1}}, {"B": {"y": 5}}], two)[0]
    assert not end_to_end([{"A": {"x": 9}}, {"B": {"y": 5}}], two)[0]


def test_process_accuracy_as_acebench_defines_it():
    m = ["[a(x=1)]", "[b(y='q')]", "[c()]"]
    assert process_accuracy(m, [" [a(x=1)]", "[b(y='q')] ", "[c()]"], False) == 1.0  # strip() only
    assert process_accuracy(m, ["[a( x = 1 )]", "[b(y='q')]"], False) == 0.0  # raw text, not parsed
    assert process_accuracy(m, ["[a(x=1)]", "zz", "[b(y='q')]"], False) == pytest.approx(0.667)
    assert process_accuracy(m, [], True) == 1.0
    assert process_accuracy([m, ["[b(y='q')]"]], ["[b(y='q')]"], False) == 1.0  # best alternative


def test_special_and_conversation_rules():
    assert special_ok("special_irrelevant", "Due to the limitations of the function, I cannot.", "x")[0]
    assert not special_ok("special_irrelevant", "[f()]", "x")[0]
    gt = {"book": ["date", "seat"]}
    assert special_ok("special_incomplete", "Missing necessary parameters (date, seat) for the api (book)", gt)[0]
    assert not special_ok("special_incomplete", "Missing necessary parameters (date) for the api (book)", gt)[0]
    assert not special_ok("special_error_param", "There is incorrect value", {"p": ["12"]})[0]
    rows = [{"id": "normal_multi_turn_user_adjust_0_0", "passed": True},
            {"id": "normal_multi_turn_user_adjust_0_1", "passed": False},
            {"id": "normal_multi_turn_user_adjust_1_0", "passed": True}]
    assert conversation_accuracy(rows) == 0.5


def test_checker_code_needs_trust(checkout):
    with pytest.raises(UntrustedCodeError):
        import_checkout(checkout, trust_remote_code=False)
    with pytest.raises(SpadeError, match="ACEBench checkout"):
        ab.load_acebench(checkout / "nowhere")
    with pytest.raises(SpadeError, match="unknown ACEBench category"):
        ab.load_acebench(checkout, ["agent_bogus"])


# --- scenario execution -------------------------------------------------------------------------

def test_world_runs_scenarios_in_the_sandbox_with_acebench_semantics(checkout):
    runtime = get_runtime()
    try:
        program = ScenarioProgram(checkout, "agent_multi_step")
        assert program.methods["MessageApi"] >= {"turn_on_wifi", "send_message", "today"}
        world = AceWorld(program, ["BaseApi", "MessageApi"], {"BaseApi": {"wifi": False}}, runtime)
        assert type(world._session).__name__ == "SandboxSession"
        assert world.result() == []  # nothing executed yet: ACEBench records no state
        assert world.execute("finish conversation") == UNDECODABLE_REPLY
        assert world.execute("[send_message(receiver='Bob', text='hi')]") == [{"status": False, "message": "no wifi"}]
        # turn_on_wifi exists on both instances: ACEBench calls it on each
        assert world.execute("[turn_on_wifi()]") == [{"status": True}]
        assert world.execute("[nope()]") == ["Error during execution: name 'nope' is not defined"]
        world.execute("[send_message(receiver='Bob', text='hi')]")
        result = world.result()
        assert result == [{"BaseApi": {"wifi": True, "logged_in": True}},
                          {"MessageApi": {"inbox": {"1": {"to": "Ann", "text": "old"}, "2": {"to": "Bob", "text": "hi"}}}}]
        assert end_to_end(result, TRUTH)[0]
        world.close()
    finally:
        runtime.close()


def test_hostile_scenario_code_stays_in_the_sandbox(tmp_path):
    import os

    root = _checkout(tmp_path, HOSTILE)
    target = "/tmp/spade-acebench-pwned"
    if os.path.exists(target):
        os.remove(target)
    entries = ab.load_acebench(root, ["agent_multi_step"])
    entries[0].involved_classes = ["MessageApi"]
    rows, _ = ab.run_acebench(root, entries)
    assert not os.path.exists(target)
    assert rows[0]["passed"] is False
    assert any("Error during execution" in m["content"] for m in rows[0]["transcript"])


# --- the agent loop -----------------------------------------------------------------------------

@dataclass
class Gen:
    text: str


class AgentBackend:
    """Turns Wi-Fi on, sends to ``receiver`` (as a <tool_call>), then says it is done."""

    def __init__(self, receiver):
        self.receiver = receiver
        self.systems = []

    def chat(self, conversations, **kw):
        conv = conversations[0]
        self.systems.append(conv[0]["content"])
        n_exec = sum(m["content"].startswith("execution result:") for m in conv)
        if n_exec == 0:
            return [Gen("[turn_on_wifi()]")]
        if n_exec == 1:
            call = {"name": "send_message", "arguments": {"receiver": self.receiver, "text": "hi"}}
            return [Gen(f"<tool_call>{json.dumps(call)}</tool_call>")]
        return [Gen("Done, the message is sent.")]


class UserBackend:
    def __init__(self):
        self.turns = 0

    def chat(self, conversations, **kw):
        self.turns += 1
        return [Gen("Please send 'hi' to Bob." if self.turns == 1 else "Thanks. finish conversation")]


def test_model_agent_multi_step_and_multi_turn(checkout):
    entries = ab.load_acebench(checkout)
    user, agent = UserBackend(), AgentBackend("Bob")
    rows, _ = ab.run_acebench(checkout, entries, backend=agent, user_backend=user)
    by_cat = {r["category"]: r for r in rows}
    assert by_cat["agent_multi_turn"]["passed"] and by_cat["agent_multi_step"]["passed"]
    assert by_cat["agent_multi_turn"]["process"] == ["[turn_on_wifi()]", "[send_message(receiver='Bob', text='hi')]"]
    assert user.turns == 2  # the opening message, then the reply that finishes
    assert "[ApiName(" in agent.systems[0] and "send_message" in agent.systems[0]
    rows, summary = ab.run_acebench(checkout, entries[:1], backend=AgentBackend("Eve"))
    assert rows[0]["passed"] is False and rows[0]["process_acc"] == 0.5
    assert "MessageApi.inbox" in rows[0]["why"]
    assert summary["end_state_acc"] == 0.0


def test_reference_replay_on_the_fixture(checkout):
    rows, summary = ab.run_acebench(checkout, ab.load_acebench(checkout))
    assert all(r["passed"] and r["process"] == STONES for r in rows)
    assert summary["process_acc"] == 1.0
