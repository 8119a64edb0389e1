"""Evals people can read: why each entry failed, transcripts, n/a checks for text-only
environments, a skill-stratified --limit, the leaderboard in the HTML and across runs."""

import json

from spade_envs.agents import load_agent
from spade_envs.cli.main import main
from spade_envs.evals import registry_suite as rs
from spade_envs.evals.report import build_results, html_report, write_report
from spade_envs.registry.catalog import resolve


def _garbage_run(tmp_path):
    path = tmp_path / "garbage.jsonl"
    lines = [{"id": "spade/Env-00001", "turns": [["\\boxed{-12345}"]]},
             {"id": "spade/Env-00013", "turns": [["I do not know"]]}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    recs = [resolve("spade/Env-00001"), resolve("spade/Env-00013")]
    rows, summary = rs.run_registry_suite(load_agent(f"replay:{path}"), recs, seeds=(0,))
    return build_results("registry", "replay:garbage", rows, summary), rows, summary


def test_text_only_checks_are_na_and_failures_say_why(tmp_path):
    results, rows, summary = _garbage_run(tmp_path)
    text_only, tool = rows
    assert not text_only["passed"] and not tool["passed"]
    assert text_only["state_ok"] is None and text_only["response_ok"] is None and text_only["end_state_ok"] is None
    assert tool["state_ok"] is not None and tool["response_ok"] is False  # checked, and no reference result seen
    assert summary["per_skill"][text_only["skill"]]["state_ok"] is None  # n/a, not a pass
    assert summary["state_ok"]["n"] == 1 and summary["response_ok"]["k"] == 0
    for row in rows:
        assert row["why"].startswith("not won") and "-12345" in rows[0]["why"]
        assert row["transcript"]["actions"] and row["transcript"]["messages"]


def test_report_has_transcripts_leaderboard_and_readable_summary(tmp_path):
    results, rows, _ = _garbage_run(tmp_path)
    paths = write_report(results, tmp_path / "rep")
    lines = [json.loads(x) for x in open(paths["transcripts"])]
    assert [x["id"] for x in lines] == [r["id"] for r in rows]
    assert all(x["why"] and x["transcript"]["messages"] for x in lines)
    page = html_report(results)
    assert "<h2>Leaderboard</h2>" in page and "replay:garbage" in page
    assert page.count("<details>") == 2 and "-12345" in page
    assert '{\n "success"' not in page  # tables, not a JSON dump


def test_limit_is_stratified_by_skill():
    records = rs.active_records()
    skills = {str((r.metadata or {}).get("skill", "")).lower() for r in records}
    picked = rs.select_records(records, limit=len(skills))
    assert {str((r.metadata or {}).get("skill", "")).lower() for r in picked} == skills
    assert [str(r.env_id) for r in picked] == sorted(str(r.env_id) for r in picked)


def test_leaderboard_over_several_runs(tmp_path, capsys):
    good = tmp_path / "good"
    assert main(["eval", "--suite", "registry", "--agent", "replay:reference", "--limit", "2", "--no-progress",
                 "--out", str(good)]) == 0
    results, _, _ = _garbage_run(tmp_path)
    write_report(results, tmp_path / "bad")
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "bad"), str(good / "results.json"), "--out", str(tmp_path / "lb")]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0] == "## registry" and md[4].startswith("| 1 | good | replay:reference")
    assert "| replay:garbage |" in md[5] and md[5].startswith("| 2 |")
    assert "replay:garbage" in (tmp_path / "lb" / "leaderboard.html").read_text()
    assert main(["leaderboard", str(tmp_path / "nope")]) == 1
    assert "not a spade eval results file" in capsys.readouterr().err
