"""The growing KV cache (agents/growing_cache.py) and GQA attention without the K/V copy
(agents/gqa_attention.py): same states and outputs as transformers' own, fewer copies."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicLayer

from spade_envs.agents.growing_cache import MIN_CAPACITY, GrowingCache, GrowingLayer, growing_cache_for
from spade_envs.agents.gqa_attention import gqa_attention, gqa_sdpa_forward


def _kv(b, n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, n, 4, generator=g), torch.randn(b, 2, n, 4, generator=g)


def test_growing_layer_matches_dynamic_layer_through_appends_and_row_ops():
    grow, plain = GrowingLayer(), DynamicLayer()
    batch = 3
    for step, n in enumerate([5] + [1] * 200 + [30]):
        k, v = _kv(batch, n, step)
        gk, gv = grow.update(k, v)
        pk, pv = plain.update(k, v)
        assert torch.equal(gk, pk) and torch.equal(gv, pv)
        if step == 100:
            for layer in (grow, plain):
                layer.batch_select_indices(torch.tensor([0, 2]))
            batch = 2
        if step == 150:
            for layer in (grow, plain):
                layer.batch_repeat_interleave(2)
            batch = 4
    assert grow.get_seq_length() == plain.get_seq_length() == 235
    # geometric growth: a handful of reallocations for 202 appends, not one per append
    assert 2 <= grow.growths <= 6 and grow.capacity >= 235
    assert grow.capacity < 2 * 235 + MIN_CAPACITY
    grow.crop(-10)
    plain.crop(-10)
    assert torch.equal(grow.keys, plain.keys) and grow.get_seq_length() == 225
    assert torch.count_nonzero(grow._k[:, :, 225:]) == 0  # unused columns stay zero (masked x 0 is 0, never NaN)


def test_returned_states_are_views_not_copies():
    layer = GrowingLayer()
    layer.update(*_kv(2, 10, 0))
    layer.reserve(100)
    before = layer._k.data_ptr()
    k, _ = layer.update(*_kv(2, 1, 1))
    assert k.data_ptr() == before and layer._k.data_ptr() == before


def test_row_view_writes_right_aligned_chunks():
    cache = GrowingCache(1)
    cache.layers[0].update(*_kv(3, 4, 0))
    k_new, v_new = _kv(1, 2, 1)
    view = cache.rows([2], start=6, batch=3, device=torch.device("cpu"))  # columns 4, 5 stay pads
    keys, _ = view.update(k_new, v_new, 0)
    assert keys.shape == (1, 2, 8, 4) and view.get_seq_length() == 6
    cache.set_length(8)
    layer = cache.layers[0]
    assert torch.equal(layer.keys[2:3, :, 6:], k_new) and torch.count_nonzero(layer.keys[:, :, 4:6]) == 0
    assert torch.count_nonzero(layer.keys[:2, :, 6:]) == 0


def test_growing_cache_only_for_full_attention_models():
    from transformers import LlamaConfig

    full = LlamaConfig(num_hidden_layers=3, hidden_size=32, num_attention_heads=4, intermediate_size=64)
    assert isinstance(growing_cache_for(full), GrowingCache) and len(growing_cache_for(full).layers) == 3
    sliding = LlamaConfig(num_hidden_layers=3, hidden_size=32, num_attention_heads=4, intermediate_size=64)
    sliding.sliding_window = 16
    assert growing_cache_for(sliding) is None


class _Attn(torch.nn.Module):
    num_key_value_groups = 3


@pytest.mark.parametrize("q", [1, 7])
def test_gqa_attention_equals_sdpa_without_repeating_kv(q, monkeypatch):
    from transformers.integrations import sdpa_attention

    g = torch.Generator().manual_seed(q)
    b, kv_heads, kv_len, d = 4, 2, 40, 8
    query = torch.randn(b, q, kv_heads * 3, d, generator=g).transpose(1, 2)
    key, value = torch.randn(b, kv_heads, kv_len, d, generator=g), torch.randn(b, kv_heads, kv_len, d, generator=g)
    real = torch.rand(b, kv_len, generator=g) > 0.3
    real[:, -q:] = True
    allowed = real[:, None, None, :].expand(b, 1, q, kv_len) & torch.ones(q, kv_len, dtype=torch.bool).tril(kv_len - q)
    mask = torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)
    with torch.inference_mode():
        want, _ = sdpa_attention.sdpa_attention_forward(_Attn(), query, key, value, mask, scaling=d ** -0.5)

        def no_copy(*a, **k):
            raise AssertionError("repeat_kv called: the cache was copied per head")

        monkeypatch.setattr(sdpa_attention, "repeat_kv", no_copy)
        got, _ = gqa_sdpa_forward(_Attn(), query, key, value, mask, scaling=d ** -0.5)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-6)


def test_gqa_attention_is_scoped_to_sdpa_models():
    from spade_envs.agents.backend_transformers import TransformersBackend

    model = TransformersBackend("tiny-random", device="cpu").model
    assert model.config._attn_implementation == "sdpa"
    with gqa_attention(model):
        assert model.config._attn_implementation == "spade_gqa_sdpa"
    assert model.config._attn_implementation == "sdpa"
