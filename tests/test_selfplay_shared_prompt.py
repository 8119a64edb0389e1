"""Shared-prompt scoring (:mod:`spade_envs.selfplay.shared_prompt`) gives TRL's figures.

On the tiny random Llama, a batch of two distinct prompts (one left-padded) interleaved
over six rows of right-padded completions is scored twice through
``SelfPlayGRPOTrainer._get_per_token_logps_and_entropies``: with the shared path and
with TRL's own (``spade_share_prompts = False``). Logprobs, entropies and the gradient
of the scored logprobs must agree, the shared path must really run (a spy counts its
calls: one prompt forward per distinct prompt), chunking by ``batch_size`` must agree
too, and a whole GRPO step must give the same gradient either way. Gradient
checkpointing (whose layers drop the cache in training) must fall back to TRL's path.
"""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from spade_envs.selfplay import build_config  # noqa: E402

PAD = 0
PROMPTS = [[5, 6, 7, 8, 9], [15, 16, 17]]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2], [51, 52, 53, 2], [61, 62, 2]]


def _trainer(tmp_path, **kw):
    from spade_envs.selfplay import grpo

    grpo.seed_everything(0)
    cfg = build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False, learning_rate=1e-2, **kw)
    return grpo.build_trainer(cfg)


def _batch():
    """Rows A, B, A, B, A, B: prompts left-padded, completions right-padded, as TRL lays them."""
    import torch

    width_p = max(map(len, PROMPTS))
    width_c = max(map(len, COMPLETIONS))
    ids, mask = [], []
    for i, comp in enumerate(COMPLETIONS):
        p = PROMPTS[i % 2]
        ids.append([PAD] * (width_p - len(p)) + p + comp + [PAD] * (width_c - len(comp)))
        mask.append([0] * (width_p - len(p)) + [1] * len(p) + [1] * len(comp) + [0] * (width_c - len(comp)))
    return torch.tensor(ids), torch.tensor(mask), width_c


def _score(tr, share, **kw):
    import torch

    ids, mask, keep = _batch()
    tr.spade_share_prompts = share
    tr.model.zero_grad(set_to_none=True)
    logps, ent, _ = tr._get_per_token_logps_and_entropies(tr.model, ids, mask, keep, compute_entropy=True, **kw)
    cmask = mask[:, -keep:].float()
    (logps * cmask * torch.linspace(0.5, 1.5, keep)).sum().backward()
    grads = {n: p.grad.detach().clone() for n, p in tr.model.named_parameters() if p.grad is not None}
    return logps.detach() * cmask, ent.detach() * cmask, grads


def _spy(monkeypatch):
    from spade_envs.selfplay import shared_prompt

    calls = []
    real = shared_prompt.shared_prompt_logps

    def spy(model, ids, mask, keep, split, **kw):
        calls.append(int(split.first.numel()))
        return real(model, ids, mask, keep, split, **kw)

    monkeypatch.setattr(shared_prompt, "shared_prompt_logps", spy)
    return calls


def test_shared_prompt_scores_equal_trls_forward(tmp_path, monkeypatch):
    import torch

    tr = _trainer(tmp_path)
    tr.model.train()
    calls = _spy(monkeypatch)
    ref_lp, ref_ent, ref_g = _score(tr, False)
    assert calls == []
    lp, ent, g = _score(tr, True)
    assert calls == [2], "two distinct prompts: the shared path runs once, with two prompt forwards"
    torch.testing.assert_close(lp, ref_lp, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-4, atol=1e-5)
    assert ref_g and set(g) == set(ref_g)
    for name in ref_g:
        torch.testing.assert_close(g[name], ref_g[name], rtol=1e-3, atol=1e-5)


def test_chunks_of_batch_size_are_planned_each(tmp_path, monkeypatch):
    import torch

    tr = _trainer(tmp_path)
    calls = _spy(monkeypatch)
    ref_lp, _, _ = _score(tr, False, batch_size=4)
    lp, _, _ = _score(tr, True, batch_size=4)
    assert calls == [2], "rows 0-3 share two prompts; rows 4-5 are distinct and go TRL's way"
    torch.testing.assert_close(lp, ref_lp, rtol=1e-4, atol=1e-5)


def test_a_grpo_step_has_the_same_gradient_either_way(tmp_path, monkeypatch):
    import torch

    from test_selfplay_trl_pin import _grads_of_step, _Scripted

    tr = _trainer(tmp_path)
    calls = _spy(monkeypatch)
    rows = [{"prompt": "{}"} for _ in range(4)]
    grads = []
    for share in (False, True):
        tr.spade_share_prompts = share
        tr.rollout_func = _Scripted([1.0, 0.0, 0.0, 1.0])
        grads.append(_grads_of_step(tr, rows, micro=4)[0])
    assert calls, "the scripted rows share one prompt: the step must take the shared path"
    nonzero = [k for k, g in grads[0].items() if g is not None and g.abs().sum() > 0]
    assert nonzero
    for k in nonzero:
        torch.testing.assert_close(grads[1][k], grads[0][k], rtol=1e-3, atol=1e-6)


def test_gradient_checkpointing_falls_back_to_trls_forward(tmp_path, monkeypatch):
    tr = _trainer(tmp_path, gradient_checkpointing=True)
    tr.model.train()
    calls = _spy(monkeypatch)
    _score(tr, True)
    assert calls == [], "checkpointed layers drop past_key_values in training: TRL's path must run"
    tr.model.eval()
    _score(tr, True)
    assert calls == [2], "in eval mode the cache is kept: the shared path applies"
