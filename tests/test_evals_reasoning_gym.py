"""The reasoning-gym suite: SPADE's hard split as data, scoring by score_answer, the harness.

The data file was transcribed from SPADE's sources (``spare/core/eval/rg_a3_hard.py``,
``eval_offline/configs/_games_gem.yaml``, ``spare/core/eval/gem_tasks.py``); the literal
values checked here were read off those files independently of the transcription.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("reasoning_gym")

from spade_envs.evals import reasoning_gym as suite  # noqa: E402
from spade_envs.evals import reasoning_gym_tasks as rgt  # noqa: E402
from spade_envs.errors import SpadeError  # noqa: E402


def test_hard_split_matches_spade() -> None:
    tasks = rgt.hard_split()
    names = [t.name for t in tasks]
    assert len(names) == 100 and len(set(names)) == 100
    counts = {c: sum(t.category == c for t in tasks) for c in ("math", "algorithmic", "cognition", "logic")}
    assert counts == {"math": 31, "algorithmic": 36, "cognition": 24, "logic": 9}  # the YAML's section headers
    assert names[0] == "complex_arithmetic" and names[-1] == "zebra_puzzles"  # first and last rg:<task>-hard
    by = {t.name: t for t in tasks}
    # literal values of SPADE's A3_HARD_CONFIGS
    assert by["ab"].config == {"length": 25}
    assert by["acre"].config == {} and by["gsm_symbolic"].config == {} and by["list_functions"].config == {}
    assert by["bitwise_arithmetic"].config == {"difficulty": 5}
    assert by["graph_color"].config == {"max_num_vertices": 20, "min_num_vertices": 10, "num_colors": 4}
    assert by["rubiks_cube"].config == {"cube_size": 5, "max_scramble_steps": 50, "min_scramble_steps": 25}
    assert by["intermediate_integration"].config == {"problem_type_weights": [0, 0, 0, 1, 0, 0, 0, 0]}
    assert by["syllogism"].config == {"allow_all": True, "allow_no": True, "allow_some": False,
                                      "allow_some_not": False}
    assert by["calendar_arithmetic"].config["tasks"][-1] == "count_business_days"
    assert by["zebra_puzzles"].config == {"num_characteristics": 5, "num_people": 5}
    # categories (RG_GOLDEN_GOOSE)
    assert (by["quantum_lock"].category, by["codeio"].category, by["tsumego"].category,
            by["self_reference"].category) == ("math", "algorithmic", "cognition", "logic")
    d = rgt.split_data()["defaults"]
    assert (d["episodes"], d["max_turns"], d["temperature"], d["dataset_seed"], d["dataset_size"]) == (8, 2, 0.6, 42, 500)
    assert rgt.category_names() == {"math": "Math", "algorithmic": "Algorithmic", "cognition": "Cognition",
                                    "logic": "Logic"}


def test_every_hard_config_is_accepted_by_reasoning_gym() -> None:
    for t in rgt.hard_split():
        assert rgt.entry(t.name, t.config, 0)["question"]


def test_levels_and_overrides() -> None:
    easy = rgt.select_tasks("easy", ["gcd"])[0]
    hard = rgt.select_tasks("hard", ["gcd"])[0]
    assert easy.config == {} and hard.config["min_value"] == 1000 and hard.task_id == "rg:gcd-hard"
    t = rgt.select_tasks("hard", ["gcd", "lcm"], rgt.parse_overrides(["max_numbers=2", "min_numbers=2",
                                                                      "lcm.max_value=5000"]))
    assert t[0].config["max_numbers"] == 2 and t[1].config["max_value"] == 5000 and "max_value" not in easy.config
    for bad in (["--nope"], ["gcd.nope=1"], ["nope=1"]):
        with pytest.raises(SpadeError):
            rgt.select_tasks("hard", ["gcd"], rgt.parse_overrides(bad))
    with pytest.raises(SpadeError):
        rgt.select_tasks("medium")
    with pytest.raises(SpadeError):
        rgt.select_tasks("hard", ["not_a_task"])


RECORDED = [  # (task, entry, reply, a win?): score_answer decides, the suite must agree
    ("basic_arithmetic", 0, "I think <answer>12</answer>", None),
    ("spell_backward", 1, "\\boxed{abc}", None),
    ("gcd", 2, "no answer at all", False),
    ("gcd", 3, "<answer>1</answer> then <answer>{gold}</answer>", True),
    ("letter_counting", 0, "\\boxed{{gold}}", True),
    ("chain_sum", 4, "<ANSWER> {gold} </ANSWER>", True),
    ("chain_sum", 5, "<answer>{gold}</answer> and \\boxed{0}", True),
]


@pytest.mark.parametrize("name,index,reply,win", RECORDED)
def test_scoring_agrees_with_score_answer(name: str, index: int, reply: str, win: bool | None) -> None:
    import reasoning_gym

    task = rgt.select_tasks("easy", [name])[0]
    item = rgt.entry(name, task.config, index)
    reply = reply.replace("{gold}", str(item["answer"]))
    ds = reasoning_gym.create_dataset(name, seed=42, size=500)
    assert ds[index] == item  # the same entry SPADE's environment builds
    answer = rgt.extract_answer(reply)
    value = rgt.score(name, task.config, item, answer)
    assert value == ds.score_answer(answer=answer, entry=item)
    if win is not None:
        assert rgt.is_win(value) is win


def test_reference_answers_for_tasks_without_one() -> None:
    for name in ("graph_color", "propositional_logic", "rubiks_cube", "rush_hour"):
        task = rgt.select_tasks("hard", [name])[0]
        for i in range(3):
            item = rgt.entry(name, task.config, i)
            assert rgt.is_win(rgt.score(name, task.config, item, rgt.reference_answer(name, item))), (name, i)


def test_replay_reference_scores_everything_through_the_agent_loop() -> None:
    from spade_envs.agents import load_agent

    tasks = rgt.select_tasks("hard", ["gcd", "word_ladder", "rush_hour", "tower_of_hanoi", "graph_color"])
    rows, summary = suite.run_reasoning_gym(load_agent("replay:reference", trust_remote_code=True), tasks,
                                            episodes=2, batch_size=4)
    assert summary["overall"]["rate"] == 1.0 and summary["overall"]["n"] == 10
    assert set(summary["per_category"]) == {"Math", "Algorithmic", "Cognition"}
    assert all(r["formatted"] and r["score"] == 1.0 and r["transcript"]["actions"] for r in rows)


class _Scripted:
    """An agent whose reply is fixed: played through the same loop (an LLM agent's)."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        from spade_envs.agents import Backend, Generation

        class B(Backend):
            name = "scripted"

            def chat(self, conversations, **_: object):  # type: ignore[override]
                return [Generation(reply, [], [], []) for _ in conversations]

        from spade_envs.agents.rollout import LLMAgent

        self.agent = LLMAgent(B(), trust_remote_code=True)

    def play(self, tasks, progress=False):  # noqa: ANN001
        return self.agent.play(tasks, progress=progress)


def test_wrong_and_unformatted_answers_are_scored_as_such() -> None:
    tasks = rgt.select_tasks("easy", ["gcd"])
    rows, summary = suite.run_reasoning_gym(_Scripted("<answer>-7</answer>"), tasks, episodes=3)
    assert summary["overall"]["k"] == 0 and summary["format_rate"]["rate"] == 1.0
    assert all(r["why"].startswith("score 0") for r in rows)
    rows, summary = suite.run_reasoning_gym(_Scripted("the answer is seven"), tasks, episodes=2)
    assert summary["format_rate"]["rate"] == 0.0 and summary["accuracy_given_format"]["n"] == 0
    msgs = rows[0]["transcript"]["messages"]
    assert "<answer>answer here</answer>" in msgs[1]["content"]  # SPADE's reasoning-gym prompt


def test_cli_json(tmp_path) -> None:  # noqa: ANN001
    out = subprocess.run([sys.executable, "-m", "spade_envs.cli.main", "eval", "--suite", "reasoning-gym",
                          "--agent", "replay:reference", "--level", "easy", "--task", "gcd", "--task", "acre",
                          "--episodes", "2", "--out", str(tmp_path / "r"), "--json", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["suite"] == "reasoning-gym" and data["level"] == "easy"
    assert data["summary"]["overall"]["rate"] == 1.0 and set(data["summary"]["per_category"]) == {"Math", "Logic"}
    assert (tmp_path / "r" / "report.html").exists()
    bad = subprocess.run([sys.executable, "-m", "spade_envs.cli.main", "eval", "--suite", "reasoning-gym",
                          "--agent", "replay:reference", "--task", "nope", "--out", str(tmp_path / "b")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "nope" in bad.stderr


def test_generators_that_print_keep_stdout_clean(capsys: pytest.CaptureFixture[str]) -> None:
    rgt.entry("bf", {"difficulty": 2}, 7)  # reasoning-gym's bf compiler prints progress dots
    assert capsys.readouterr().out == ""
