"""ACEBench agent format on a tiny hand-made checkout (real data is not available here)."""

import json
from dataclasses import dataclass

import pytest

from spade_envs.errors import SpadeError, UntrustedCodeError
from spade_envs.evals import acebench as ab

SCENARIO = '''
class MessageApi:
    def __init__(self):
        self.logged_in = False
        self.inbox = {}
        self.count = 0

    def _load_scenario(self, config):
        self.inbox = config.get("inbox", {})
        self.count = len(self.inbox)

    def login(self, user_id):
        self.logged_in = True
        return {"status": True, "user": user_id}

    def send_message(self, receiver, text):
        if not self.logged_in:
            return {"status": False, "message": "not logged in"}
        self.count += 1
        self.inbox[str(self.count)] = {"to": receiver, "text": text}
        return {"status": True, "id": self.count}
'''

FUNCTIONS = [
    {"name": "login", "description": "Log in.", "parameters": {"type": "dict", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]}},
    {"name": "send_message", "description": "Send.", "parameters": {"type": "dict", "properties": {
        "receiver": {"type": "string"}, "text": {"type": "string"}}, "required": ["receiver", "text"]}},
]
MILESTONES = ["login(user_id='U1')", "send_message(receiver='Bob', text='hi')"]
GROUND_TRUTH = [{"MessageApi": {"logged_in": True, "inbox": {"1": {"to": "Ann", "text": "old"}, "2": {"to": "Bob", "text": "hi"}}}}]


@pytest.fixture()
def checkout(tmp_path):
    (tmp_path / "model_inference" / "multi_turn" / "scenariosen").mkdir(parents=True)
    (tmp_path / "model_inference" / "multi_turn" / "scenariosen" / "message.py").write_text(SCENARIO)
    data = tmp_path / "data_all" / "data_en"
    (data / "possible_answer").mkdir(parents=True)
    common = {"initial_config": {"MessageApi": {"inbox": {"1": {"to": "Ann", "text": "old"}}}},
              "involved_classes": ["MessageApi"], "function": FUNCTIONS}
    for cat, question in (("agent_multi_step", "Log in as U1 and send 'hi' to Bob."),
                          ("agent_multi_turn", "You are U1. You want to send 'hi' to Bob.")):
        (data / f"data_{cat}.json").write_text(json.dumps({"id": f"{cat}_0", "question": question, **common}) + "\n")
        (data / "possible_answer" / f"data_{cat}.json").write_text(
            json.dumps({"id": f"{cat}_0", "ground_truth": GROUND_TRUTH, "mile_stone": MILESTONES}) + "\n")
    return tmp_path


def test_loader_and_trust(checkout):
    entries = ab.load_acebench(checkout)
    assert [e.category for e in entries] == ["agent_multi_turn", "agent_multi_step"]
    assert entries[0].milestones == MILESTONES and entries[0].involved_classes == ["MessageApi"]
    with pytest.raises(UntrustedCodeError):
        ab.checkout_resolver(checkout)
    with pytest.raises(SpadeError, match="ACEBench checkout"):
        ab.load_acebench(checkout / "nowhere")


def test_reference_replay_scores_full(checkout):
    entries = ab.load_acebench(checkout)
    rows, summary = ab.run_acebench(entries, ab.checkout_resolver(checkout, trust_remote_code=True))
    assert all(r["end_state_ok"] and r["process_acc"] == 1.0 for r in rows)
    assert summary["end_state_acc"] == 1.0 and summary["process_acc"] == 1.0


def test_end_state_check_semantics():
    gt = [{"A": {"x": 1, "d": {"k": 1}}}]
    assert ab.end_state_ok([{"A": {"x": 1, "d": {"k": 1, "extra": 2}}}], gt)  # only the ground truth's keys
    assert not ab.end_state_ok([{"A": {"x": 2, "d": {"k": 1}}}], gt)
    assert not ab.end_state_ok([{"A": {"x": 1, "d": {"k": 2}}}], gt)
    assert not ab.end_state_ok([], gt)
    assert not ab.end_state_ok([{"B": {"x": 1, "d": {"k": 1}}}], gt)


def test_process_accuracy_as_acebench_defines_it():
    m = ["a(x=1)", "b(y='q')", "c()"]
    assert ab.process_accuracy(m, ["a(x=1)", "b(y='q')", "c()"], False) == 1.0
    assert ab.process_accuracy(m, ["a( x = 1 )", "zz()", "b(y=\"q\")"], False) == pytest.approx(0.667)
    assert ab.process_accuracy(m, ["b(y='q')", "c()"], False) == 0.0  # a missing milestone consumes the rest
    assert ab.process_accuracy(m, [], True) == 1.0  # right end state: full process credit
    assert ab.process_accuracy([m, ["b(y='q')", "c()"]], ["b(y='q')", "c()"], False) == 1.0  # best alternative


@dataclass
class Gen:
    text: str


def call(name, **args):
    return f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>'


class AgentBackend:
    """Logs in, then sends to ``receiver``, then answers in text."""

    def __init__(self, receiver):
        self.receiver = receiver

    def chat(self, conversations, *, tools=None, **kw):
        conv = conversations[0]
        assert tools and {t["function"]["name"] for t in tools[0]} == {"login", "send_message"}
        n_tool = sum(m["role"] == "tool" for m in conv)
        if n_tool == 0:
            return [Gen(call("login", user_id="U1"))]
        if n_tool == 1:
            return [Gen(call("send_message", receiver=self.receiver, text="hi"))]
        return [Gen("Sent.")]


class UserBackend:
    def __init__(self):
        self.turns = 0

    def chat(self, conversations, *, tools=None, **kw):
        self.turns += 1
        return [Gen("Please send 'hi' to Bob." if self.turns == 1 else "Thanks. finish conversation")]


def test_model_agent_multi_step_and_multi_turn(checkout):
    resolve = ab.checkout_resolver(checkout, trust_remote_code=True)
    entries = ab.load_acebench(checkout)
    user = UserBackend()
    rows, _ = ab.run_acebench(entries, resolve, backend=AgentBackend("Bob"), user_backend=user)
    assert [(r["category"], r["passed"], r["process_acc"]) for r in rows] == [
        ("agent_multi_turn", True, 1.0), ("agent_multi_step", True, 1.0)]
    assert user.turns == 2  # opening message, then the reply that finishes
    rows, summary = ab.run_acebench(entries[1:], resolve, backend=AgentBackend("Eve"))
    assert rows[0]["passed"] is False and rows[0]["process_acc"] == 0.5
    assert summary["end_state_acc"] == 0.0
