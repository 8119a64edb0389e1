"""Real DeepSpeed (0.19, ``DS_ACCELERATOR=cpu``, gloo) under 2 CPU ranks, launched through
the repository's own accelerate configs (``spade_envs/selfplay/accelerate/zero2.yaml`` and
``zero3.yaml``, ``--num_processes 2 --mixed_precision no``), worker
``tests/selfplay_ds_worker.py``:

- ZeRO-2 and ZeRO-3: ``grpo_step`` over 8 rows with micro-batch 1 (k = 4 micro-batches
  per rank, the engine's accumulation count set to 4) gives the same parameters as one
  process on the full batch (AdamW, clipping at 1.0), DeepSpeed's own ``grad_norm`` and
  the advantages of ALL 8 rows on every rank;
- ZeRO-3: a gathered checkpoint, then a run that loads it continues to the same weights.

The first launch on a fresh machine JIT-builds DeepSpeed's CPU shared-memory comm op
(cached under ~/.cache/torch_extensions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engines
pytest.importorskip("deepspeed")
torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "selfplay_ds_worker.py"
CONFIGS = ROOT / "spade_envs" / "selfplay" / "accelerate"
PORT = [29610]


def launch(stage: int | None, mode: str, out: Path, timeout: int = 900) -> None:
    env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "tests"))
    if stage is None:
        cmd = [sys.executable, str(WORKER), mode, str(out)]
    else:
        PORT[0] += 1
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / f"zero{stage}.yaml"),
               "--num_processes", "2", "--mixed_precision", "no", "--main_process_port", str(PORT[0]),
               str(WORKER), mode, str(out)]
    done = subprocess.run(cmd, env=env, cwd=str(out), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds-ref")
    launch(None, "ref", out)
    return out


LR = 1e-2  # the worker's learning rate: AdamW's first step moves each weight by about LR
# AdamW's first step is g / (|g| + eps) * LR: a weight whose gradient is ~eps (1e-8) moves by
# an amount the order of the cross-rank reduction decides (seen: 1 to 14 of 3.1M weights off
# by up to 2.4e-3, a quarter of a step, on different runs). So: no weight differs by half a
# step or more, and all but 1e-5 of them agree within 1e-5 (a wrong micro-batching, a lost
# rank's rows or a wrong reduction moves far more weights than that)
ATOL, ATOL_MOST, MOST = 0.5 * LR, 1e-5, 1 - 1e-5


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and a
    total = off = 0
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=ATOL, msg=k)
        total += a[k].numel()
        off += int(((a[k] - b[k]).abs() > ATOL_MOST).sum())
    assert off <= (1 - MOST) * total, f"{off} of {total} weights differ by more than {ATOL_MOST}"


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("stage", [2, 3])
def test_micro_batched_step_on_two_ranks_equals_one_process_on_the_full_batch(stage, reference, tmp_path):
    import json

    launch(stage, "step", tmp_path)
    ref = json.loads((reference / "rank0-ref.json").read_text())
    ranks = [json.loads((tmp_path / f"rank{r}-step.json").read_text()) for r in (0, 1)]
    for info in ranks:
        assert info["world"] == 2 and "DEEPSPEED" in info["distributed_type"]
        assert info["micro_batches"] == 4 and info["engine_gas"] == 4
        assert info["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-4)  # DeepSpeed's own norm
        assert len(info["advantages"]) == 8  # both ranks' rows, not rank 0's only
        assert sorted(info["advantages"]) == pytest.approx(sorted(ref["advantages"]), abs=1e-5)
    after, ref_after = torch.load(tmp_path / "params-step.pt"), torch.load(reference / "params-ref.pt")
    _close(after, ref_after)


@pytest.mark.timeout(1800)
def test_zero3_gathered_checkpoint_then_resume_continues_to_the_same_weights(tmp_path):
    launch(3, "save", tmp_path)
    saved = torch.load(tmp_path / "params-save.pt")
    launch(3, "resume", tmp_path)
    _close(torch.load(tmp_path / "params-resume.pt"), saved)


@pytest.mark.timeout(1800)
def test_cpu_harness_round_through_the_zero2_launch_config(tmp_path):
    """``spade selfplay --preset cpu-harness`` launched with the repository's ZeRO-2 config
    on 2 CPU ranks runs a round to the end with one writer: one metrics line, one checkpoint."""
    import json

    PORT[0] += 1
    out = tmp_path / "run"
    env = dict(os.environ, DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1", SPADE_HOME=str(tmp_path / "home"))
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / "zero2.yaml"),
           "--num_processes", "2", "--mixed_precision", "no", "--main_process_port", str(PORT[0]),
           "-m", "spade_envs.cli.main", "selfplay", "--preset", "cpu-harness", "--rounds", "1", "--out", str(out),
           "--set", f"registry_path={tmp_path / 'registry.sqlite3'}", "--set", "tensorboard=false"]
    done = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].get("round") == 0
    assert len(list((out / "checkpoints").glob("round-*"))) == 1
