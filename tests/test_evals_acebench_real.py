"""ACEBench suites on ACEBench's real English data (``../shared/acebench``), checked
against ACEBench's own evaluation code from the same checkout."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_envs.evals import acebench as ab
from spade_envs.evals.acebench_agreement import OfficialEvaluator, check_agreement, perturb
from spade_envs.trust import get_runtime


def _find_root() -> Path | None:
    if os.environ.get("ACEBENCH_ROOT"):
        return Path(os.environ["ACEBENCH_ROOT"])
    here = Path(__file__).resolve().parent
    for parent in here.parents:
        cand = parent / "shared" / "acebench"
        if (cand / "data_all").is_dir():
            return cand
    return None


ROOT = _find_root()
pytestmark = pytest.mark.skipif(ROOT is None, reason="ACEBench data not found (set ACEBENCH_ROOT)")


@pytest.fixture(scope="module")
def agent_entries():
    return ab.load_acebench(ROOT, ab.AGENT)


@pytest.fixture(scope="module")
def reference_run(agent_entries):
    runtime = get_runtime()  # the sandbox: the default for ACEBench's scenario code
    rows, summary = ab.run_acebench(ROOT, agent_entries, runtime=runtime)
    yield rows, summary, runtime
    runtime.close()


def test_full_agent_set_loads(agent_entries):
    cats = [e.category for e in agent_entries]
    assert cats.count("agent_multi_step") == 20 and cats.count("agent_multi_turn") == 30


def test_reference_replay_scores_100_percent_sandboxed(reference_run):
    rows, summary, runtime = reference_run
    assert type(runtime).__name__ == "SandboxRuntime"
    failed = [(r["id"], r["why"]) for r in rows if not r["passed"]]
    assert not failed
    assert summary["end_state_acc"] == 1.0 and summary["process_acc"] == 1.0
    row = rows[0]
    assert isinstance(row["result"], list) and all(len(item) == 1 for item in row["result"])
    assert row["process"] and all(isinstance(m, str) for m in row["process"])


def test_acebench_own_eval_scores_the_reference_output_100_percent(reference_run, tmp_path):
    rows, _, _ = reference_run
    base = ab.find_data_dir(ROOT)
    ev = OfficialEvaluator(ROOT, base, trust_remote_code=True)
    for cat in ab.AGENT:
        cat_rows = [r for r in rows if r["category"] == cat]
        prompts = ev._rows(cat, "prompt")
        answers = ev._rows(cat, "answer")
        records = json.loads(json.dumps([{"result": r["result"], "process": r["process"]} for r in cat_rows]))
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            (tmp_path / "score_all" / "score_en" / "spade").mkdir(parents=True, exist_ok=True)
            ev.main.OUTPUT_PATH = "./score_all/score_en/"
            end, process = ev.main.agent_eval(records, [prompts[r["id"]] for r in cat_rows],
                                              [answers[r["id"]] for r in cat_rows], cat, "spade")
        finally:
            os.chdir(cwd)
        assert (end, process) == (1.0, 1.0), cat


def test_verdicts_agree_with_acebench_entry_by_entry_and_on_perturbations(agent_entries, reference_run):
    rows, _, runtime = reference_run
    pick = {r["id"] for r in rows[:6]} | {r["id"] for r in [x for x in rows if x["category"] == "agent_multi_turn"][:6]}
    subset = [r for r in rows if r["id"] in pick]
    report = check_agreement(ROOT, agent_entries, subset, runtime=runtime, trust_remote_code=True)
    assert report["entries"]["rate"] == 1.0, report["disagreements"]
    assert report["perturbed"]["rate"] == 1.0, report["disagreements"]
    assert report["perturbed"]["n"] >= 3 * len(subset)


def test_perturbations_change_the_verdict(agent_entries, reference_run):
    """The agreement above is not trivial: perturbed trajectories mostly fail."""
    from spade_envs.evals.acebench_score import end_to_end
    from spade_envs.evals.acebench_world import AceWorld, ScenarioProgram

    rows, _, runtime = reference_run
    by_id = {e.id: e for e in agent_entries}
    failing = total = 0
    for row in rows[:8]:
        entry = by_id[row["id"]]
        program = ScenarioProgram(ROOT, entry.category)
        for kind, msgs in perturb(row["process"]).items():
            world = AceWorld(program, entry.involved_classes, entry.initial_config, runtime)
            for m in msgs:
                world.execute(m)
            total += 1
            failing += not end_to_end(world.result(), entry.ground_truth)[0]
            world.close()
    assert total >= 24 and failing >= total // 2


def test_normal_and_special_categories_agree_with_acebench(tmp_path):
    cats = ["normal_single_turn_single_function", "normal_multi_turn_user_adjust", "normal_atom_object_deep",
            "special_incomplete", "special_error_param", "special_irrelevant"]
    entries = [e for c in cats for e in ab.load_acebench(ROOT, [c])[:12]]
    rows, summary = ab.run_acebench(ROOT, entries, trust_remote_code=True)
    assert set(summary["accuracy_per_category"]) == set(cats)
    report = check_agreement(ROOT, entries, rows, runtime=get_runtime(trust_remote_code=True),
                             trust_remote_code=True)
    assert all(v["agree"] for v in report["categories"].values()), report["categories"]
    for cat in cats[3:]:
        assert summary["accuracy_per_category"][cat] == 1.0


def test_cli_runs_the_full_agent_set_sandboxed(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spade_envs.cli.main", "eval", "--suite", "acebench-agent",
                           "--agent", "replay:reference", "--data", str(ROOT), "--json", "--no-progress",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["summary"]["overall"]["rate"] == 1.0 and out["summary"]["overall"]["n"] == 50
    assert out["runtime"] == "sandbox" and "skipped" in out["summary"]["agreement"]
    entry = out["entries"][0]
    assert {"result", "process", "transcript", "passed"} <= set(entry)
    files = sorted(p.name for p in (tmp_path / "out" / "result_all" / "result_en" / "spade").iterdir())
    assert files == ["data_agent_multi_step_result.json", "data_agent_multi_turn_result.json"]


def test_cli_refuses_normal_categories_without_trust(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spade_envs.cli.main", "eval", "--suite", "acebench",
                           "--agent", "replay:reference", "--data", str(ROOT), "--category", "normal_atom_bool",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "--trust-remote-code" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
