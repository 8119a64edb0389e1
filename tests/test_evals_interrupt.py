"""``spade eval`` interrupted (issue 27 point 10, DESIGN.md section 9): finished entries are
written as they finish, Ctrl-C says where they are and exits cleanly (status 130, no
traceback), and ``--resume`` completes the run without playing finished entries again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spade_envs.evals.partial_results import FILENAME, PartialResults
from spade_envs.errors import SpadeError

SPADE = [sys.executable, "-m", "spade_envs.cli.main"]


def _lines(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        return 0


def test_ctrl_c_keeps_finished_entries_and_resume_completes(tmp_path):
    out = tmp_path / "run"
    args = [*SPADE, "eval", "--suite", "registry", "--agent", "replay:reference", "--limit", "10", "--seeds", "8",
            "--out", str(out), "--no-progress", "--json"]
    env = {**os.environ, "SPADE_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    partial = out / FILENAME
    deadline = time.monotonic() + 120
    while _lines(partial) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and str(partial) in stderr and "--resume" in stderr
    assert stdout == "" and not (out / "results.json").exists()
    header, rows = PartialResults(out).read()
    assert header["suite"] == "registry" and 3 <= len(rows) < 80

    done = subprocess.run([*args, "--resume"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results["entries"]) == 80 and results["resumed_entries"] == len(rows)
    keys = [f"{e['id']}#{e['seed']}" for e in results["entries"]]
    assert len(set(keys)) == 80
    for key, row in rows.items():  # the finished rows are kept as they were, not played again
        assert results["entries"][keys.index(key)] == json.loads(json.dumps(row))
    assert results["summary"]["success"]["n"] == 80 and not partial.exists()


def test_partial_file_rules(tmp_path):
    run = {"suite": "registry", "agent": "replay:reference", "options": {"seeds": 1}}
    p = PartialResults(tmp_path)
    p.start(run)
    p.add("a#0", {"id": "a", "passed": True})
    p.close()
    with p.path.open("a", encoding="utf-8") as f:
        f.write('{"key": "b#0", "row": {"id"')  # cut short by the interruption
    with pytest.raises(SpadeError, match="--resume"):
        PartialResults(tmp_path).start(run)  # finished work is never discarded silently
    with pytest.raises(SpadeError, match="other options"):
        PartialResults(tmp_path).resume({**run, "options": {"seeds": 2}})
    again = PartialResults(tmp_path)
    assert again.resume(run) == {"a#0": {"id": "a", "passed": True}}
    again.add("b#0", {"id": "b", "passed": False})
    again.close()
    assert set(PartialResults(tmp_path).read()[1]) == {"a#0", "b#0"}
    with pytest.raises(SpadeError, match="nothing to resume"):
        PartialResults(tmp_path / "empty").resume(run)


def test_games_suite_hands_over_finished_matches_and_skips_them_on_resume():
    from spade_envs.evals.games import run_games

    seen: dict[str, dict] = {}
    rows, summary, _ = run_games("replay:reference", limit=2, episodes=2, on_row=lambda k, r: seen.setdefault(k, r))
    assert len(seen) == len(rows) == summary["matches"]
    half = dict(list(seen.items())[: len(seen) // 2])
    replayed: list[str] = []
    again, summary2, _ = run_games("replay:reference", limit=2, episodes=2, finished=half,
                                   on_row=lambda k, r: replayed.append(k))
    assert sorted(replayed) == sorted(set(seen) - set(half))  # finished matches are not played again
    assert again == rows and summary2["overall"] == summary["overall"]
