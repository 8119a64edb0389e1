"""Ctrl-C loses nothing (issue 27): ``spade selfplay`` checkpoints every round; SIGINT
ends it with one line naming the last checkpoint and the metrics file (exit 130), and
``--resume`` continues from that checkpoint to the requested rounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytestmark = pytest.mark.timeout(400)  # two short CLI runs of the tiny model

ARGS = ["--preset", "cpu-tiny", "--set", "tensorboard=false", "--set", "plot=false", "--set", "envs_per_round=1",
        "--set", "max_turns=1", "--set", "agent_max_new_tokens=4", "--set", "designer_prompts=0",
        "--set", "seed_games=false"]


def _spade(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spade_envs.cli.main", "selfplay", *ARGS, "--out", str(out), *extra]


def test_ctrl_c_names_the_checkpoint_and_resume_continues(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(_spade(out, "--rounds", "50"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = out / "checkpoints" / "round-00000" / "state.json"
    deadline = time.time() + 300
    while not first.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.5)
    assert first.exists(), proc.communicate()[1][-3000:] if proc.poll() is not None else "no checkpoint in time"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert "interrupted" in last and "checkpoints/round-0000" in last and "--resume" in last
    assert "metrics.jsonl" in last and "Traceback" not in err
    done = len((out / "metrics.jsonl").read_text().splitlines())
    res = subprocess.run(_spade(out, "--rounds", str(done + 1), "--resume", "--json"), env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["rounds"] == done + 1 and summary["rounds_this_run"] >= 1
    rounds = [json.loads(x)["round"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert rounds == list(range(done + 1))


class _FakeTrainer:
    """Rounds without a model: round 1 is interrupted when ``stop_at`` says so."""

    stop_at: int | None = None

    def __init__(self, config, **kwargs):
        from types import SimpleNamespace

        self.round, self.acc, self.generations = 0, None, []
        self.agent = SimpleNamespace(close=lambda: None)
        self.grpo = SimpleNamespace(model_wrapped=None, optimizer=None)
        self.tokenizer = self.rng = None
        self.registry = SimpleNamespace(path="reg")

    def run_round(self):
        if self.round == self.stop_at:
            raise KeyboardInterrupt
        self.round += 1
        return {"round": self.round - 1}

    def state_dict(self):
        return {}


def _fake_save(out, round_no, **kw):
    folder = Path(out) / "checkpoints" / f"round-{round_no:05d}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state.json").write_text("{}")
    return folder


def test_interrupt_names_the_last_checkpoint_and_resume_without_one_starts_over(tmp_path, monkeypatch):
    from spade_envs.selfplay import build_config, checkpoint, loop, trainer as trainer_mod

    monkeypatch.setattr(trainer_mod, "SelfPlayTrainer", _FakeTrainer)
    monkeypatch.setattr(checkpoint, "save", _fake_save)
    cfg = build_config("cpu-tiny", rounds=5, out_dir=str(tmp_path / "a"), plot=False, tensorboard=False)
    monkeypatch.setattr(_FakeTrainer, "stop_at", 2)
    with pytest.raises(loop.SelfPlayInterrupted) as info:
        loop.run(cfg)
    msg = str(info.value)
    assert "round-00001" in msg and "after round 1" in msg and "metrics.jsonl" in msg and "--resume" in msg
    monkeypatch.setattr(_FakeTrainer, "stop_at", 0)
    with pytest.raises(loop.SelfPlayInterrupted, match="no checkpoint yet"):
        loop.run(cfg.replace(out_dir=str(tmp_path / "b")))
    monkeypatch.setattr(_FakeTrainer, "stop_at", None)
    out = loop.run(cfg.replace(out_dir=str(tmp_path / "b"), rounds=2), resume=True)
    assert out["rounds_this_run"] == 2 and "no checkpoint" in out["resume_note"]
