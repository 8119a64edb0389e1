"""``spade eval --suite reasoning-gym``: the bar moves per scored episode (batches of
``BATCH_SIZE``), ``--limit`` counts tasks, Ctrl-C keeps the finished episodes and
``--resume`` completes the run, like the registry and games suites."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("reasoning_gym")

from typer.testing import CliRunner  # noqa: E402

from spade_envs.cli.main import app  # noqa: E402
from spade_envs.evals import reasoning_gym as suite  # noqa: E402
from spade_envs.evals import reasoning_gym_tasks as rgt  # noqa: E402
from spade_envs.evals.partial_results import FILENAME, PartialResults  # noqa: E402

TASKS = ["gcd", "word_ladder", "tower_of_hanoi"]


class _Interrupting:
    """The reference replay agent, with Ctrl-C arriving during its ``after``-th play call."""

    def __init__(self, after: int | None) -> None:
        from spade_envs.agents import load_agent

        self.inner, self.after, self.calls, self.sizes = load_agent("replay:reference", trust_remote_code=True), after, 0, []

    def play(self, tasks, progress=False):  # noqa: ANN001
        self.calls += 1
        self.sizes.append(len(tasks))
        if self.after is not None and self.calls >= self.after:
            raise KeyboardInterrupt
        return self.inner.play(tasks, progress=progress)

    def close(self) -> None:
        pass


def test_progress_moves_per_episode_in_small_batches():
    tasks = rgt.select_tasks("hard", TASKS)
    ticks: list[int] = []
    agent = _Interrupting(None)
    rows, _ = suite.run_reasoning_gym(agent, tasks, episodes=8, on_scored=ticks.append)
    assert len(rows) == 24 and ticks == [1] * 24
    assert max(agent.sizes) <= suite.BATCH_SIZE  # the bar moves at least every BATCH_SIZE episodes


def test_ctrl_c_keeps_finished_episodes_and_resume_completes(tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = ["eval", "--suite", "reasoning-gym", "--agent", "replay:reference", "--task", TASKS[0], "--task", TASKS[1],
            "--task", TASKS[2], "--limit", "2", "--episodes", "8", "--out", str(out), "--no-progress", "--json"]
    agent = _Interrupting(2)
    monkeypatch.setattr(suite, "load_rg_agent", lambda spec, **kw: agent)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    assert "--resume" in result.output and "Traceback" not in result.output
    header, rows = PartialResults(out).read()
    assert header["suite"] == "reasoning-gym" and len(rows) == suite.BATCH_SIZE  # the first batch was kept

    agent2 = _Interrupting(None)
    monkeypatch.setattr(suite, "load_rg_agent", lambda spec, **kw: agent2)
    done = CliRunner().invoke(app, [*args, "--resume"])
    assert done.exit_code == 0, done.output
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results["entries"]) == 16  # --limit 2 = two TASKS x 8 episodes
    assert sum(agent2.sizes) == 16 - len(rows)  # finished episodes were not played again
    assert results["resumed_entries"] == len(rows) and not (out / FILENAME).exists()
