"""SPADE's ``check_reward_nonzero_std``: a group whose rewards are all equal trains
nothing and does not dilute the others. The gradient of a step over [equal group,
differing group] equals the gradient over the differing group alone (the loss is
normalised over the kept tokens only), and the filtered rows carry a zero loss mask."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("trl")

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]
REWARDS = [0.5, 0.5, 1.0, 0.0]


def _rollout(prompts, trainer):
    idx = [json.loads(p)["i"] for p in prompts]
    comps = [COMPLETIONS[i] for i in idx]
    return {"prompt_ids": [PROMPT] * len(idx), "completion_ids": comps, "logprobs": [[-1.0] * len(c) for c in comps],
            "reward": [REWARDS[i] for i in idx]}


def test_zero_std_group_is_filtered_without_diluting_the_rest(tmp_path):
    import torch

    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step, kept_rows

    assert kept_rows([1, 1, 1, 0], [False] * 4, 2, True) == [False, False, True, True]
    assert kept_rows([1, 1, 1, 0], [False, False, False, True], 2, False) == [True, True, True, False]
    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False))
    tr.rollout_func = _rollout
    grads = []
    tr.optimizer.step = lambda *a, **k: grads.append({n: p.grad.detach().clone() for n, p in tr.model.named_parameters()
                                                      if p.grad is not None})
    both = grpo_step(tr, [{"prompt": json.dumps({"i": i})} for i in range(4)], 2, micro_batch=4)
    batch = tr._buffered_inputs[0]
    assert both["rows_filtered"] == 2 and batch["tool_mask"][:2].sum() == 0 and batch["tool_mask"][2:].sum() > 0
    assert int(batch["num_items_in_batch"]) == len(COMPLETIONS[2]) + len(COMPLETIONS[3])
    alone = grpo_step(tr, [{"prompt": json.dumps({"i": i})} for i in (2, 3)], 2, micro_batch=4)
    assert alone["rows_filtered"] == 0
    nonzero = [k for k, g in grads[1].items() if g.abs().sum() > 0]
    assert nonzero
    for k in nonzero:
        torch.testing.assert_close(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-7)
