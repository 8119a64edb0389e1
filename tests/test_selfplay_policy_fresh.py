"""The self-play policy backend samples from the weights the trainer just stepped.

transformers' default optimizer (``adamw_torch_fused``) writes parameters in place
without moving their version counter; generation on packed oneDNN weights
(``agents/packed_linear.py``) must still see every step. On the tiny random Llama: a
GRPO-style optimizer step through the trainer's own optimizer, then the policy backend's
reported sampling logprobs must equal the teacher-forced ones under the NEW weights
(with the initial weights' packed copies served, they are those of the old ones)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")


def test_generation_after_an_optimizer_step_uses_the_new_weights(tmp_path):
    import torch

    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.designer_arm import token_logps
    from spade_envs.selfplay.policy import policy_backend

    grpo.seed_everything(0)
    cfg = build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False, learning_rate=5e-2)
    tr = grpo.build_trainer(cfg)
    tr.create_optimizer()
    backend = policy_backend(tr, cfg)
    prompts = [[1, 5, 9, 13, 17], [1, 5, 9, 13, 17], [1, 8, 7, 6]]
    backend.generate(prompts, max_new_tokens=4, temperature=1.0, seed=0)  # packs the initial weights
    model = tr.accelerator.unwrap_model(tr.model)
    old = {n: p.detach().clone() for n, p in model.named_parameters()}
    model.train()
    model(input_ids=torch.tensor([[1, 5, 9, 13, 17, 21]])).logits.square().mean().backward()
    tr.optimizer.step()
    tr.optimizer.zero_grad(set_to_none=True)
    assert any(not torch.equal(old[n], p) for n, p in model.named_parameters())
    gens = backend.generate(prompts, max_new_tokens=6, temperature=1.0, seed=1)
    for prompt, gen in zip(prompts, gens):
        now = token_logps(model, prompt, gen.token_ids, 1.0)
        assert max(abs(a - b) for a, b in zip(gen.logprobs, now)) < 1e-3
