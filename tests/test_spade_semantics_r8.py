"""Issue 29: everything SPADE's loader runs runs here, with SPADE's semantics.

Sixteen programs written as SPADE's designer writes them (``tests/spade_format_r8/``), one
per point of the issue, are each loaded by SPADE's loader rules (``spade_loader_rules``),
accepted by the acceptance pipeline in the sandbox (verified when a reading of
``solution()`` replays a win, unverified otherwise: never rejected for it) and played to a
win on seeds 0-2. Negative cases show that garbage still loses and that what is still
refused says what and why.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from spade_loader_rules import spade_load

from spade_envs.contract import INFO_NOTE_KEY, check_step_result
from spade_envs.designer.acceptance import AcceptanceConfig, AcceptancePipeline
from spade_envs.designer.acceptance.leak import find_leak
from spade_envs.designer.regret import RegretEstimate
from spade_envs.plan_readers import (
    arrow_steps,
    comma_items,
    json_moves,
    json_plan,
    marked_answer,
    numbered_lines,
    structured_answer,
)
from spade_envs.registry.verification import is_verified
from spade_envs.runtime import InProcessRuntime
from spade_envs.solutions import solution_readings

PROGRAMS = Path(__file__).parent / "spade_format_r8"
SOURCES = {p.stem[len("game_"):]: p.read_text() for p in sorted(PROGRAMS.glob("game_*.py"))}

#: name -> (verified, stage, words its detail must contain)
EXPECT: dict[str, tuple[bool, str, str]] = {
    "prose_solution": (False, "solution_replay", "readers tried: bare answer as \\boxed{}"),
    "json_plan": (True, "solution_replay", "solution wins"),
    "json_object_plan": (True, "solution_replay", "solution wins"),
    "json_moves": (True, "solution_replay", "read as JSON move list"),
    "word_ladder": (True, "solution_replay", "read as arrow path, start omitted"),
    "comma_list": (True, "solution_replay", "read as comma list"),
    "time_shaped": (True, "solution_replay", "terminal rewards [0.64, 0.64, 0.64]"),
    "init_without_reset": (True, "solution_replay", "solution wins"),
    "two_env_classes": (True, "compile", "playing the first, DigitRootEnv"),
    "slots": (True, "solution_replay", "solution wins"),
    "inf_info": (True, "smoke", "non-finite float(s) replaced by None"),
    "required_true": (True, "tool_specs", "city: required=true lifted"),
    "import_sys": (True, "solution_replay", "solution wins"),
    "hint_level": (True, "interface", "hint() needs arguments or failed: treated as no hint"),
    "whodunit": (True, "no_leak", "absent from reset and garbage observations"),
    "tools_init_without_reset": (True, "solution_replay", "read as tool calls, then the boxed answer"),
}


def test_every_fixture_has_an_expectation():
    assert set(SOURCES) == set(EXPECT) and len(SOURCES) == 16


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_spade_loader_runs_it(name):
    """SPADE's rules load it (the test's reading of SPADE's loader): so must our runtime,
    through the product's own open and reset."""
    spade_load(SOURCES[name])
    session = InProcessRuntime().open(SOURCES[name], filename=f"game_{name}.py")
    try:
        obs, info = session.reset(0)
        assert isinstance(obs, str) and obs and isinstance(info, dict)
    finally:
        session.close()


@pytest.fixture(scope="module")
def sandboxed():
    pytest.importorskip("spade_envs.sandbox")
    return AcceptancePipeline()


def _sum_player(obs: str) -> list[str]:
    """The prose-solution game's task, solved from its observation."""
    listing = obs.split("deposits:", 1)[1].split(".", 1)[0]
    total = sum(int(n) for n in re.findall(r"\d+", listing))
    return [f"\\boxed{{{total}}}"]


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_accepted_and_played_to_a_win(sandboxed, name):
    verified, stage, words = EXPECT[name]
    report = sandboxed.run(SOURCES[name], f"game_{name}.py")
    assert report.accepted, report.summary()
    assert report.verified is verified and report.to_json()["verified"] is verified
    replay = next(s for s in report.to_json()["stages"] if s["name"] == "solution_replay")
    assert replay["verified"] is verified  # a flag, not a detail text to compare
    assert words in report.stage(stage).detail, report.stage(stage).detail
    session = sandboxed.runtime.open(SOURCES[name], filename=f"game_{name}.py")
    try:
        for seed in (0, 1, 2):
            obs, _ = session.reset(seed)
            if verified:
                readings = solution_readings(session.solution(), session.tools, obs)
                actions = readings[report.solution_form][1]
            else:
                actions = _sum_player(obs)
            for action in actions:
                _obs, reward, terminated, truncated, _info = session.step(action)
                if terminated or truncated:
                    break
            assert terminated and reward > 0, (name, seed, reward)
    finally:
        session.close()


def test_init_requiring_max_turns_is_built_as_spade_builds_it(sandboxed):
    source = _variant("hint_level", "def __init__(self, max_turns=10, **kwargs):", "def __init__(self, max_turns, **kwargs):")
    spade_load(source)
    for pipeline in (sandboxed, AcceptancePipeline(runtime=InProcessRuntime())):
        report = pipeline.run(source, "required_max_turns.py")
        assert report.accepted and report.verified, report.summary()


def test_whodunit_accepted_on_seeds_0_to_30():
    config = AcceptanceConfig(seeds=tuple(range(31)))
    report = AcceptancePipeline(config, runtime=InProcessRuntime()).run(SOURCES["whodunit"], "whodunit.py")
    assert report.accepted and report.verified, report.summary()


# -- still refused, and saying why --------------------------------------------------------
def _variant(name: str, old: str, new: str) -> str:
    assert old in SOURCES[name], old
    return SOURCES[name].replace(old, new, 1)


REFUSED: dict[str, tuple[str, str, str]] = {
    # garbage still loses: a checker that takes any boxed text
    "any_boxed_wins": (_variant("word_ladder", 'm = re.search(r"\\\\boxed\\{([A-Za-z]+)\\}", action)',
                                'm = re.search(r"\\\\boxed\\{([A-Za-z]+)\\}", action)\n'
                                '        if m:\n            return "Solved!", 1.0, True, False, {}'),
                       "garbage", "garbage wins"),
    # a time-shaped game where junk ends the episode with the solution's own 0.64
    "junk_ends_at_0_64": (_variant("time_shaped", "        a, b = self._pairs[self._stage]\n        if not m",
                                   "        if not m:\n            return 'Bye.', 0.64, True, False, {}\n"
                                   "        a, b = self._pairs[self._stage]\n        if not m"),
                          "garbage", "garbage wins"),
    # prose is never the task: the tasks themselves must differ
    "prose_constant_task": (_variant("prose_solution", "rng = random.Random(seed)", "rng = random.Random(7)"),
                            "seed_variety", "solution() does not replay: not compared"),
    # the options exception covers an observation that lists the suspects, not a bare reveal
    "culprit_named": (_variant("whodunit", '"That suspect has an alibi. Check the witness statements."',
                               'f"Wrong: {self._culprit} did it."'), "no_leak", "leaks the answer"),
    "json_plan_answer_shown": (_variant("json_plan", 'are in stock? Use the tools', 'are in stock ({self._expected_answer})? Use the tools'),
                               "no_leak", "leaks the answer"),
    "inf_reward": (_variant("time_shaped", 'return "Not quite. " + self._obs(), 0.0,',
                            'return "Not quite. " + self._obs(), float("inf"),'), "interface", "non-finite reward"),
    "dunder_slot": (_variant("slots", '__slots__ = ("x", "y")', '__slots__ = ("x", "y", "__dict__")'),
                    "compile", "__slots__ must be a literal tuple of plain attribute names"),
    "computed_slots": (_variant("slots", '__slots__ = ("x", "y")', '__slots__ = tuple("xy")'),
                       "compile", "__slots__ must be a literal tuple of plain attribute names"),
    "sys_beyond_constants": (_variant("import_sys", "best = sys.maxsize", "best = len(sys.modules)"),
                             "interface", "modules"),
}


#: refusals of the static layer (SPADE_SANDBOX_STATIC=0 turns it off to test the jail alone)
STATIC_ONLY = {"dunder_slot", "computed_slots", "sys_beyond_constants"}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_still_refused_with_the_reason(sandboxed, case):
    from spade_envs.sandbox.restricted import static_layer_enabled

    if case in STATIC_ONLY and not static_layer_enabled():
        pytest.skip("a refusal of the static layer, which SPADE_SANDBOX_STATIC=0 turns off")
    source, stage, words = REFUSED[case]
    report = sandboxed.run(source, f"{case}.py")
    assert not report.accepted and report.rejected_at == stage, report.summary()
    assert words in report.failure.detail, report.failure.detail


def test_a_json_plan_that_loses_is_unverified_and_names_its_readers():
    source = _variant("json_plan", '{"answer": self._expected_answer}', '{"answer": "0"}')
    report = AcceptancePipeline(runtime=InProcessRuntime()).run(source, "plan.py")
    assert report.accepted and report.verified is False, report.summary()
    detail = report.stage("solution_replay").detail
    assert "JSON tool plan (seed 0: reward 0" in detail and "bare answer as <answer>" in detail


# -- readers ----------------------------------------------------------------------------------
def test_plan_readers():
    assert arrow_steps("Path: RAIL -> HAIL -> HALL") == ["RAIL", "HAIL", "HALL"]
    assert arrow_steps("(0,0) → (0,1) ⇒ (1,1).") == ["(0,0)", "(0,1)", "(1,1)"]
    assert arrow_steps("no path here") is None and arrow_steps("A ->") is None
    assert comma_items("up, up, left") == ["up", "up", "left"]
    assert comma_items("First we look around the whole room carefully, then decide") is None
    assert json_moves("[2, 1, 0]") == ["2", "1", "0"] and json_moves('["up"]') is None
    plan = '[{"tool": "a", "args": {"x": 1}}, {"tool": "b", "arguments": "{\\"y\\": 2}"}, "done"]'
    assert json_plan(plan) == ([("a", {"x": 1}), ("b", {"y": 2})], "done")
    assert json_plan('```json\n{"steps": [{"name": "a"}], "final_answer": 7}\n```') == ([("a", {})], "7")
    assert json_plan('[{"tool": "a"}, "x", {"tool": "b"}]') is None  # an answer must come last
    assert json_plan('[{"answer": 3}]') is None  # no tool step: not a plan
    # str() of Python structures (SPADE str()s what solution() returns)
    assert json_moves(str(["up", "left"])) == ["up", "left"]
    assert json_plan(str([{"tool": "a", "args": {"x": True}}, 7])) == ([("a", {"x": True})], "7")
    assert structured_answer(str({"answer": "Mrs. Plum"})) == "Mrs. Plum"
    assert marked_answer("Add them.\nFinal answer: 417.") == "417" and marked_answer("answers vary") is None
    assert numbered_lines("1. up\n2) left\n- right") == ["up", "left", "right"]
    assert numbered_lines("1. up\nleft") is None


def test_readers_stay_linear():
    for text in ("-" * 200_000, "->" * 50_000, ", " * 100_000, "[" * 100_000, " " * 200_000 + "->",
                 "answer " * 20_000, "1. x\n" * 20_000, "{" * 50_000 + "}" * 50_000):
        t0 = time.perf_counter()
        solution_readings(text)
        solution_readings(text, [{"type": "function", "function": {"name": "a", "parameters": {}}}])
        assert time.perf_counter() - t0 < 1.0


def test_options_exception_of_the_leak_rule():
    listed = "Suspects: Colonel Mustard, Mrs. Plum, Dr. Green, Miss Scarlet, Mr. Peacock. Mrs. Plum was in the hall."
    assert find_leak("Mrs. Plum", [listed]) is None
    assert find_leak("Mrs. Plum", ["Suspects:\n- Dr. Green (cook)\n- Mrs. Plum (gardener)\n- Mr. Peacock\nWho?"]) is None
    assert find_leak("417", ["Choose: A) 512 B) 417 C) 333"]) is None
    assert find_leak("Mrs. Plum", ["The culprit is Mrs. Plum. Who?"]) is not None
    assert find_leak("417", ["The code 417 opens it."]) is not None
    assert find_leak("Plum", ["Plum or Green"]) is not None  # two are not several


# -- terminal reward, info, registry flag ------------------------------------------------------
class _Ep:
    def __init__(self, rewards, terminated):
        self.rewards, self.terminated = rewards, terminated
        self.episode_return = rewards[-1] if rewards else 0.0


def test_regret_on_terminal_rewards_with_time_shaped_wins():
    est = RegretEstimate.from_episodes([_Ep([0.0, 0.64], True), _Ep([0.0, 0.76], True)],
                                       [_Ep([0.0, 0.0], False), _Ep([0.64], True)])
    assert est.win_rate_hint == 1.0 and est.win_rate_plain == 0.5
    assert est.regret == pytest.approx((0.64 + 0.76) / 2 - 0.64 / 2)


def test_evals_report_mean_terminal_reward_beside_success():
    from spade_envs.evals.registry_suite import summarize

    rows = [{"passed": p, "return": r, "state_ok": None, "response_ok": None, "end_state_ok": None,
             "process_acc": 1.0, "skill": "s", "generation": 1, "id": "spade/X-00001-v1"}
            for p, r in ((True, 1.0), (False, 0.64), (False, 0.0))]
    summary = summarize(rows)
    assert summary["mean_terminal_reward"] == pytest.approx(1.64 / 3)
    assert summary["success"]["rate"] == pytest.approx(1 / 3)


def test_non_finite_info_is_replaced_not_refused():
    obs, reward, term, trunc, info = check_step_result(("o", 1.0, True, False, {"d": float("inf"), "ok": 2.5}))
    assert info["d"] is None and info["ok"] == 2.5 and "info['d']" in info[INFO_NOTE_KEY]
    with pytest.raises(Exception, match="non-finite reward"):
        check_step_result(("o", float("nan"), True, False, {}))


def test_registry_reads_the_verified_flag():
    stage = {"name": "solution_replay", "ok": True, "detail": "unverified: readers tried ...", "verified": False}
    assert is_verified({"acceptance": [stage]}) is False
    assert is_verified({"acceptance": [{**stage, "verified": True}]}) is True
    assert json.loads(json.dumps(stage))["verified"] is False


def test_a_move_sequence_leaks_whatever_marks_join_a_moves_parts():
    """Grid moves written ``\\boxed{row,col}``: the reference shown in an observation is a
    leak (the comma inside a move is not a gap between moves); the grid's own row and
    column numbers are not."""
    solution = "\\boxed{1,2}\n\\boxed{2,4}\n\\boxed{3,3}\n\\boxed{3,4}\n\\boxed{4,1}"
    grid = "    1 2 3 4 5\n1 | # # # # .\n2 | . # . . #\n3 | # . . # #\nPress one cell per turn with \\boxed{row,col}."
    assert find_leak(solution, [grid]) is None
    assert find_leak(solution, [grid + "\n(reference: \\boxed{1,2} \\boxed{2,4} \\boxed{3,3} \\boxed{3,4})"])
    assert find_leak(solution, ["Presses so far: 1-2, 2-4, 3-3, 3-4."])
