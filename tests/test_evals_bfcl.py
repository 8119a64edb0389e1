"""BFCL-v4 multi-turn: data, tools, safe execution, our scorer, and THE AGREEMENT TEST
with BFCL's own multi_turn_checker on all 800 entries (ground truth and perturbations)."""

import json
from collections import Counter
from dataclasses import dataclass

import pytest

pytest.importorskip("bfcl_eval")

from spade_envs.evals import bfcl  # noqa: E402
from spade_envs.evals.bfcl_agents import BackendAgent, FileReplayAgent, ReferenceAgent, text_to_calls  # noqa: E402
from spade_envs.evals.bfcl_exec import BFCLWorld, CallParseError, parse_call, score_entry  # noqa: E402
from spade_envs.evals.bfcl_perturb import KINDS, perturb, reference_turns  # noqa: E402
from spade_envs.tools import validate_tool_specs  # noqa: E402


@pytest.fixture(scope="module")
def entries():
    return bfcl.load_entries()


def _entry(entries, eid):
    return next(e for e in entries if e.id == eid)


def test_loads_four_categories(entries):
    assert Counter(e.category for e in entries) == {c: 200 for c in bfcl.CATEGORIES}
    assert all(len(e.questions) == len(e.ground_truth) for e in entries)
    assert [e.category for e in bfcl.load_entries(limit=5)] == ["base", "miss_func", "miss_param", "long_context", "base"]


def test_function_docs_become_valid_json_schema_tools(entries):
    for e in entries[:50]:
        tools = bfcl.tools_for_turn(e, 0)
        assert validate_tool_specs(tools)  # jsonschema meta-schema check
    tool = bfcl.doc_to_tool({"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {
        "x": {"type": "float"}, "t": {"type": "tuple", "items": {"type": "integer"}}, "a": {"type": "any"}}}})
    props = tool["function"]["parameters"]["properties"]
    assert tool["function"]["parameters"]["type"] == "object"
    assert props["x"]["type"] == "number" and props["t"]["type"] == "array" and "type" not in props["a"]


def test_miss_func_withholds_function_until_its_turn(entries):
    e = _entry(entries, "multi_turn_miss_func_0")
    (turn, names), = e.missed_function.items()
    names_at = lambda t: {tool["function"]["name"] for tool in bfcl.tools_for_turn(e, t)}  # noqa: E731
    assert not set(names) & names_at(turn - 1)
    assert set(names) <= names_at(turn)
    assert bfcl.user_messages(e, turn) == [{"role": "user", "content": bfcl.REVEAL_PROMPT}]


@pytest.mark.parametrize("bad", ["__import__('os').system('x')", "os.system('ls')", "ls(a=open('f'))",
                                 "ls(**{'a': 1})", "[ls()]", "ls(", "lambda: 1"])
def test_parse_call_rejects_non_literal_code(bad):
    with pytest.raises(CallParseError):
        parse_call(bad)


def test_executor_dispatches_only_known_methods(entries):
    world = BFCLWorld(_entry(entries, "multi_turn_base_0").raw)
    assert world.execute_one("open(file='x')").startswith("Error during execution: name 'open'")
    assert world.execute_one("exit()") == "Error during execution: Function call exit is not allowed."
    assert world.execute_one("pwd()").startswith('{"current_working_directory"')


def test_scorer_known_answers_on_hand_made_trajectories(entries):
    e = _entry(entries, "multi_turn_base_0")
    gt = e.ground_truth
    assert score_entry(e.raw, gt, reference_turns(e))["passed"]
    # no call in a turn with ground truth
    empty = reference_turns(e)
    empty[0] = []
    v = score_entry(e.raw, gt, empty)
    assert not v["passed"] and v["error_type"] == "multi_turn:empty_turn_model_response" and v["failed_turn"] == 0
    # an extra directory: state mismatch
    extra = reference_turns(e)
    extra[0] = [gt[0] + ["mkdir(dir_name='zz_extra')"]]
    assert score_entry(e.raw, gt, extra)["error_type"] == "multi_turn:instance_state_mismatch"
    # fewer turns than the ground truth: force terminated
    assert score_entry(e.raw, gt, reference_turns(e)[:-1])["error_type"] == "multi_turn:force_terminated"
    # the same calls split over several steps still pass; empty steps are ignored
    split = [[[c] for c in t] + [[]] if t else [] for t in gt]
    assert score_entry(e.raw, gt, split)["passed"]


def test_response_check_needs_ground_truth_results(entries):
    # find an entry where a read-only call was dropped: state equal, response missing
    hits = 0
    for e in entries[:200]:
        for t, calls in enumerate(e.ground_truth):
            for i, c in enumerate(calls):
                if parse_call(c).name in ("ls", "cat", "pwd", "get_stock_info", "display_log"):
                    turns = reference_turns(e)
                    turns[t] = [[x for j, x in enumerate(calls) if j != i]] if len(calls) > 1 else []
                    v = score_entry(e.raw, e.ground_truth, turns)
                    if v["error_type"] == "multi_turn:execution_response_mismatch":
                        assert v["state_ok"] and not v["response_ok"]
                        hits += 1
    assert hits >= 10


def test_irrelevance_rule(entries):
    e = next(x for x in entries if x.category == "miss_param" and any(not t for t in x.ground_truth))
    t = next(i for i, calls in enumerate(e.ground_truth) if not calls)
    turns = reference_turns(e)
    turns[t] = [["ls()"]] if "GorillaFileSystem" in e.involved_classes else [["mean(numbers=[1.0])"]]
    v = score_entry(e.raw, e.ground_truth, turns)
    assert v["irrelevance_ok"] is False
    assert score_entry(e.raw, e.ground_truth, reference_turns(e))["irrelevance_ok"] is True
    strict = score_entry(e.raw, e.ground_truth, turns, strict_irrelevance=True)
    assert not strict["passed"]


def test_agreement_with_bfcl_checker_on_all_ground_truth(entries):
    """Our verdict for replay:reference equals BFCL's on all 800 entries; every ground
    truth passes BFCL's own checker (no entry of bfcl-eval 2026.3.23 fails it)."""
    rows, summary = bfcl.run_suite(ReferenceAgent(), entries, agreement=True)
    assert summary["agreement"]["n"] == 800
    assert summary["agreement"]["disagree_ids"] == []
    assert summary["agreement"]["irrelevance_agree"] == 800
    assert summary["agreement"]["bfcl_failed_ids"] == []
    assert summary["overall"]["k"] == 800


def test_agreement_on_perturbed_trajectories(entries):
    """A dropped call, a changed argument, an extra state-changing call: for every entry,
    our verdict equals BFCL's (and most perturbations do fail, so both paths are used)."""
    counts, failed, disagree = Counter(), Counter(), []
    for e in entries:
        for kind in KINDS:
            turns = perturb(e, kind, seed=0)
            if turns is None:
                continue
            row = bfcl.score_trajectory(e, turns, agreement=True)
            counts[kind] += 1
            failed[kind] += not row["passed"]
            if not row["agree"] or not row["irrelevance_agree"]:
                disagree.append((e.id, kind))
    assert disagree == []
    assert counts["drop"] == 800 and counts["change_arg"] >= 780 and counts["extra"] >= 700
    assert failed["drop"] >= 780 and failed["change_arg"] >= 600 and failed["extra"] >= 400


def test_text_to_calls():
    text = ('ok <tool_call>{"name": "cd", "arguments": {"folder": "doc"}}</tool_call>'
            '<tool_call>{"name": "mean", "arguments": {"numbers": [1, 2.5]}}</tool_call><tool_call>oops</tool_call>')
    assert text_to_calls(text) == ["cd(folder='doc')", "mean(numbers=[1, 2.5])"]
    assert text_to_calls("no calls here") == []


@dataclass
class Gen:
    text: str


class ScriptedBackend:
    """Answers each step with the entry's ground-truth calls for the current turn, then
    with plain text (ends the turn). Records the tools it was offered."""

    name = "fake"

    def __init__(self, entries, loop_forever=False):
        self.by_first = {json.dumps(e.questions[0]): e for e in entries}
        self.loop_forever = loop_forever
        self.tools_seen = {}

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None):
        out = []
        for conv, tl in zip(conversations, tools):
            first_user = next(i for i, m in enumerate(conv) if m["role"] == "user")
            entry = self.by_first[json.dumps([conv[first_user]])]
            turn = sum(1 for m in conv if m["role"] == "user") - 1
            self.tools_seen.setdefault(entry.id, {})[turn] = {t["function"]["name"] for t in tl}
            if self.loop_forever:
                out.append(Gen('<tool_call>{"name": "pwd", "arguments": {}}</tool_call>'))
            elif conv[-1]["role"] == "user" and entry.ground_truth[turn]:
                calls = [bfcl_call_json(c) for c in entry.ground_truth[turn]]
                out.append(Gen("".join(f"<tool_call>{c}</tool_call>" for c in calls)))
            else:
                out.append(Gen("Done."))
        return out


def bfcl_call_json(call):
    p = parse_call(call)
    assert not p.args or p.name in ("mean", "sort", "sum_values", "max_value", "min_value", "standard_deviation",
                                    "cat", "ls", "cd", "tail", "wc", "touch", "mkdir", "rm", "rmdir", "pwd", "du",
                                    "logarithm", "square_root", "absolute_value", "round_number")
    return json.dumps({"name": p.name, "arguments": p.kwargs})


def test_backend_agent_plays_under_bfcl_rules(entries):
    simple = [e for e in entries if not any(parse_call(c).args for t in e.ground_truth for c in t)
              and all(len(q) == 1 for q in e.questions if q)]
    base = [e for e in simple if e.category == "base"][:3]
    firsts = {json.dumps(e.questions[0]) for e in base}  # the fake backend tells entries apart by it
    picked = base + [e for e in simple if e.category == "miss_func" and json.dumps(e.questions[0]) not in firsts][:3]
    backend = ScriptedBackend(picked)
    rows, summary = bfcl.run_suite(BackendAgent(backend, batch_size=4), picked, agreement=True)
    assert all(r["passed"] and r["agree"] for r in rows), rows
    mf = next(e for e in picked if e.missed_function)
    (turn, names), = mf.missed_function.items()
    assert not set(names) & backend.tools_seen[mf.id][turn - 1]
    assert set(names) <= backend.tools_seen[mf.id][turn]


def test_backend_agent_force_stops_after_20_steps(entries):
    e = entries[0]
    traj = BackendAgent(ScriptedBackend([e], loop_forever=True)).run([e])[0]
    assert traj.force_terminated and len(traj.turns) == 1 and len(traj.turns[0]) == 21
    assert not bfcl.score_trajectory(e, traj.turns)["passed"]


def test_file_replay_agent(tmp_path, entries):
    e1, e2 = entries[0], entries[1]
    path = tmp_path / "traj.jsonl"
    path.write_text(json.dumps({"id": e1.id, "turns": e1.ground_truth}) + "\n"
                    + json.dumps({"id": e2.id, "turns": [[] for _ in e2.ground_truth]}) + "\n")
    rows, summary = bfcl.run_suite(FileReplayAgent(path), [e1, e2], agreement=True)
    assert [r["passed"] for r in rows] == [True, False]
    assert all(r["agree"] for r in rows)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    from spade_envs.errors import SpadeError

    with pytest.raises(SpadeError, match="bad.jsonl:1"):
        FileReplayAgent(bad)


class _Tok:
    chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"  # renders no tools


class TextOnlyBackend:
    """A backend whose chat template ignores ``tools=``: specs must be in the prompt."""

    name = "text-only"
    tokenizer = _Tok()

    def __init__(self):
        self.seen = []

    def chat(self, conversations, *, tools=None, **kw):
        self.seen.extend(conversations)
        return [Gen("nothing to call") for _ in conversations]


def test_tools_go_into_the_prompt_when_the_template_cannot_render_them(entries):
    e = next(x for x in entries if x.missed_function)
    (turn, names), = e.missed_function.items()
    backend = TextOnlyBackend()
    traj = BackendAgent(backend).run([e])[0]
    system = traj.messages[0]["content"]
    assert '"name": "cd"' in system or '"name": "' in system
    assert not any(f'"name": "{n}"' in system for n in names)
    reveal = [m for m in traj.messages if m["role"] == "user" and bfcl.REVEAL_PROMPT in m["content"]]
    assert len(reveal) == 1 and all(f'"name": "{n}"' in reveal[0]["content"] for n in names)
    assert traj.turns == [[] for _ in e.ground_truth]
