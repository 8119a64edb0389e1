"""Multi-GPU logic checked without GPUs: the ZeRO-3 accumulation of ``trl_bridge.grpo_step``
under a DeepSpeed stand-in, gathered checkpoints, and the device each rank loads onto
(DeepSpeed itself does not run on this CPU-only set-up).

accelerate runs DeepSpeed's ``engine.backward`` and, when ``sync_gradients`` is true,
``engine.step()`` inside ``accelerator.backward`` (``DeepSpeedEngineWrapper.backward``):
the optimizer steps in the backward of every micro-batch on which accelerate says
"sync". A step over k micro-batches must therefore say so on the LAST one only (as
``Trainer._inner_training_loop`` does), never use ``no_sync`` (a no-op at stage >= 2),
and leave clipping and the optimizer step to the engine. The stand-in engine records
exactly what accelerate's wrapper would do."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]


class _Engine:
    """What ``accelerate.utils.deepspeed.DeepSpeedEngineWrapper.backward`` does, recorded."""

    def __init__(self):
        self.boundaries, self.steps = [], 0

    def backward(self, loss, sync_gradients=True, **kw):
        self.boundaries.append(bool(sync_gradients))  # engine.set_gradient_accumulation_boundary
        loss.backward()
        if sync_gradients:
            self.steps += 1  # engine.step(): clip, optimizer step, zero grad


def test_deepspeed_steps_once_per_grpo_step_on_the_last_micro_batch(tmp_path, monkeypatch):
    from accelerate import Accelerator
    from accelerate.utils import DistributedType

    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step

    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False))
    tr.rollout_func = lambda prompts, trainer: {
        "prompt_ids": [PROMPT] * len(prompts), "completion_ids": COMPLETIONS[:len(prompts)],
        "logprobs": [[-1.0] * len(c) for c in COMPLETIONS[:len(prompts)]], "reward": [1.0, 0.0, 0.0, 1.0]}
    engine = _Engine()
    acc = tr.accelerator
    monkeypatch.setattr(Accelerator, "distributed_type", property(lambda self: DistributedType.DEEPSPEED))
    monkeypatch.setattr(acc, "backward", lambda loss, **kw: engine.backward(loss, sync_gradients=acc.sync_gradients))
    no_sync, clipped, stepped = [], [], []
    monkeypatch.setattr(acc, "no_sync", lambda model: no_sync.append(1))
    monkeypatch.setattr(acc, "clip_grad_norm_", lambda *a, **k: clipped.append(1))
    real_step = tr.optimizer.step
    monkeypatch.setattr(tr.optimizer, "step", lambda *a, **k: (stepped.append(1), real_step()))
    model = tr.model_wrapped  # the engine's accumulation count and norm, as DeepSpeedEngine has them
    gas = {"n": 512}
    model.gradient_accumulation_steps = lambda: gas["n"]
    model.train_micro_batch_size_per_gpu = lambda: 1
    model.dp_world_size = 1
    model.set_train_batch_size = lambda n: gas.update(n=n)
    model.get_global_grad_norm = lambda: 0.5
    res = grpo_step(tr, [{"prompt": "{}"} for _ in range(4)], 2, micro_batch=1, max_grad_norm=1.0)
    assert res["micro_batches"] == 4 and gas["n"] == 4 and res["grad_norm"] == 0.5
    assert engine.boundaries == [False, False, False, True] and engine.steps == 1
    assert not no_sync and not clipped, "DeepSpeed clips and accumulates itself; no_sync is a no-op at stage 3"
    assert len(stepped) == 1 and acc.sync_gradients  # the wrapper's step (a no-op under DeepSpeed); state restored


def test_checkpoint_gathers_on_every_rank_and_writes_on_the_main_one(tmp_path):
    """``checkpoint.save`` with an accelerator: ``get_state_dict`` (a collective under
    ZeRO-3) and ``engine.save_checkpoint`` on every rank, files from the main one only."""
    import random

    import torch

    from spade_envs.selfplay import checkpoint

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(2, 2)
            self.saved = []

        def save_checkpoint(self, path):
            self.saved.append(path)

        def save_pretrained(self, path, state_dict=None):
            path.mkdir(parents=True, exist_ok=True)
            torch.save(state_dict, path / "weights.pt")

    class Acc:
        distributed_type = "DEEPSPEED"
        num_processes = 2

        def __init__(self, main):
            self.is_main_process, self.gathered = main, 0

        def get_state_dict(self, model):
            self.gathered += 1
            return {k: v.clone() for k, v in model.state_dict().items()}

        def unwrap_model(self, model):
            return model

        def wait_for_everyone(self):
            pass

    from accelerate.utils import DistributedType

    Acc.distributed_type = DistributedType.DEEPSPEED
    tok = type("Tok", (), {"save_pretrained": lambda self, p: (p / "tok.json").write_text("{}")})()
    opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
    rng = random.Random(0)
    other, main = Acc(False), Acc(True)
    m1, m0 = Model(), Model()
    checkpoint.save(tmp_path, 3, model=m1, tokenizer=tok, optimizer=opt, rng=rng, state={}, accelerator=other)
    assert other.gathered == 1 and m1.saved and not (tmp_path / "checkpoints" / "round-00003").exists()
    final = checkpoint.save(tmp_path, 3, model=m0, tokenizer=tok, optimizer=opt, rng=rng, state={"x": 1},
                            accelerator=main)
    assert main.gathered == 1 and m0.saved
    assert (final / "model" / "weights.pt").is_file() and not (final / "optimizer.pt").exists()
    assert checkpoint.latest(tmp_path) == final


def test_model_loads_on_this_ranks_device_after_the_config(tmp_path, monkeypatch):
    """The GRPOConfig (accelerate's PartialState: LOCAL_RANK -> cuda:<local rank>; ZeRO-3
    registration) exists BEFORE the model loads, and the model goes to ``args.device``,
    not to plain "cuda" (GPU 0 on every rank)."""
    import contextlib

    from spade_envs.selfplay import build_config, grpo

    order = []

    class Args:
        device = "cuda:3"

        def main_process_first(self, **kw):
            order.append("first")
            return contextlib.nullcontext()

    def load(config, device):
        order.append(("load", device))
        raise RuntimeError("stop here")

    monkeypatch.setattr(grpo, "grpo_args", lambda config: order.append("args") or Args())
    monkeypatch.setattr(grpo, "load_policy", load)
    with pytest.raises(RuntimeError, match="stop here"):
        grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path)))
    assert order == ["args", "first", ("load", "cuda:3")]
