"""Units of the pool import: Hub sources, file names and skills, the CLI's exit status when
interrupted, recovery of a run that stored entries but stopped before noting them, and
the bench's named figures."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture
from test_registry_pool_import import write_pool

from spade_envs.cli.main import main
from spade_envs.designer.pool_samples import SPADE_HEADER, pool_file_name, sample_program
from spade_envs.registry import pool_layout
from spade_envs.registry.pool_layout import (PoolError, fetch_pool, file_text, parse_game_name, skill_of, skill_slug,
                                             source_of)


def test_names_skills_and_headers():
    assert parse_game_name("game_00012_003_multi-step_workflows.py") == (12, 3, "multi-step_workflows")
    assert skill_of("game_00012_003_logical_deduction.py") == "logical deduction"
    assert parse_game_name("reject_00012_003_x.py") is None and skill_of("notes.py") is None
    assert skill_slug("Spatial Reasoning") == "spatial_reasoning" and skill_slug(None) == "general"
    for src in ("x = 1\n", '"""own docstring"""\nx = 1\n', SPADE_HEADER + "x = 1\n"):
        assert source_of(file_text(src)) == src and file_text(src).startswith('"""')


def test_hub_source_downloads_the_pinned_revision(tmp_path, monkeypatch):
    commit = "e179a371bc7764dacf0bcee1f808100beb463137"
    snapshot = tmp_path / "snapshots" / commit
    snapshot.mkdir(parents=True)
    calls = []

    def fake_download(repo_id, **kw):
        calls.append((repo_id, kw))
        return str(snapshot)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.chdir(tmp_path)
    assert fetch_pool(f"spare-rl/spare-gpt55-static-corpus@{commit}") == (snapshot, "spare-rl/spare-gpt55-static-corpus",
                                                                          commit)
    (repo, kw), = calls
    assert repo == "spare-rl/spare-gpt55-static-corpus" and kw["repo_type"] == "dataset" and kw["revision"] == commit
    assert "games/*" in kw["allow_patterns"] and "checksums.sha256" in kw["allow_patterns"]
    with pytest.raises(PoolError, match="neither a folder nor a Hub dataset"):
        fetch_pool("no such folder")


def _pool(tmp_path: Path) -> Path:
    return write_pool(tmp_path / "pool", {
        pool_file_name(1, 0, "Mathematical_Reasoning"): SPADE_HEADER + sample_program("tally", 40),
        pool_file_name(1, 1, "Spatial_Reasoning"): SPADE_HEADER + sample_program("beacons", 41),
    })


def test_cli_interrupted_exits_130_with_the_summary(spade_home, tmp_path, capsys, monkeypatch):  # noqa: F811
    from spade_envs.designer import pool_judge

    def interrupted(self, items):
        raise KeyboardInterrupt
        yield  # pragma: no cover

    monkeypatch.setattr(pool_judge.ParallelJudge, "results", interrupted)
    code = main(["registry", "import-pool", str(_pool(tmp_path)), "--json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 130 and data["interrupted"] is True and data["judged"] == 0 and data["pending"] == 2
    assert "run the same command again to resume" in err


def test_resume_after_storing_but_before_noting(spade_home, tmp_path, capsys):  # noqa: F811
    root = _pool(tmp_path)
    assert main(["registry", "import-pool", str(root), "--json", "--jobs", "1"]) == 0
    first = json.loads(capsys.readouterr()[0])
    assert first["registered"] == 2
    with sqlite3.connect(spade_home / "pool_imports.sqlite3") as conn:  # as if stopped right after the store write
        conn.execute("UPDATE judged SET outcome = NULL, env_id = NULL")
    assert main(["registry", "import-pool", str(root), "--json"]) == 0
    again = json.loads(capsys.readouterr()[0])
    assert again["judged"] == 0 and again["ids"] == first["ids"] and again["duplicates"] == 0


def test_unreadable_game_is_rejected_not_the_pool(spade_home, tmp_path, capsys, monkeypatch):  # noqa: F811
    root = _pool(tmp_path)
    monkeypatch.setattr(pool_layout, "MAX_GAME_BYTES", 100)  # every game is now too large to read
    from spade_envs.cli import pool_import

    out = pool_import.import_pool(str(root), jobs=1, progress=False)
    assert out["rejected"] == 2 and out["rejected_by_stage"] == {"read": 2} and out["judged"] == 0


def test_bench_pool_reports_named_figures(monkeypatch):
    from spade_envs.designer import bench_pool

    real = bench_pool.judge_rate
    monkeypatch.setattr(bench_pool, "judge_rate", lambda jobs, n, start: real(jobs, 3 if jobs == 1 else 4, start))
    figures = bench_pool.run(quick=True, jobs=2)
    assert figures["spade_programs_per_s"] > 0 and figures["spade_programs_per_s_one_worker"] > 0
    assert figures["ratio_spade_accepted"] == 1.0 and figures["spade_pool_workers"] == 2
    assert figures["ratio_spade_per_s_vs_workers_x_one_worker"] > 0


def test_a_sandbox_that_cannot_judge_stops_the_import_instead_of_rejecting(monkeypatch):
    """A judging process whose sandbox rejects a known-good program refuses every job
    (JudgeUnavailable: nothing is journaled) rather than rejecting each file."""
    import signal

    from spade_envs.designer import pool_judge

    monkeypatch.setattr(signal, "signal", lambda *a: None)  # _init would ignore SIGINT in this process
    monkeypatch.setattr(pool_judge, "pipeline_for_pool", lambda step_deadline_s: object())
    monkeypatch.setattr(pool_judge, "judge_source", lambda pipeline, source, name: {
        "accepted": False, "stages": [{"name": "compile", "ok": False, "detail": "zygote did not start"}]})
    monkeypatch.setattr(pool_judge, "_PIPELINE", None)
    monkeypatch.setattr(pool_judge, "_INIT_ERROR", None)
    pool_judge._init(2.0)
    with pytest.raises(pool_judge.JudgeUnavailable, match="known-good program at compile: zygote did not start"):
        pool_judge._job("game_00001_000_x.py", "class XEnv: pass\n")


def test_write_path_measures_tool_specs_from_the_judging_sandbox():
    """register_accepted_many measures specs through a runtime; RecordedSpecs answers with
    what the judging sandbox saw for exactly that source, and measures anything else."""
    from spade_envs.designer.pool_judge import RecordedSpecs
    from spade_envs.registry.toolspecs import collect_tool_specs

    spec = {"type": "function", "function": {"name": "peek", "description": "d",
                                             "parameters": {"type": "object", "properties": {}}}}
    recorded = RecordedSpecs()
    recorded.add("x = 1\n", {"tool_specs_seeds": [[spec], [spec], []]})
    assert collect_tool_specs("x = 1\n", recorded) == ([spec], True)
    shelves = sample_program("shelves", 50)  # never recorded: measured for real, in a sandbox
    specs, vary = collect_tool_specs(shelves, recorded, filename="shelves.py")
    assert sorted(t["function"]["name"] for t in specs) == ["count", "list_shelves"] and not vary


def test_bench_pool_scale_figure_and_its_setting(monkeypatch):
    from spade_envs.designer import bench_pool

    calls = []

    def fake(jobs, n, start):
        calls.append((jobs, n))
        return {"per_s": 2.0 * jobs, "steady_per_s": 2.0 * jobs, "startup_s": 0.1, "accepted": 1.0}

    monkeypatch.setattr(bench_pool, "judge_rate", fake)
    monkeypatch.setenv("SPADE_BENCH_POOL_N", "1000")
    figures = bench_pool.run(quick=True, jobs=2)
    assert (2, 1000) in calls and figures["spade_pool_scale_n"] == 1000
    assert figures["ratio_spade_pool_scale_per_s_vs_one_worker"] == 2.0 and "load_average_1m_pool_scale" in figures
    monkeypatch.setenv("SPADE_BENCH_POOL_N", "0")
    assert "spade_pool_scale_per_s" not in bench_pool.run(quick=True, jobs=2)
    monkeypatch.setenv("SPADE_BENCH_POOL_N", "lots")
    from spade_envs.errors import SpadeError

    with pytest.raises(SpadeError, match="SPADE_BENCH_POOL_N"):
        bench_pool.run(quick=True, jobs=2)
