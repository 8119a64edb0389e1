"""Prefix Sliding cache and mask on a tiny random Llama (no network, a few seconds)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM  # noqa: E402

from spade_envs.agents.prefix_sliding import PrefixSlidingCache, kv_bytes  # noqa: E402
from spade_envs.agents.prefix_sliding_mask import prefix_sliding_attention_mask  # noqa: E402
from spade_envs.errors import AgentError  # noqa: E402

VOCAB = 128


@pytest.fixture(scope="module")
def model():
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        initializer_range=0.2,  # peaked logits: greedy choices are not near-ties
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        m = LlamaForCausalLM(config).eval()
    m.generation_config.eos_token_id = None  # never stop early: fixed lengths
    return m


def _prompt(batch: int = 1, length: int = 12, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (batch, length), generator=g)


def _greedy(model, ids, cache=None, new=40, **kw):
    with torch.no_grad():
        return model.generate(
            ids, max_new_tokens=new, do_sample=False, past_key_values=cache, pad_token_id=0, **kw
        )


def test_generate_identical_to_full_cache_when_window_covers_sequence(model):
    ids = _prompt()
    full = _greedy(model, ids)
    cache = PrefixSlidingCache(window=64, config=model.config)
    sliding = _greedy(model, ids, cache)
    assert sliding.tolist() == full.tolist()
    assert cache.prefix_len == 12
    assert cache.get_seq_length() == full.shape[1] - 1  # the last token is never fed back
    # a small window really changes what the model sees
    small = _greedy(model, ids, PrefixSlidingCache(window=4))
    assert small.tolist() != full.tolist()


def test_batched_left_padded_generate_identical_to_full_cache(model):
    ids = _prompt(batch=2)
    mask = torch.ones_like(ids)
    ids[1, :5], mask[1, :5] = 0, 0
    full = _greedy(model, ids, attention_mask=mask, new=30)
    sliding = _greedy(model, ids, PrefixSlidingCache(window=50), attention_mask=mask, new=30)
    assert sliding.tolist() == full.tolist()


def test_manual_decode_loop_matches_full_cache_and_stays_bounded(model):
    ids = _prompt(length=10)
    caches = {"full": DynamicCache(), "big": PrefixSlidingCache(window=100), "small": PrefixSlidingCache(window=6)}
    tokens = {name: ids for name in caches}
    logits = {name: [] for name in caches}
    with torch.no_grad():
        for _ in range(25):
            for name, cache in caches.items():
                out = model(tokens[name], past_key_values=cache).logits[:, -1]
                logits[name].append(out)
                tokens[name] = out.argmax(-1, keepdim=True)
    assert torch.equal(torch.stack(logits["big"]), torch.stack(logits["full"]))
    small = caches["small"]
    assert small.get_seq_length() == 10 + 24  # absolute positions keep counting
    assert small.stored_length() == 10 + 6  # prefix + window only
    assert all(layer.keys.shape[-2] == 16 for layer in small.layers)


def test_logprobs_from_one_masked_forward_equal_generation_logprobs(model):
    prompt_len, window, new = 12, 5, 40
    ids = _prompt(length=prompt_len)
    cache = PrefixSlidingCache(window=window)
    out = _greedy(model, ids, cache, new=new, output_logits=True, return_dict_in_generate=True)
    seq = out.sequences
    generated = torch.stack([step.float().log_softmax(-1) for step in out.logits], 1)
    mask = prefix_sliding_attention_mask(seq.shape[1], prompt_len, window)
    with torch.no_grad():
        recomputed = model(seq, attention_mask=mask).logits.log_softmax(-1)[:, prompt_len - 1 : -1]
        plain = model(seq).logits.log_softmax(-1)[:, prompt_len - 1 : -1]
    assert cache.stored_length() == prompt_len + window  # dropping happened
    torch.testing.assert_close(recomputed, generated, atol=1e-4, rtol=0)
    assert (plain - generated).abs().max() > 1e-2  # full attention would differ


def test_padded_batch_logprobs_match_generation(model):
    prompt_len, window, new = 12, 6, 30
    ids = _prompt(batch=2, length=prompt_len, seed=3)
    mask = torch.ones_like(ids)
    ids[1, :4], mask[1, :4] = 0, 0
    out = _greedy(model, ids, PrefixSlidingCache(window=window), attention_mask=mask, new=new,
                  output_logits=True, return_dict_in_generate=True)
    seq = out.sequences
    generated = torch.stack([step.float().log_softmax(-1) for step in out.logits], 1)
    full_mask = torch.cat([mask, torch.ones(2, new, dtype=mask.dtype)], 1)
    positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
    attn = prefix_sliding_attention_mask(seq.shape[1], prompt_len, window, padding_mask=full_mask)
    with torch.no_grad():
        logits = model(seq, attention_mask=attn, position_ids=positions).logits
    recomputed = logits.log_softmax(-1)[:, prompt_len - 1 : -1]
    torch.testing.assert_close(recomputed, generated, atol=1e-4, rtol=0)


def test_chunked_appends_with_exact_mask_match_whole_sequence(model):
    prefix, window = 10, 4
    seq = _prompt(length=40, seed=5)
    cache = PrefixSlidingCache(window=window, prefix_len=prefix)
    pieces, start = [], 0
    with torch.no_grad():
        for size in (10, 3, 7, 1, 1, 9, 5, 4):
            chunk = seq[:, start : start + size]
            attn = cache.attention_mask(size)
            assert attn.shape == (1, 1, size, cache.stored_length() + size)
            pieces.append(model(chunk, past_key_values=cache, attention_mask=attn).logits)
            start += size
        whole = model(seq, attention_mask=prefix_sliding_attention_mask(40, prefix, window)).logits
    torch.testing.assert_close(torch.cat(pieces, 1), whole, atol=1e-4, rtol=1e-4)
    assert cache.get_seq_length() == 40 and cache.stored_length() == prefix + window


def test_chunk_without_explicit_mask_is_causal_over_stored_slots(model):
    """Default masking of a multi-token update: every stored slot visible, chunk causal."""
    import copy

    seq = _prompt(length=30, seed=7)
    cache = PrefixSlidingCache(window=4, prefix_len=6)
    with torch.no_grad():
        model(seq[:, :20], past_key_values=cache)
        twin = copy.deepcopy(cache)
        chunk = seq[:, 20:25]
        got = model(chunk, past_key_values=cache).logits
        stored = twin.stored_length()
        attn = torch.cat([torch.ones(5, stored, dtype=torch.bool), torch.ones(5, 5, dtype=torch.bool).tril()], 1)
        want = model(chunk, past_key_values=twin, attention_mask=attn[None, None]).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert cache.get_seq_length() == 25 and stored == 10


def test_mask_sizes_match_the_returned_kv_length():
    cache = PrefixSlidingCache(window=3, prefix_len=2, num_layers=1)
    assert cache.get_mask_sizes(5, 0) == (5, 0)
    k = torch.zeros(1, 1, 5, 4)
    keys, _ = cache.update(k, k, 0)
    assert keys.shape[-2] == 5 and cache.stored_length() == 5
    assert cache.get_mask_sizes(1, 0) == (6, 0) and cache.get_query_offset(0) == 5
    keys, _ = cache.update(k[..., :1, :], k[..., :1, :], 0)
    assert keys.shape[-2] == 6 and cache.stored_length() == 5  # 2 prefix + 3 window
    assert cache.layers[0].stored_positions().tolist() == [0, 1, 3, 4, 5]
    assert cache.get_seq_length() == 6
    assert kv_bytes(cache) == 2 * 5 * 4 * 4
    cache.reset()
    assert cache.get_seq_length() == 0 and cache.stored_length() == 0
    keys, _ = cache.update(k, k, 0)
    assert keys.shape[-2] == 5 and cache.get_seq_length() == 5


def test_mask_pattern_and_dtypes():
    m = prefix_sliding_attention_mask(7, prefix_len=2, window=2)
    expected = [
        [1, 0, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0, 0],
        [1, 1, 0, 1, 1, 1, 0],
        [1, 1, 0, 0, 1, 1, 1],
    ]
    assert m.shape == (1, 1, 7, 7) and m.dtype == torch.bool
    assert m[0, 0].int().tolist() == expected
    f = prefix_sliding_attention_mask(7, 2, 2, dtype=torch.float32)
    assert f[0, 0, 6, 2] == torch.finfo(torch.float32).min and f[0, 0, 6, 6] == 0
    pad = torch.tensor([[0, 1, 1, 1]])
    p = prefix_sliding_attention_mask(4, 2, 1, padding_mask=pad)
    assert p[0, 0, :, 0].tolist() == [True, False, False, False]  # padding key hidden
    with pytest.raises(ValueError):
        prefix_sliding_attention_mask(4, 2, 0)


def test_bad_arguments_raise_agent_error():
    with pytest.raises(AgentError):
        PrefixSlidingCache(window=0)
    with pytest.raises(AgentError):
        PrefixSlidingCache(window=4, prefix_len=-1)
    cache = PrefixSlidingCache(window=2, prefix_len=1, num_layers=1)
    k = torch.zeros(1, 1, 6, 4)
    cache.update(k, k, 0)
    with pytest.raises(AgentError):
        cache.crop(-1)


def test_long_prompt_with_short_prefix_matches_mask_with_prefill_len(model):
    prompt_len, prefix, window, new = 20, 4, 5, 25
    ids = _prompt(length=prompt_len, seed=11)
    cache = PrefixSlidingCache(window=window, prefix_len=prefix)
    out = _greedy(model, ids, cache, new=new, output_logits=True, return_dict_in_generate=True)
    generated = torch.stack([step.float().log_softmax(-1) for step in out.logits], 1)
    seq = out.sequences
    with torch.no_grad():
        exact = prefix_sliding_attention_mask(seq.shape[1], prefix, window, prefill_len=prompt_len)
        recomputed = model(seq, attention_mask=exact).logits.log_softmax(-1)[:, prompt_len - 1 : -1]
        naive = prefix_sliding_attention_mask(seq.shape[1], prefix, window)
        differs = model(seq, attention_mask=naive).logits.log_softmax(-1)[:, prompt_len - 1 : -1]
    torch.testing.assert_close(recomputed, generated, atol=1e-4, rtol=0)
    assert (differs - generated).abs().max() > 1e-2
    assert cache.stored_length() == prefix + window
