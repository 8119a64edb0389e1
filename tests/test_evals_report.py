"""Report generation (JSON, Markdown leaderboard, HTML with embedded plots) and the
``spade eval`` command (JSON shape, errors, a fake model backend on BFCL)."""

import json
from dataclasses import dataclass

import pytest

from spade_envs.cli.main import main
from spade_envs.evals import registry_suite as rs
from spade_envs.evals.report import build_results, html_report, markdown_table, write_report
from spade_envs.evals.scripted import ReferenceAgent
from spade_envs.registry.catalog import resolve


@pytest.fixture(scope="module")
def registry_results():
    recs = [resolve("spade/Env-00001"), resolve("spade/Env-00013")]
    rows, summary = rs.run_registry_suite(ReferenceAgent(), recs, seeds=(0,))
    rows[0]["regret"] = 0.3
    return build_results("registry", "replay:reference", rows, summary)


def test_results_shape(registry_results):
    r = registry_results
    assert {"suite", "agent", "summary", "entries"} <= set(r)
    assert r["env_versions"] == ["spade/Env-00001-v0", "spade/Env-00013-v0"]
    assert r["registry_revision"] and r["versions"]["spade-envs"]
    assert all({"id", "passed"} <= set(e) for e in r["entries"])
    json.dumps(r)


def test_markdown_leaderboard(registry_results):
    other = json.loads(json.dumps(registry_results))
    other["agent"], other["run"] = "worse", "worse-run"
    for e in other["entries"]:
        e["passed"] = False
    md = markdown_table([other, registry_results])
    lines = md.splitlines()
    assert lines[0] == "## registry"
    assert lines[2].startswith("| rank | run | agent | success % [95% CI] | episodes |")
    assert lines[4].startswith(f"| 1 | {registry_results['run']} | replay:reference | 100.0 [")
    assert lines[5].startswith("| 2 | worse-run | worse | 0.0 [")
    single = markdown_table([registry_results])
    assert "| skill |" in single and "| tool use | 100.0" in single and "| generation |" in single


def test_html_report_embeds_plots(registry_results, tmp_path):
    page = html_report(registry_results)
    assert page.count('src="data:image/png;base64,') == 3  # per skill, per generation, success vs regret
    for title in ("success per skill", "success per generation", "success vs regret"):
        assert title in page
    paths = write_report(registry_results, tmp_path / "rep")
    assert json.loads(open(paths["json"]).read())["suite"] == "registry"
    assert open(paths["markdown"]).read().startswith("## registry\n")
    assert open(paths["html"]).read().startswith("<!doctype html>")


def test_cli_registry_json(tmp_path, capsys):
    rc = main(["eval", "--suite", "registry", "--agent", "replay:reference", "--limit", "2", "--json",
               "--no-progress", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0
    obj = json.loads(out)
    assert obj["suite"] == "registry" and obj["agent"] == "replay:reference"
    assert len(obj["entries"]) == 2 and all(e["passed"] for e in obj["entries"])
    assert (tmp_path / "o" / "report.html").exists()


def test_cli_bfcl_reference_agreement(tmp_path, capsys):
    pytest.importorskip("bfcl_eval")
    rc = main(["eval", "--suite", "bfcl-v4-multi-turn", "--agent", "replay:reference", "--category", "miss_func",
               "--limit", "20", "--json", "--no-progress", "--out", str(tmp_path / "b")])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and obj["summary"]["agreement"] == {
        "n": 20, "agree": 20, "disagree_ids": [], "irrelevance_agree": 20, "bfcl_failed_ids": []}
    assert {e["category"] for e in obj["entries"]} == {"miss_func"}


@pytest.mark.parametrize("args,code,msg", [
    (["--suite", "games", "--agent", "nope:thing"], 1, "unknown backend"),
    (["--suite", "nope", "--agent", "replay:reference"], 2, "unknown suite"),
    (["--suite", "acebench-agent", "--agent", "replay:reference"], 1, "ACEBench checkout"),
    (["--suite", "bfcl-v4-multi-turn", "--agent", "replay:reference", "--category", "zzz"], 1, "unknown BFCL"),
    (["--suite", "registry", "--agent", "replay:reference", "--split", "bogus"], 1, "unknown split"),
])
def test_cli_errors_are_one_line(args, code, msg, capsys, tmp_path):
    rc = main(["eval", *args, "--no-progress", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == code and msg in err and "Traceback" not in err


@dataclass
class Gen:
    text: str


class EchoBackend:
    """A stand-in model: one `pwd` call on a turn's first step, then plain text."""

    name = "fake"

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None):
        return [Gen('<tool_call>{"name": "pwd", "arguments": {}}</tool_call>' if c[-1]["role"] == "user" else "done")
                for c in conversations]


def test_cli_bfcl_with_model_backend(monkeypatch, tmp_path, capsys):
    pytest.importorskip("bfcl_eval")
    import spade_envs.agents as agents

    monkeypatch.setattr(agents, "load_backend", lambda spec, **kw: EchoBackend(), raising=False)
    rc = main(["eval", "--suite", "bfcl-v4-multi-turn", "--agent", "fake:model", "--limit", "4", "--json",
               "--no-progress", "--out", str(tmp_path / "m")])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(obj["entries"]) == 4
    assert all(e["n_calls"] >= 1 for e in obj["entries"])
    assert obj["summary"]["overall"]["n"] == 4
    assert all(e["agree"] for e in obj["entries"] if "agree" in e)
