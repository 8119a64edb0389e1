"""Mixed precision that learns: with ``dtype="bfloat16"`` the trainer keeps float32 master
weights and runs the forward under bf16 autocast (accelerate's mixed precision), so an
AdamW step at SPADE's lr 1e-6 moves most weights. On bf16 weights (the old behaviour)
such steps round away: ~2 % of entries move."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]


def _scripted(prompts, trainer):
    comps = [COMPLETIONS[i % len(COMPLETIONS)] for i in range(len(prompts))]
    return {"prompt_ids": [PROMPT] * len(prompts), "completion_ids": comps,
            "logprobs": [[-1.0] * len(c) for c in comps], "reward": [1.0, 0.0, 0.0, 1.0][:len(prompts)]}


def test_bf16_training_keeps_fp32_masters_and_moves_most_weights_at_lr_1e_6(tmp_path):
    import torch

    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step

    grpo.seed_everything(0)
    cfg = build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False, dtype="bfloat16", learning_rate=1e-6,
                       max_grad_norm=0.0)
    tr = grpo.build_trainer(cfg)
    assert tr.args.bf16 and tr.accelerator.mixed_precision == "bf16"
    assert {p.dtype for p in tr.model.parameters()} == {torch.float32}, "master weights must stay float32"
    before = {k: v.detach().clone() for k, v in tr.model.named_parameters()}
    seen = {}
    mlp = tr.accelerator.unwrap_model(tr.model).model.layers[0].mlp
    hook = mlp.register_forward_hook(lambda m, a, out: seen.update(compute=out.dtype))
    tr.rollout_func = _scripted
    for _ in range(3):
        grpo_step(tr, [{"prompt": "{}"} for _ in range(4)], 2, micro_batch=4)
    hook.remove()
    assert seen["compute"] == torch.bfloat16, "the forward must run under bf16 autocast"
    total = moved = 0
    for k, v in tr.model.named_parameters():
        total += v.numel()
        moved += int((v.detach() != before[k]).sum())
    assert moved / total > 0.5, f"only {moved / total:.1%} of the weights moved at lr 1e-6"
