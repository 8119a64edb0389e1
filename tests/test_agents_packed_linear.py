"""Packed oneDNN linear layers while generating (agents/packed_linear.py): same outputs as
``F.linear``, the packed path really taken, never stale after a weight update, autograd
untouched, and the model's layers restored after the block."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from spade_envs.agents import packed_linear
from spade_envs.agents.packed_linear import packed_linears

pytestmark = pytest.mark.skipif(not packed_linear.available(), reason="this torch build lacks oneDNN's linear ops")


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(40, 24), torch.nn.ReLU(), torch.nn.Linear(24, 7, bias=False))


def _plain(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return F.linear(F.relu(F.linear(x, model[0].weight, model[0].bias)), model[2].weight)


def test_outputs_match_f_linear_and_the_packed_path_is_taken():
    model = _model()
    with packed_linears(model), torch.inference_mode():
        for shape in [(2, 40), (8, 40), (33, 40), (3, 5, 40), (4, 1, 40)]:
            x = torch.randn(shape)
            assert torch.allclose(model(x), _plain(model, x), atol=1e-5)
        assert model[0] in packed_linear._packed and model[2] in packed_linear._packed
    # the copies never outlive the block: the memory is given back, the next block packs again
    assert model[0] not in packed_linear._packed and model[2] not in packed_linear._packed


def test_one_row_keeps_f_linear():
    model = _model()
    x = torch.randn(1, 40)
    with packed_linears(model), torch.no_grad():
        assert torch.equal(model(x), _plain(model, x))
        assert model[0] not in packed_linear._packed


def test_a_weight_updated_in_place_is_packed_again():
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(6, 40)
    with packed_linears(model):
        with torch.no_grad():
            before = model(x)
        loss = model(x).square().sum()  # gradients on: the plain path, so autograd works
        loss.backward()
        opt.step()
        with torch.no_grad():
            after = model(x)
            assert torch.allclose(after, _plain(model, x), atol=1e-5)
            assert not torch.allclose(after, before, atol=1e-3)
        with torch.no_grad():
            model[0].weight.copy_(torch.zeros_like(model[0].weight))  # a load_state_dict-style write
            assert torch.allclose(model(x), _plain(model, x), atol=1e-5)


def test_gradients_are_those_of_the_plain_layers():
    model = _model()
    x = torch.randn(5, 40)
    with packed_linears(model):
        model(x).sum().backward()
    packed_grad = model[0].weight.grad.clone()
    model.zero_grad()
    _plain(model, x).sum().backward()
    assert torch.allclose(packed_grad, model[0].weight.grad)


def test_layers_are_restored_on_the_last_exit_only():
    model = _model()
    with packed_linears(model):
        with packed_linears(model):
            assert "forward" in model[0].__dict__
        assert "forward" in model[0].__dict__  # the outer block is still running
    assert "forward" not in model[0].__dict__ and "forward" not in model[2].__dict__


def test_subclasses_of_linear_keep_their_own_forward():
    class Scaled(torch.nn.Linear):
        def forward(self, x):
            return 2 * super().forward(x)

    model = torch.nn.Sequential(Scaled(4, 4))
    with packed_linears(model):
        assert "forward" not in model[0].__dict__


def test_generation_is_the_same_with_and_without_packing(monkeypatch):
    from spade_envs.agents.backend_transformers import TransformersBackend

    backend = TransformersBackend("tiny-random", device="cpu")
    prompts = [[1, 5, 9, 13, 17], [1, 5, 9, 2], [1, 8, 7, 6, 5, 4, 3]]
    backend.packed_linear = False
    plain = backend.generate(prompts, max_new_tokens=10, temperature=0.0)
    backend.packed_linear = True
    taken = []
    real = packed_linear._weight_for
    monkeypatch.setattr(packed_linear, "_weight_for", lambda layer: taken.append(layer) or real(layer))
    packed = backend.generate(prompts, max_new_tokens=10, temperature=0.0)
    assert taken  # the packed path ran
    for a, b in zip(plain, packed):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4


def test_a_fused_optimizer_step_between_two_blocks_is_seen():
    # fused AdamW (transformers' default optimizer) updates parameters in place WITHOUT
    # moving their version counter: the next generation block must still see new weights
    model = _model()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    x = torch.randn(6, 40)
    with packed_linears(model), torch.no_grad():
        before = model(x)
    version = model[0].weight._version
    model(x).square().sum().backward()
    opt.step()
    assert model[0].weight._version == version  # what makes the counter useless here
    with packed_linears(model), torch.no_grad():
        after = model(x)
    assert torch.allclose(after, _plain(model, x), atol=1e-5)
    assert not torch.allclose(after, before, atol=1e-3)
