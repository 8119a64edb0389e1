"""SPADE fidelity: solution replay forms, ToolUseBaseEnv behaviour as SPADE's, linear-time
parsers (issues 13 and 14). The SPADE-format programs are in tests/spade_programs/."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spade_envs.actions import ToolCall, extract_all_boxed, extract_answer, extract_boxed, parse_tool_calls
from spade_envs.gym_env import SpadeEnv
from spade_envs.runtime import InProcessRuntime
from spade_envs.solutions import needs_final_answer, solution_plans, solution_to_actions
from spade_envs.toolbase import ToolUseBaseEnv

PROGRAMS = Path(__file__).parent / "spade_programs"


def spec(tool, **props):
    return {"type": "function", "function": {"name": tool, "parameters": {"type": "object", "properties": props}}}


FS_TOOLS = [spec("cd", path={"type": "string"}), spec("mkdir", name={"type": "string"}),
            spec("mv", src={"type": "string"}, dst={"type": "string"}), spec("ls"),
            spec("deposit", account={"type": "string"}, amount={"type": "integer"})]


def calls(actions):
    return [json.loads(a[len("<tool_call>"): -len("</tool_call>")]) for a in actions if a.startswith("<tool_call>")]


# -- replay forms -----------------------------------------------------------------------
def test_spade_single_task_walkthrough_on_one_line():
    text = ('1. cd(path="docs") -> Changed to /home/docs 2. mkdir(name="archive") -> Created '
            '/home/docs/archive 3. mv(src="report.txt", dst="archive") -> Moved ANSWER: archive/report.txt')
    actions = solution_to_actions(text, FS_TOOLS)
    assert calls(actions) == [{"name": "cd", "arguments": {"path": "docs"}},
                              {"name": "mkdir", "arguments": {"name": "archive"}},
                              {"name": "mv", "arguments": {"src": "report.txt", "dst": "archive"}}]
    assert actions[-1] == "<answer>archive/report.txt</answer>"


def test_spade_multi_turn_walkthrough_with_answer_block():
    text = ("1. cd(path='/home/document') 2. mkdir(name='temp') 3. mv(src='report.txt', dst='temp') "
            "4. ls() 5. <answer>done</answer>")
    actions = solution_to_actions(text, FS_TOOLS)
    assert [c["name"] for c in calls(actions)] == ["cd", "mkdir", "mv", "ls"]
    assert actions[-1] == "<answer>done</answer>" and len(actions) == 5


@pytest.mark.parametrize("text, arguments", [
    ('deposit(account="A1", amount=50)', {"account": "A1", "amount": 50}),
    ('deposit({"account": "A1", "amount": 50})', {"account": "A1", "amount": 50}),
    ('deposit("A1", 50)', {"account": "A1", "amount": 50}),                 # positional, schema order
    ('deposit(account=A1, amount="50")', {"account": "A1", "amount": 50}),  # bare word; coerced to integer
    ('tool_deposit(account="A1", amount=50)', {"account": "A1", "amount": 50}),
    ("Step 1: call deposit(account='x (y)', amount=3)", {"account": "x (y)", "amount": 3}),
])
def test_walkthrough_argument_styles(text, arguments):
    assert calls(solution_to_actions(text + "\nANSWER: 7", FS_TOOLS)) == [{"name": "deposit", "arguments": arguments}]


def test_walkthrough_ignores_undeclared_names_and_code():
    text = "first print(x) then os.remove('a') then deposit(account='a', amount=1) then ANSWER: ok"
    actions = solution_to_actions(text, FS_TOOLS)
    assert [c["name"] for c in calls(actions)] == ["deposit"] and actions[-1] == "<answer>ok</answer>"


def test_first_answer_ends_the_replay_and_blocks_keep_their_order():
    text = ('<tool_call>{"name": "ls", "arguments": {}}</tool_call> <answer>a</answer> '
            '<tool_call>{"name": "ls", "arguments": {}}</tool_call> <answer>b</answer>')
    assert solution_to_actions(text, FS_TOOLS) == ['<tool_call>{"name": "ls", "arguments": {}}</tool_call>',
                                                   "<answer>a</answer>"]


def test_text_game_forms():
    assert solution_to_actions("move north\nmove east") == ["move north", "move east"]
    assert solution_plans("move north\nmove east")[1] == ["\\boxed{move north}", "\\boxed{move east}"]
    assert solution_to_actions("417") == ["\\boxed{417}"]
    assert solution_to_actions(417) == ["\\boxed{417}"]          # SPADE str()s solution()
    assert solution_to_actions("\\boxed{3} \\boxed{4}\n\\boxed{5}") == ["\\boxed{3}", "\\boxed{4}", "\\boxed{5}"]
    assert solution_to_actions("Move: \\boxed{up}") == ["Move: \\boxed{up}"]
    assert solution_to_actions("\\boxed{\\frac{1}{2}}") == ["\\boxed{\\frac{1}{2}}"]


def test_bare_lines_are_boxed_when_the_observation_asks_for_boxes():
    assert solution_to_actions("go north\ngo east", observation="Actions: \\boxed{go north}") == \
        ["\\boxed{go north}", "\\boxed{go east}"]
    assert solution_to_actions("go north\ngo east", observation="Type a direction.") == ["go north", "go east"]


WHOLE = """
import random
class TwoWordsEnv:
    def __init__(self, **kw):
        self.reset()
    def reset(self, seed=None):
        rng = random.Random(seed)
        self._w = [rng.choice(["amber", "birch", "cedar", "delta", "ember"]) + str(rng.randint(10, 99)) for _ in range(2)]
        return "Send both words of the pair, on two lines, in a single box.", {}
    def step(self, action):
        won = action.strip() == "\\\\boxed{" + "\\n".join(self._w) + "}"
        return ("yes" if won else "no"), float(won), won, False, {}
    def solution(self):
        return "\\n".join(self._w)
"""


def test_alternate_reading_is_recorded_and_used_by_gym():
    from spade_envs.designer.acceptance import AcceptancePipeline

    report = AcceptancePipeline(runtime=InProcessRuntime()).run(WHOLE, "two.py")
    assert report.accepted and report.solution_form == 2, report.summary()
    env = SpadeEnv(source=WHOLE, trust_remote_code=True)
    env.reset(seed=4)
    assert env.step(env.solution_actions()[0])[1] == 0.0  # the primary reading does not win
    env.spade_metadata["solution_form"] = 2  # what the registry stores from the report
    env.reset(seed=4)
    assert [env.step(a)[1] for a in env.solution_actions()] == [1.0]


def test_tool_use_bare_answer_and_fallback_need():
    assert solution_plans("42", FS_TOOLS) == [["<answer>42</answer>"], ["\\boxed{42}"]]
    assert needs_final_answer("1. ls() -> []", FS_TOOLS)
    assert not needs_final_answer("1. ls() -> [] ANSWER: 3", FS_TOOLS)
    assert not needs_final_answer("None", FS_TOOLS)  # no call: the expected answer is not handed out


def test_qwen35_xml_tool_calls():
    text = ("<tool_call>\n<function=deposit>\n<parameter=account>\nA&amp;B\n</parameter>\n"
            "<parameter=amount>\n50\n</parameter>\n</function>\n</tool_call>")
    assert parse_tool_calls(text) == [ToolCall(name="deposit", arguments={"account": "A&B", "amount": 50},
                                               raw=text[len("<tool_call>"):-len("</tool_call>")].strip())]
    bad = parse_tool_calls("<tool_call><function=x><parameter=a>1</function></tool_call>")
    assert bad[0].error


# -- ToolUseBaseEnv as SPADE's --------------------------------------------------------
class PendingEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        self._tools = {"tick": {"description": "advance", "parameters": {"type": "object", "properties": {}}}}
        self._user_messages = ["Tick once.", "Tick again."]
        self._current_msg = 0
        self._expected_answer = "done"
        return self._user_messages[0], {}

    def tool_tick(self):
        self._current_msg += 1
        return "ticked"

    def _check_answer(self, answer):
        return answer == "done" and self._current_msg >= len(self._user_messages)


def test_wrong_answer_names_the_pending_step():
    env = PendingEnv()
    obs, reward, *_ = env.step("<answer>done</answer>")
    assert reward == 0.0 and "Step 1 of 2" in obs and "Tick once." in obs
    env.step('<tool_call>{"name": "tick", "arguments": {}}</tool_call>')
    assert "Tick again." in env.step("<answer>done</answer>")[0]
    env.step("<tool_call><function=tick></function></tool_call>")  # Qwen3.5 XML
    assert env.step("<answer>done</answer>")[1:3] == (1.0, True)


def test_answer_wins_over_tool_calls_in_one_message():
    env = PendingEnv()
    env.step('<tool_call>{"name": "tick", "arguments": {}}</tool_call>' * 2)
    obs, reward, terminated, *_ = env.step('<tool_call>{"name": "tick", "arguments": {}}</tool_call> <answer>done</answer>')
    assert (reward, terminated) == (1.0, True) and env._current_msg == 2  # the call was not run


def test_step_crash_in_play_is_minus_one_terminated():
    src = ("class CrashEnv:\n    def __init__(self, **kw):\n        self.reset()\n"
           "    def reset(self, seed=None):\n        return 'go', {}\n"
           "    def step(self, action):\n        raise KeyError('boom')\n")
    env = SpadeEnv(source=src, trust_remote_code=True)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("x")
    assert (reward, terminated, truncated) == (-1.0, True, False) and "boom" in info["error"]


# -- SPADE-format programs replay to a win through the Gymnasium wrapper ----------------
@pytest.mark.parametrize("name, form", [
    ("game_00001_000_mathematical_reasoning.py", 0),
    ("game_00001_001_spatial_reasoning.py", 0),  # bare moves, boxed since the observation asks for \boxed{}
    ("game_00001_003_api_orchestration.py", 0),
    ("game_00001_004_multi-step_workflows.py", 0),
])
def test_spade_programs_replay_to_a_win_sandboxed(name, form):
    pytest.importorskip("spade_envs.sandbox")
    env = SpadeEnv(source=(PROGRAMS / name).read_text())
    env.spade_metadata["solution_form"] = form  # what acceptance records in the registry
    for seed in (0, 1):
        env.reset(seed=seed)
        reward = 0.0
        for action in env.solution().splitlines():
            _obs, reward, terminated, truncated, _info = env.step(action)
            if terminated or truncated:
                break
        assert reward == 1.0, (name, seed)
    env.close()


def test_program_without_solution_plays():
    env = SpadeEnv(source=(PROGRAMS / "game_00001_002_logical_deduction.py").read_text(), trust_remote_code=True)
    obs, _ = env.reset(seed=3)
    assert "dials" in obs.lower()
    assert env.step("\\boxed{try}")[1] == 0.0
    env.close()


# -- linear time ----------------------------------------------------------------------
def _seconds(fn, text) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("label, fn, unit", [
    ("unclosed boxed", extract_boxed, "\\boxed{"),
    ("unclosed boxed, all", extract_all_boxed, "\\boxed{"),
    ("unclosed tool calls", parse_tool_calls, "<tool_call>"),
    ("unclosed answers", extract_answer, "<answer>"),
    ("boxed solution", solution_plans, "\\boxed{"),
    ("walkthrough calls", lambda t: solution_plans(t, FS_TOOLS), "cd("),
    ("walkthrough answers", lambda t: solution_plans(t, FS_TOOLS), "ANSWER:"),
    ("quotes", lambda t: solution_plans(t, FS_TOOLS), "ls('"),
])
def test_parsers_are_linear(label, fn, unit):
    small, big = unit * 5000, unit * 100000
    t_big = _seconds(fn, big)
    ratio = t_big / max(_seconds(fn, small), 1e-6)
    # linear: ~20x (up to ~120x seen with cache effects on a busy machine); quadratic: ~400x
    assert ratio < 200 and t_big < 3.0, f"{label}: 20x input took {ratio:.0f}x the time ({t_big:.2f} s)"


def test_leak_sequence_check_is_linear_on_dashes():
    from spade_envs.designer.acceptance.leak import find_leak

    solution = "\n".join(f"\\boxed{{{m}}}" for m in ("up", "up", "left", "down", "right"))
    small, big = "-" * 20000 + "up", "-" * 200000 + "up"
    t_small = _seconds(lambda o: find_leak(solution, [o]), small)
    t_big = _seconds(lambda o: find_leak(solution, [o]), big)
    assert t_big < 1.0 and t_big / max(t_small, 1e-6) < 60
    assert find_leak(solution, ["route: up - up, left; down!"]) is not None
    assert find_leak(solution, ["up up leftdown"]) is None


def test_inprocess_and_gym_agree_on_walkthrough_replay():
    session = InProcessRuntime().open((PROGRAMS / "game_00001_003_api_orchestration.py").read_text())
    session.reset(5)
    actions = solution_to_actions(session.solution(), session.tools)
    assert len(actions) == 4 and actions[-1].startswith("<answer>")
    results = [session.step(a) for a in actions]
    assert results[-1][1] == 1.0 and all(r[1] == 0.0 for r in results[:-1])
