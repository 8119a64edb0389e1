"""Acceptance pipeline on the seed suite (accepted, in-process and sandboxed) and on
deliberately broken variants of it (rejected), plus the leak rule and the probes."""

from __future__ import annotations

import pytest

from spade_envs.designer.acceptance import AcceptancePipeline
from spade_envs.designer.acceptance.leak import find_leak, is_specific, secrets
from spade_envs.designer.mutants import OPERATORS, SLOW_OPERATORS, mutate, outcome
from spade_envs.designer.acceptance.probes import garbage_probes
from spade_envs.registry.catalog import seed_records
from spade_envs.runtime import InProcessRuntime

SEEDS = seed_records()


def _pick(tool_use: bool):
    return next(r for r in SEEDS if ("ToolUseBaseEnv" in r.source) == tool_use)


def test_seed_suite_accepted_in_process():
    pipeline = AcceptancePipeline(runtime=InProcessRuntime())
    reports = pipeline.run_many([(r.metadata["file"], r.source) for r in SEEDS])
    bad = [f"{r.filename}: {r.summary()}" for r in reports if not r.accepted]
    assert len(reports) == len(SEEDS) >= 2 and not bad, bad


def test_seed_suite_accepted_sandboxed():
    pytest.importorskip("spade_envs.sandbox")
    reports = AcceptancePipeline().run_many([(r.metadata["file"], r.source) for r in SEEDS], parallel=2)
    bad = [f"{r.filename}: {r.summary()}" for r in reports if not r.accepted]
    assert len(reports) == len(SEEDS) and not bad, bad
    assert [r.filename for r in reports] == [r.metadata["file"] for r in SEEDS]  # order kept


@pytest.mark.parametrize("tool_use", [False, True], ids=["text", "tool"])
def test_every_mutant_of_a_seed_is_rejected(tool_use):
    rec = _pick(tool_use)
    mutants = mutate(rec.source, rec.metadata["file"])
    assert len(mutants) >= len(OPERATORS) - 3  # nearly every operator applies
    pipeline = AcceptancePipeline(runtime=InProcessRuntime())
    survivors, misplaced = [], []
    for mutant in mutants:
        report = pipeline.run(mutant.source, mutant.name)
        got = outcome(report)  # a rejecting stage, or "unverified" (accepted without a replayed win)
        if got == "accepted":
            survivors.append(mutant.operator)
        elif got not in mutant.expect:
            misplaced.append((mutant.operator, got, report.failure.detail if report.failure else ""))
    assert not survivors
    assert len(misplaced) <= 1, misplaced


def test_hang_mutant_needs_and_gets_a_deadline():
    pytest.importorskip("spade_envs.sandbox")
    from spade_envs.designer.acceptance import AcceptanceConfig

    rec = _pick(False)
    (mutant,) = mutate(rec.source, "x.py", SLOW_OPERATORS)
    report = AcceptancePipeline(AcceptanceConfig(step_deadline_s=0.5)).run(mutant.source)
    # killed at the deadline ("... exceeded the 0.5 s deadline") or, on a loaded machine, a
    # reply that came back after it ("... took 0.63 s (deadline 0.5 s per call)"): both refuse
    assert report.rejected_at == "smoke" and "deadline" in report.failure.detail


def test_leak_specificity_rule():
    assert not is_specific("3") and not is_specific("42") and not is_specific("yes")
    assert is_specific("1234") and is_specific("RBOY") and is_specific("photosynthesis")
    # word boundaries: 105 inside 1105 is not a leak; case-insensitive match is
    assert find_leak("105", ["codes: 1105, 2105"]) is None
    assert find_leak("Berlin", ["the capital is BERLIN"]) is not None
    # vocabulary: an option listed for every seed is not this seed's secret
    assert find_leak("Berlin", ["Options: Berlin, Paris"], [("Options: Berlin, Paris", "Paris")]) is None
    # tool-use answers and move sequences
    assert [s.label for s in secrets("<tool_call>{}</tool_call>\n<answer>5234</answer>")] == ["5234"]
    plan = "\\boxed{W}\n\\boxed{W}\n\\boxed{S}\n\\boxed{E}\n\\boxed{N}"
    assert find_leak(plan, ["optimal route: W, W, S, E, N"]) is not None
    assert find_leak(plan, ["Moves: N, S, E or W"]) is None


def test_garbage_probes_adapt_to_the_program():
    text = {p.name for p in garbage_probes([], ["\\boxed{1}"])}
    assert {"boxed:0", "boxed:yes", "boxed:A", "empty", "answer_junk"} <= text
    assert "repeat_first_action" not in text
    spec = {"type": "function", "function": {"name": "peek", "parameters": {"type": "object"}}}
    tool = {p.name for p in garbage_probes([spec], ["<tool_call>a</tool_call>", "<answer>1</answer>"])}
    assert {"tool_no_args:peek", "tool_bogus_args:peek", "repeat_first_action", "answer:0"} <= tool
    assert len(garbage_probes([spec], ["a", "b"], limit=3)) == 3


def test_bench_reports_named_figures(monkeypatch):
    import spade_envs.registry.catalog as catalog
    from spade_envs.designer import bench_acceptance

    two = (_pick(False), _pick(True))
    monkeypatch.setattr(catalog, "seed_records", lambda: two)
    figures = bench_acceptance.run(quick=True)
    assert figures["n_candidates"] == 2 and figures["ratio_seeds_accepted"] == 1.0
    assert figures["candidates_per_s"] > 0 and figures["ratio_mutants_rejected"] == 1.0
    assert sum(figures["mutant_rejections_by_stage"].values()) == figures["n_mutants"] > 10
    assert "accepted" not in figures["mutant_rejections_by_stage"]
