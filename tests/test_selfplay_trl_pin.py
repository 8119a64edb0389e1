"""Pins the TRL 1.16 behaviour :mod:`spade_envs.selfplay.trl_bridge` relies on, and the
roles' learning signal, on the tiny random Llama (seconds on CPU):

- micro-batching: one step over 4 rows in 2 micro-batches gives the SAME gradient as
  in one (TRL's buffered split + our accumulation, no double loss scaling);
- the agent role: returns scripted to differ within a group give non-zero advantages
  and move the weights; equal returns give zero advantages and leave them untouched;
- the designer role (delayed rows): its stored sampling logprobs become TRL's
  ``old_per_token_logps``; differing rewards move the weights, equal ones do not;
- Prefix Sliding: scoring under ``[None, W]`` runs end to end through TRL and changes
  the logprobs of tokens beyond the window (the 2-D mask TRL builds labels from stays 2-D).
"""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from spade_envs.selfplay import build_config  # noqa: E402
from spade_envs.selfplay.rewards import group_advantages  # noqa: E402

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]


def _trainer(tmp_path, **kw):
    from spade_envs.selfplay import grpo

    grpo.seed_everything(0)
    cfg = build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False, learning_rate=1e-2, **kw)
    return grpo.build_trainer(cfg)


class _Scripted:
    """A ``rollout_func`` returning fixed rows with the given rewards (and logprobs)."""

    def __init__(self, rewards, logprobs=None):
        self.rewards, self.logprobs = list(rewards), logprobs

    def __call__(self, prompts, trainer):
        comps = [COMPLETIONS[i % len(COMPLETIONS)] for i in range(len(prompts))]
        lps = self.logprobs or [[-1.0] * len(c) for c in comps]
        return {"prompt_ids": [PROMPT] * len(prompts), "completion_ids": comps, "logprobs": lps,
                "reward": self.rewards[:len(prompts)]}


def _params(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _moved(before, model):
    return [k for k, v in model.named_parameters() if not (before[k] == v.detach()).all()]


def _grads_of_step(tr, rows, micro):
    from spade_envs.selfplay.trl_bridge import grpo_step

    seen = {}
    real_step = tr.optimizer.step

    def capture(*a, **k):
        for name, p in tr.model.named_parameters():
            seen[name] = None if p.grad is None else p.grad.detach().clone()
        return None  # do not change the weights: both runs start from the same point

    tr.optimizer.step = capture
    try:
        out = grpo_step(tr, rows, 2, micro_batch=micro, max_grad_norm=0.0)
    finally:
        tr.optimizer.step = real_step
    return seen, out


def test_micro_batches_accumulate_to_the_full_batch_gradient(tmp_path):
    import torch

    tr = _trainer(tmp_path)
    tr.rollout_func = _Scripted([1.0, 0.0, 0.0, 1.0])
    rows = [{"prompt": "{}"} for _ in range(4)]
    full, one = _grads_of_step(tr, rows, micro=4)
    split, two = _grads_of_step(tr, rows, micro=2)
    assert one["micro_batches"] == 1 and two["micro_batches"] == 2
    nonzero = [k for k, g in full.items() if g is not None and g.abs().sum() > 0]
    assert nonzero, "the scripted returns differ within groups: the gradient must not be zero"
    for k in nonzero:
        torch.testing.assert_close(split[k], full[k], rtol=1e-4, atol=1e-6)


def test_gradient_checkpointing_is_switched_on_and_keeps_the_gradient(tmp_path):
    """Trainer turns checkpointing on only inside ``train()``, which self-play never calls:
    ``build_trainer`` must do it (else long designer rows keep every layer's activations)."""
    import torch

    plain, ckpt = _trainer(tmp_path / "a"), _trainer(tmp_path / "b", gradient_checkpointing=True)
    assert not plain.model.is_gradient_checkpointing and ckpt.model.is_gradient_checkpointing
    rows = [{"prompt": "{}"} for _ in range(4)]
    grads = []
    for tr in (plain, ckpt):
        tr.rollout_func = _Scripted([1.0, 0.0, 0.0, 1.0])
        grads.append(_grads_of_step(tr, rows, micro=2)[0])
    nonzero = [k for k, g in grads[0].items() if g is not None and g.abs().sum() > 0]
    assert nonzero
    for k in nonzero:
        torch.testing.assert_close(grads[1][k], grads[0][k], rtol=1e-4, atol=1e-6)


def test_agent_role_moves_weights_only_with_a_learning_signal(tmp_path):
    tr = _trainer(tmp_path)
    from spade_envs.selfplay.trl_bridge import grpo_step

    rows = [{"prompt": "{}"} for _ in range(4)]
    tr.rollout_func = _Scripted([0.5, 0.5, 1.0, 1.0])  # equal within each group: nothing to learn
    before = _params(tr.model)
    step = grpo_step(tr, rows, 2, micro_batch=2, max_grad_norm=1.0)
    assert step["advantages"] == pytest.approx([0.0] * 4, abs=1e-6)
    assert not _moved(before, tr.model), "zero advantages must leave the weights as they were"
    tr.rollout_func = _Scripted([1.0, 0.0, 0.0, 1.0])
    step = grpo_step(tr, rows, 2, micro_batch=2, max_grad_norm=1.0)
    assert sorted(step["advantages"]) == pytest.approx(sorted(group_advantages([1.0, 0.0, 0.0, 1.0], 2)), abs=1e-5)
    assert _moved(before, tr.model), "differing returns within a group must move the weights"


def test_designer_rows_train_off_policy_against_their_sampling_logprobs(tmp_path):
    import torch

    tr = _trainer(tmp_path)
    from spade_envs.selfplay.trl_bridge import grpo_step, teacher_forced_logps

    comps = COMPLETIONS[:2]
    behaviour = [[x - 0.05 for x in teacher_forced_logps(tr, PROMPT, c)] for c in comps]
    rows = [{"prompt": "{}"} for _ in range(2)]
    tr.rollout_func = _Scripted([0.3, 0.3], logprobs=behaviour)
    before = _params(tr.model)
    grpo_step(tr, rows, 2, micro_batch=2, behaviour=True)
    assert not _moved(before, tr.model)
    old = tr._buffered_inputs[0]["old_per_token_logps"]
    got = sorted([round(float(x), 5) for x in row if float(x) != 0.0] for row in old.tolist())
    assert got == sorted([round(x, 5) for x in row] for row in behaviour)  # TRL was given the behaviour policy
    tr.rollout_func = _Scripted([1.0, -1.0], logprobs=behaviour)
    step = grpo_step(tr, rows, 2, micro_batch=1, behaviour=True)
    assert step["micro_batches"] == 2 and _moved(before, tr.model)
    # the ratio pi_now / pi_then is exp(0.05) per token here, not 1: it is an off-policy step
    assert torch.isfinite(torch.tensor(step["loss"]))


def test_prefix_sliding_scores_through_trl_end_to_end(tmp_path):
    from spade_envs.selfplay.trl_bridge import grpo_step, teacher_forced_logps

    plain = _trainer(tmp_path / "plain")
    sliding = _trainer(tmp_path / "sliding", prefix_sliding=[None, 2])
    long = [11, 12, 13, 14, 15, 16, 2]
    a = teacher_forced_logps(plain, PROMPT, long)
    b = teacher_forced_logps(sliding, PROMPT, long)
    assert a[:3] == pytest.approx(b[:3], abs=1e-5)  # within the window nothing changes
    assert any(abs(x - y) > 1e-4 for x, y in zip(a[3:], b[3:]))  # beyond it the middle is hidden
    sliding.rollout_func = _Scripted([1.0, 0.0])
    step = grpo_step(sliding, [{"prompt": "{}"}] * 2, 2, micro_batch=2)
    assert step["advantages"] and any(abs(x) > 0 for x in step["advantages"])
