"""The learning bench's pieces: paired statistics, the sets, the external rule, the
designer's shares and the plot, the fixed-environment baseline setting."""

from __future__ import annotations

import math

import pytest

from spade_envs.evals.stats import mcnemar_exact, paired_summary
from spade_envs.selfplay import learning_sets as ls


def test_mcnemar_exact_matches_the_binomial_tail() -> None:
    # 1 episode won only before, 9 only after: 2 * P(X <= 1), X ~ Bin(10, 1/2)
    before = [True] + [False] * 9 + [True, False]
    after = [False] + [True] * 9 + [True, False]
    assert mcnemar_exact(before, after) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact([True, False], [True, False]) == 1.0  # no discordant pair
    assert mcnemar_exact([False] * 5, [True] * 5) == pytest.approx(2 / 32)
    assert mcnemar_exact([True] * 3 + [False] * 3, [False] * 3 + [True] * 3) == 1.0  # symmetric change
    with pytest.raises(ValueError):
        mcnemar_exact([True], [True, False])
    s = paired_summary([False, False, True, True], [True, True, True, False])
    assert (s["before"], s["after"], s["won_only_after"], s["won_only_before"], s["episodes"]) == (0.5, 0.75, 2, 1, 4)
    assert s["before_ci95"][0] < 0.5 < s["before_ci95"][1]


def test_set_figures_split_format_from_accuracy() -> None:
    O = ls.Outcome
    before = [O(False, False)] * 6 + [O(True, True), O(False, True)]
    after = [O(False, True)] * 6 + [O(True, True), O(False, True)]
    f = ls.set_figures(before, after)
    assert f["before"] == f["after"] == 1 / 8 and f["p_value"] == 1.0  # no change in wins
    assert f["format_rate_before"] == 0.25 and f["format_rate_after"] == 1.0  # only the format was learned
    assert f["accuracy_given_format_before"] == 0.5 and f["accuracy_given_format_after"] == 1 / 8
    assert f["format_p_value"] < 0.05


def test_formatted_reply() -> None:
    assert ls.formatted_reply(["so \\boxed{4}"]) and ls.formatted_reply(["<answer>x</answer>"])
    assert ls.formatted_reply(['<tool_call>{"name": "f", "arguments": {}}</tool_call>'])
    assert not ls.formatted_reply(["the answer is 4", ""]) and not ls.formatted_reply([])


def test_heldout_levels_are_reported_apart() -> None:
    from spade_envs.evals.splits import is_heldout

    t0, e0 = ls.heldout_tasks(0, 12, max_turns=2)
    t1, e1 = ls.heldout_tasks(1, 12, max_turns=2)
    assert len(t0) >= 12 and len(t1) >= 12 and all(is_heldout(t.env_id) for t in t0 + t1)
    assert {e["kwargs"]["difficulty"] for e in e0} == {0} and {e["kwargs"]["difficulty"] for e in e1} == {1}
    assert [(t.env_id, t.seed) for t in t0] == [(t.env_id, t.seed) for t in t1]  # same envs and seeds, other level
    assert ls.heldout_tasks(99, 12, max_turns=2) == ([], [])


def test_external_set_is_chosen_by_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("reasoning_gym")
    cands = ls.external_candidates(screen_episodes=4)
    assert cands and all(t.level == "easy" and t.config == {} for t in cands)
    from spade_envs.evals import reasoning_gym_tasks as rgt

    assert all(len(rgt.question_text(rgt.entry(t.name, {}, ls.SCREEN_SEED0))) <= ls.EXTERNAL_PROMPT_CHARS
               for t in cands)
    wins_by_task = {t.task_id: i % 5 for i, t in enumerate(cands)}  # 0..4 wins of 4 screening episodes

    def fake_play(model, tasks, **_):  # noqa: ANN001, ANN003
        seen = {}
        out = []
        for t in tasks:
            assert t.seed >= ls.SCREEN_SEED0 and t.seed < ls.EXTERNAL_SEED0
            seen[t.env_id] = seen.get(t.env_id, 0) + 1
            out.append(ls.Outcome(seen[t.env_id] <= wins_by_task[t.env_id], True))
        return out

    monkeypatch.setattr(ls, "play", fake_play)
    chosen, table = ls.select_external("default", max_new_tokens=8, seed=1, screen_episodes=4)
    assert {t.task_id for t in chosen} == {k for k, w in wins_by_task.items() if w in (1, 2)}  # 25 %, 50 %
    assert len(table) == len(cands) and sum(r["chosen"] for r in table) == len(chosen)
    plays = ls.external_tasks(chosen, 400)
    assert len(plays) >= 400 and all(p.seed >= ls.EXTERNAL_SEED0 for p in plays)
    per_task = len(plays) // len(chosen)
    assert per_task == math.ceil(400 / len(chosen))
    assert ls.external_tasks([], 400) == []


def test_round_shares_and_plot_lines(tmp_path) -> None:  # noqa: ANN001
    from spade_envs.selfplay.learning_bench import round_signal
    from spade_envs.selfplay.metrics import MetricsLogger, shares

    assert shares({"proposed": 4, "valid": 3, "frontier": 1}) == {"accepted_share": 0.75, "frontier_share": 0.25}
    assert shares({"proposed": 0}) == {"accepted_share": None, "frontier_share": None}
    log = MetricsLogger(tmp_path, tensorboard=False)
    for r in range(3):
        log.log({"round": r, "proposed": 4, "valid": r + 1, "frontier": r, "mean_regret": 0.1 * r,
                 "agent_reward": 0.2 * r, "agent_loss": 0.5 - 0.1 * r, "designer_loss": 0.3, "win_rate_plain": 0.2,
                 "designer_trained_regret": 0.05 * r})
    rows = log.read()
    assert [r["frontier_share"] for r in rows] == [0.0, 0.25, 0.5] and rows[2]["accepted_share"] == 0.75
    sig = round_signal(rows)
    assert [s["accepted_share"] for s in sig] == [0.25, 0.5, 0.75] and sig[1]["designer_loss"] == 0.3
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    captured = {}
    real = plt.close
    monkey = pytest.MonkeyPatch()
    monkey.setattr(plt, "close", lambda fig=None: captured.setdefault("fig", fig) or real(fig))
    try:
        assert log.plot().exists()
    finally:
        monkey.undo()
    titles = {ax.get_title(): ax for ax in captured["fig"].axes}
    for title in ("designer acceptance", "designer learning signal", "regret of the plays", "agent reward", "GRPO loss"):
        lines = titles[title].lines
        assert lines and all(len(line.get_xdata()) == 3 for line in lines), title  # a line over the rounds
    assert len(titles["GRPO loss"].lines) == 2  # both roles
    assert len(titles["regret of the plays"].lines) == 2  # all plays, and the designer's proposals


def test_designer_off_is_the_fixed_environment_baseline() -> None:
    from spade_envs.selfplay.config import SelfPlayConfigError
    from spade_envs.selfplay.presets import build_config

    cfg = build_config("cpu-smol")
    off = cfg.replace(designer="off")
    assert off.designer_prompts == 0 and cfg.designer_prompts > 0
    same = {k for k, v in cfg.to_dict().items() if off.to_dict()[k] != v}
    assert same == {"designer", "designer_prompts"}  # the same agent, budget and GRPO settings
    with pytest.raises(SelfPlayConfigError):
        cfg.replace(designer="nobody")


def test_main_job_table_reports_every_set() -> None:
    from spade_envs.selfplay.report import compare_table, plain_summary

    O = ls.Outcome
    sets = {"heldout_level0": ls.set_figures([O(False, True)] * 4, [O(True, True)] * 4),
            "heldout_level1": ls.set_figures([O(False, False)] * 4, [O(False, True)] * 4),
            "external": ls.set_figures([O(False, False)] * 2, [O(False, False)] * 2)}
    compare = {"episodes": 4, "before": {"wins": 0, "rate": 0.0, "ci95": [0, 0.5]},
               "after": {"wins": 4, "rate": 1.0, "ci95": [0.5, 1]},
               "envs": [{"id": "spade/Env-00012-v0", "kwargs": {"difficulty": 0}, "episodes": 4,
                         "wins_before": 0, "wins_after": 4}], "sets": sets}
    table = compare_table(compare)
    assert "held-out, level 1 (no answer stated)" in table and "external (reasoning-gym, easy)" in table
    assert "100.0%" in table and "0.125" in table  # level 0: 4 discordant pairs, p = 2/16
    rows = [{"round": 0, "proposed": 4, "valid": 2, "accepted_share": 0.5, "frontier_share": 0.25}]
    text = plain_summary({"registered": 0, "generations": []}, rows, compare)
    assert "share accepted was 50%" in text and "frontier band" in text and "25%" in text
    assert "level 1 (no answer stated) set (4 episodes) it won 0.0% before and 0.0% after" in text


def test_heldout_turn_budget_lets_every_episode_be_won() -> None:
    """At the evaluation turn budget every held-out reference plan fits; at 2 turns some
    level-1 episodes could be won by no agent (the budget the bench used to play)."""
    t1, _ = ls.heldout_tasks(1, 12, max_turns=ls.EVAL_MAX_TURNS)
    reach = ls.winnable(t1)
    assert reach["unknown"] == 0 and reach["winnable"] == len(t1)
    assert reach["longest_plan"] <= ls.EVAL_MAX_TURNS
    short = ls.winnable(ls.heldout_tasks(1, 12, max_turns=2)[0])
    assert short["winnable"] < len(t1)


@pytest.mark.parametrize("setting, needle", [
    ("SPADE_BENCH_EPISODES=abc", "SPADE_BENCH_EPISODES must be a whole number of at least 1, got 'abc'"),
    ("SPADE_BENCH_SCREEN=0", "SPADE_BENCH_SCREEN must be a whole number of at least 1"),
    ("SPADE_BENCH_TRAIN_S=nan", "SPADE_BENCH_TRAIN_S must be a number of at least 0"),
    ("SPADE_BENCH_SEED_LEVELS=all", "SPADE_BENCH_SEED_LEVELS must be one of default, easiest, ladder"),
])
def test_bad_bench_settings_are_refused_before_anything_runs(monkeypatch, tmp_path, setting, needle) -> None:  # noqa: ANN001
    from spade_envs.selfplay import learning_bench
    from spade_envs.selfplay.config import SelfPlayConfigError

    name, value = setting.split("=")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("SPADE_BENCH_OUT", str(tmp_path / "out"))
    monkeypatch.setattr(learning_bench, "run_learning_bench", lambda **kw: pytest.fail("ran with a bad setting"))
    with pytest.raises(SelfPlayConfigError, match=needle.replace("(", r"\(")):
        learning_bench.run()
