"""Two processes on CPU (``torchrun --nproc_per_node 2``, gloo), one job for every check
(starting torch twice is most of its cost; about a minute on 2 cores):

- the DDP gradient of a GRPO step with 2 rows per rank equals the one-process gradient
  of the 4-row batch;
- server-mode generation where the ranks call ``generate`` different numbers of times
  (episodes of different lengths), and a sharded call that leaves one rank without work,
  finishes (each rank has its own client; no generation is a collective);
- one ``cpu-harness`` round gives identical replay buffers and designer ledgers on both
  ranks, one metrics line, one checkpoint, and every registered entry once.

The job is the worker ``tests/selfplay_dist_worker.py``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytestmark = pytest.mark.timeout(400)  # one 2-process job, ~1 min; minutes when 2 cores are shared

HERE = Path(__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(HERE), MASTER_ADDR="127.0.0.1",
               SPADE_HOME=str(out / "home"), TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), str(HERE / "selfplay_dist_worker.py"), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=360)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    return out, ranks


def test_two_rank_gradient_equals_the_full_batch_gradient(job, tmp_path):
    import torch

    from selfplay_dist_worker import scripted
    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step

    out, ranks = job
    assert [r["grads"]["world"] for r in ranks] == [2, 2]
    g0, g1 = (torch.load(out / f"grads{r}.pt") for r in (0, 1))
    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False, learning_rate=1e-2))
    tr.rollout_func = scripted
    full = {}
    tr.optimizer.step = lambda *a, **k: full.update({n: p.grad.detach().clone() for n, p in tr.model.named_parameters()
                                                     if p.grad is not None})
    grpo_step(tr, [{"prompt": json.dumps({"i": i})} for i in range(4)], 2, micro_batch=4, max_grad_norm=0.0)
    nonzero = [k for k, g in full.items() if g.abs().sum() > 0]
    assert nonzero and set(g0) == set(full)
    for k in nonzero:
        torch.testing.assert_close(g0[k], full[k], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(g1[k], g0[k])  # all-reduced: the same on both ranks


def test_server_generation_with_unequal_turns_finishes(job):
    _, ranks = job
    assert [r["server"]["calls"] for r in ranks] == [1 + 1, 3]  # rank 1 got no item of the sharded call
    assert all(r["server"]["sharded_rows"] == 1 for r in ranks)


def test_harness_round_identical_on_both_ranks_with_one_writer(job):
    out, ranks = job
    a, b = ranks[0]["harness"], ranks[1]["harness"]
    assert a["round"] == b["round"] == 1 and a["global_step"] == b["global_step"] >= 1
    assert a["buffer"] == b["buffer"] and a["ledger"] == b["ledger"]
    assert a["generations"] == b["generations"] and a["registered"] == b["registered"]
    lines = (out / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["round"] == 0
    assert [p.name for p in (out / "run" / "checkpoints").iterdir()] == ["round-00000"]
    from spade_envs.registry.store import Registry

    reg = Registry.open(str(out / "registry.sqlite3"))
    new = [r for r in reg.list() if r.generation > 0]
    assert len(new) == a["registered"] >= 1
    assert len({r.source for r in new}) == len(new), "an entry was registered twice"
