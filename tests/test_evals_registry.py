"""Registry suites: splits, selection, and metrics on scripted agents with known answers."""

import pytest

from spade_envs.evals import registry_suite as rs
from spade_envs.evals.scripted import ReferenceAgent, ScriptedAgent
from spade_envs.evals.splits import HELDOUT_FRACTION, in_split, is_heldout, split_bucket, split_of
from spade_envs.registry.catalog import resolve


def test_heldout_split_is_stable_and_about_a_fifth():
    ids = [f"spade/Env-{i:05d}" for i in range(1, 5001)]
    frac = sum(is_heldout(i) for i in ids) / len(ids)
    assert abs(frac - HELDOUT_FRACTION) < 0.02
    # versions share their env's split; forms of the same id agree; deterministic
    for i in ids[:200]:
        assert is_heldout(i) == is_heldout(i + "-v3") == is_heldout(i.replace("spade/", ""))
    assert split_bucket("spade/Env-00001") == split_bucket("spade/Env-00001-v0")
    assert split_of(ids[0]) in ("train", "heldout")
    assert in_split(ids[0], "all") and in_split(ids[0], None)
    assert in_split(ids[0], split_of(ids[0])) and not in_split(ids[0], {"train": "heldout", "heldout": "train"}[split_of(ids[0])])


def test_select_records_filters():
    recs = rs.active_records()
    assert len(recs) >= 2
    tool = rs.select_records(recs, skill="Tool Use")
    assert tool and all(r.metadata["skill"] == "tool use" for r in tool)
    assert rs.select_records(recs, generation=7) == []
    tagged = rs.select_records(recs, tags=["banking"])
    assert [str(r.env_id) for r in tagged] == ["spade/Env-00013-v0"]
    held = rs.select_records(recs, split="heldout")
    train = rs.select_records(recs, split="train")
    assert len(held) + len(train) == len(recs) and all(is_heldout(r.env_id) for r in held)
    assert len(rs.select_records(recs, limit=1)) == 1


def test_process_accuracy_ordered_greedy():
    assert rs.process_accuracy(["a", "b", "c"], ["a", "x", "b", "c"]) == 1.0
    assert rs.process_accuracy(["a", "b", "c"], ["c", "b", "a"]) == pytest.approx(1 / 3)
    assert rs.process_accuracy(["a", "b", "c"], ["b", "c"]) == pytest.approx(2 / 3)
    assert rs.process_accuracy([], ["x"]) == 1.0
    assert rs.process_accuracy(["a"], []) == 0.0


def test_split_results():
    assert rs.split_results("Tool result:\n1\nTool result:\n2", 2) == ["1", "2"]
    assert rs.split_results("Tool result:\nabc", 1) == ["abc"]
    assert rs.split_results("something else", 2) == ["something else"]


def _bank():
    return [resolve("spade/Env-00013")]


def test_reference_agent_passes_every_check():
    recs = [resolve("spade/Env-00001"), resolve("spade/Env-00013")]
    rows, summary = rs.run_registry_suite(ReferenceAgent(), recs, seeds=(0, 1))
    assert len(rows) == 4
    assert all(r["passed"] and r["process_acc"] == 1.0 for r in rows)
    text_only = [r for r in rows if r["id"].startswith("spade/Env-00001")]
    tool_use = [r for r in rows if r["id"].startswith("spade/Env-00013")]
    assert all(r["state_ok"] is None and r["response_ok"] is None for r in text_only)  # n/a: no tools
    assert all(r["state_ok"] and r["response_ok"] for r in tool_use)
    assert summary["state_ok"]["n"] == 2 and summary["response_ok"]["k"] == 2
    assert summary["success"]["k"] == 4 and summary["success"]["ci95"][0] == pytest.approx(0.5101, abs=1e-3)
    assert set(summary["per_skill"]) == {"mathematical reasoning", "tool use"}
    assert summary["per_generation"]["0"]["success"]["n"] == 4
    assert summary["env_versions"] == ["spade/Env-00001-v0", "spade/Env-00013-v0"]
    assert len(summary["registry_revision"]) == 16


def test_skipping_a_read_call_fails_response_but_not_state():
    # bank ledger tools are read-only: skipping the first lookup still wins, leaves the
    # state equal, but one reference result is missing; 1 of N milestones is lost
    agent = ScriptedAgent(lambda task, ref: list(ref[1:]))
    (row,) = rs.run_registry_suite(agent, _bank(), seeds=(3,))[0]
    n = len(rs.replay_trace(_bank()[0], 3).milestones)
    assert row["passed"] and row["state_ok"] and not row["response_ok"]
    assert row["process_acc"] == pytest.approx((n - 1) / n)


def test_wrong_answer_fails_success_only():
    agent = ScriptedAgent(lambda task, ref: list(ref[:-1]) + ["<answer>-1</answer>"])
    (row,) = rs.run_registry_suite(agent, _bank(), seeds=(3,))[0]
    n = len(rs.replay_trace(_bank()[0], 3).milestones)
    assert not row["passed"] and row["response_ok"]
    assert row["process_acc"] == pytest.approx((n - 1) / n)


def test_doing_nothing_fails_everything_measurable():
    agent = ScriptedAgent(lambda task, ref: [])
    rows, summary = rs.run_registry_suite(agent, [resolve("spade/Env-00001")] + _bank(), seeds=(0,))
    assert [r["passed"] for r in rows] == [False, False]
    assert [r["process_acc"] for r in rows] == [0.0, 0.0]
    assert rows[1]["response_ok"] is False
    assert summary["success"]["rate"] == 0.0 and summary["process_acc"] == 0.0
