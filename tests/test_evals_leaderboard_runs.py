"""Reports whose numbers add up and leaderboards that keep runs apart (issue 30):
the games headline counts exactly the matches it lists, every suite gets its own
leaderboard, two runs of one agent stay apart by name and time, and ``--out`` is never
overwritten without ``--force``."""

from __future__ import annotations

import json
import re

import pytest

from spade_envs.cli.main import main
from spade_envs.evals.report import headline, headline_text, html_report, markdown_table


@pytest.fixture(scope="module")
def games_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("games") / "g"
    assert main(["eval", "--suite", "games", "--agent", "replay:reference", "--limit", "4", "--no-progress",
                 "--out", str(out)]) == 0
    return out


def _results(folder):
    return json.loads((folder / "results.json").read_text())


def test_games_headline_adds_up(games_run, capsys):
    r = _results(games_run)
    s, h = r["summary"], headline(r)
    assert len(r["games"]) == 4 and len({e["id"] for e in r["entries"]}) == 4
    assert s["overall"]["n"] == h["n"] == s["vs_baselines"]
    assert h["n"] + s["self_play"] + s["errors"] + s["self_play_errors"] == s["matches"] == len(r["entries"])
    assert sum(g["n"] for g in _per_game(r).values()) == h["n"]  # every listed game counts in the headline
    page = html_report(r)
    failing = h["n"] - h["k"]
    assert f"{failing} failing of {h['n']} matches" in page
    assert re.search(rf"Failing matches \({min(failing, 300)} of {failing} shown\)", page)
    assert f"{s['self_play']} self-play matches reported apart" in headline_text(r)
    assert r["run"] == "g"


def _per_game(r):
    from spade_envs.evals.report import _groups

    return _groups(r)["game"]


def test_leaderboard_per_suite_runs_apart_and_force(games_run, tmp_path, capsys):
    reg = [tmp_path / "reg-a", tmp_path / "reg-b"]
    for folder, name in zip(reg, ("first", "second")):
        assert main(["eval", "--suite", "registry", "--agent", "replay:reference", "--limit", "2", "--no-progress",
                     "--out", str(folder), "--name", name]) == 0
    capsys.readouterr()
    board = tmp_path / "board"
    assert main(["leaderboard", str(reg[0]), str(games_run), str(reg[1]), str(reg[0] / "results.json"),
                 "--out", str(board)]) == 0
    md = capsys.readouterr().out
    sections = md.split("## ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["registry", "games"]  # never ranked together
    registry_rows = [ln for ln in sections[0].splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert len(registry_rows) == 2  # the same results file twice is one run
    assert {ln.split(" | ")[1] for ln in registry_rows} == {"first", "second"}  # one agent, two runs
    games_rows = [ln for ln in sections[1].splitlines() if ln.startswith("| 1 |")]
    assert len(games_rows) == 1 and "| matches |" in sections[1]
    before = (board / "leaderboard.md").read_text()
    assert main(["leaderboard", str(reg[0]), "--out", str(board)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (board / "leaderboard.md").read_text() == before  # untouched
    assert main(["leaderboard", str(reg[0]), "--out", str(board), "--force"]) == 0
    assert (board / "leaderboard.md").read_text() != before
    assert markdown_table([_results(reg[0])]).startswith("## registry")
