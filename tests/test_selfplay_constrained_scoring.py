"""Schema-constrained completions are scored under their decoding mask
(:mod:`spade_envs.selfplay.constrained_scoring`).

On the tiny random Llama (the real SmolLM2 tokenizer), a completion is walked through the
lm-format-enforcer constraint of a small params schema and registered; the trainer's
scoring then gives, for that row, the temperature-scaled log-softmax over the allowed
set (checked against a hand computation from the full logits), exactly 0 at forced
positions (one allowed token), and no gradient from them; unregistered rows of the same
batch keep TRL's figures; the shared-prompt and the per-row forwards agree.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("trl")

SCHEMA = {"type": "object", "properties": {"difficulty": {"enum": [1, 2, 3, 4]}, "size": {"enum": [3, 5, 8]}},
          "required": ["difficulty", "size"], "additionalProperties": False}


def _trainer(tmp_path):
    from spade_envs.selfplay import build_config, grpo

    grpo.seed_everything(0)
    return grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path), tensorboard=False))


def _completion(tok, seed):
    from spade_envs.agents.constrained import JsonSchemaConstraint

    c, rng, out = JsonSchemaConstraint(tok, SCHEMA), random.Random(seed), []
    while len(out) < 60:
        allowed = c.allowed(out)
        if not allowed:
            break
        out.append(rng.choice(allowed))
        if out[-1] == tok.eos_token_id:
            break
    assert out[-1] == tok.eos_token_id
    return out


def _batch(rows):
    import torch

    wp, wc = max(len(p) for p, _ in rows), max(len(c) for _, c in rows)
    ids = [[0] * (wp - len(p)) + p + c + [0] * (wc - len(c)) for p, c in rows]
    mask = [[0] * (wp - len(p)) + [1] * (len(p) + len(c)) + [0] * (wc - len(c)) for p, c in rows]
    return torch.tensor(ids), torch.tensor(mask), wc


def _setup(tmp_path):
    from spade_envs.selfplay.constrained_scoring import TokenConstraints

    tr = _trainer(tmp_path)
    tok = tr.processing_class
    prompts = [[5, 6, 7, 8, 9], [15, 16, 17]]
    comps = [_completion(tok, s) for s in range(4)]
    rows = [(prompts[i % 2], comps[i]) for i in range(4)]
    table = TokenConstraints(tok)
    for p, c in rows[:3]:  # the last row stays unregistered
        table.add(p, c, SCHEMA)
    tr.spade_constraints = table
    return tr, table, rows


def test_registered_rows_score_the_renormalised_masked_distribution(tmp_path):
    import torch

    tr, table, rows = _setup(tmp_path)
    ids, mask, keep = _batch(rows)
    tr.model.eval()
    got = {}
    for share in (True, False):
        tr.spade_share_prompts = share
        with torch.no_grad():
            got[share] = tr._get_per_token_logps_and_entropies(tr.model, ids, mask, keep, compute_entropy=True)[:2]
    assert torch.allclose(got[True][0], got[False][0], atol=1e-5)
    assert torch.allclose(got[True][1], got[False][1], atol=1e-5)
    logps, ent = got[False]
    tr.spade_constraints = None  # TRL's own (unmasked) figures
    with torch.no_grad():
        plain = tr._get_per_token_logps_and_entropies(tr.model, ids, mask, keep)[0]
    tr.spade_constraints = table
    t = float(tr.temperature)
    for r, (p, c) in enumerate(rows):
        allowed = table.allowed(p, c)
        if allowed is None:  # unregistered: TRL's figures
            assert torch.allclose(logps[r, :len(c)], plain[r, :len(c)], atol=1e-5)
            continue
        with torch.no_grad():
            full = tr.model(input_ids=torch.tensor([p + c])).logits[0, len(p) - 1:-1].float() / t
        for i, tok_id in enumerate(c):
            want = full[i, tok_id] - torch.logsumexp(full[i, allowed[i]], dim=0)
            assert abs(float(logps[r, i]) - float(want)) < 1e-4
            if len(allowed[i]) == 1:  # forced: certain under the mask, far from it without
                assert float(logps[r, i]) == 0.0 and float(ent[r, i]) == 0.0
                assert float(plain[r, i]) < -1.0
        assert any(len(a) == 1 for a in allowed) and any(len(a) > 1 for a in allowed)


def test_forced_positions_carry_no_gradient(tmp_path):
    import torch

    tr, table, rows = _setup(tmp_path)
    rows = rows[:3]
    ids, mask, keep = _batch(rows)
    weight = torch.zeros(len(rows), keep)
    for r, (p, c) in enumerate(rows):
        for i, a in enumerate(table.allowed(p, c)):
            weight[r, i] = float(len(a) == 1)
    assert weight.sum() > 0
    tr.model.train()
    tr.model.zero_grad(set_to_none=True)
    logps, _, _ = tr._get_per_token_logps_and_entropies(tr.model, ids, mask, keep)
    (logps * weight).sum().backward()
    grads = [p.grad for p in tr.model.parameters() if p.grad is not None]
    assert all(float(g.abs().max()) == 0.0 for g in grads)


def test_discarded_and_refused_schemas():
    from spade_envs.agents.models import ensure_tokenizer
    from spade_envs.selfplay.constrained_scoring import TokenConstraints

    table = TokenConstraints(ensure_tokenizer())
    table.add([1], [2, 3], SCHEMA)
    assert len(table) == 1 and table.allowed([1], [2, 3]) is not None
    table.discard([1], [2, 3])
    assert len(table) == 0 and table.allowed([1], [2, 3]) is None
    table.add([1], [2], None)  # free decoding: nothing to register
    assert len(table) == 0
    with pytest.raises(ValueError, match="decoding schema"):
        table.add([1], [2], {"type": "no-such-type"})
