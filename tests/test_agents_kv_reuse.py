"""KV-cache reuse across turns (agents/kv_session.py): same episodes as re-encoding, exact
logprobs against one full forward pass, and far fewer prompt tokens encoded."""

from __future__ import annotations

import pytest
import torch

from spade_envs.agents import PlayTask
from spade_envs.agents.backend_transformers import TransformersBackend
from spade_envs.agents.kv_session import common_prefix_len
from spade_envs.agents.rollout import LLMAgent

MULTI_TURN = ["spade/Env-00013", "spade/Env-00014", "spade/Env-00021", "spade/Env-00022", "spade/Env-00024"]


@pytest.fixture(scope="module")
def tiny():
    return TransformersBackend("tiny-random", device="cpu")


def _tasks():
    return [PlayTask(env_id, seed, max_turns=3) for env_id in MULTI_TURN for seed in (0, 1)]


def test_common_prefix():
    assert common_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_len([[5], [6]]) == 0 and common_prefix_len([]) == 0


def test_reuse_plays_the_same_greedy_episodes_with_less_encoding(tiny):
    plain = LLMAgent(tiny, max_new_tokens=12, temperature=0.0, reuse_cache=False).play(_tasks())
    agent = LLMAgent(tiny, max_new_tokens=12, temperature=0.0)
    reused = agent.play(_tasks())
    assert any(e.turns >= 2 for e in reused)  # the workload is multi-turn
    for a, b in zip(plain, reused):
        assert a.actions == b.actions and a.token_ids == b.token_ids and a.mask == b.mask
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
    stats = agent.last_timings
    assert stats["rebuilds"] == 1  # one prefill of the shared prefix for the whole batch
    reencoded = sum(i for e in plain for i, m in enumerate(e.mask) if m == 1 and (i == 0 or e.mask[i - 1] == 0))
    assert stats["encoded_tokens"] < 0.6 * reencoded and stats["reused_tokens"] > 0


def test_reused_logprobs_match_one_full_forward(tiny):
    episodes = LLMAgent(tiny, max_new_tokens=10, temperature=1.0, seed=5).play(_tasks())
    _full_forward_check(tiny, episodes)


def test_session_falls_back_when_prompts_do_not_extend(tiny):
    session = tiny.new_session()
    a = tiny.generate([[1, 2, 3, 4], [1, 2, 5]], max_new_tokens=3, temperature=0.0, session=session, keys=["x", "y"])
    # a prompt that does not extend what the cache holds: rebuilt, and the same as a plain call
    b = tiny.generate([[9, 9, 9]], max_new_tokens=3, temperature=0.0, session=session, keys=["x"])
    plain = tiny.generate([[9, 9, 9]], max_new_tokens=3, temperature=0.0)
    assert session.stats["rebuilds"] == 2 and b[0].token_ids == plain[0].token_ids
    assert len(a) == 2


def _full_forward_check(backend, episodes):
    for e in episodes:
        with torch.no_grad():
            logp = torch.log_softmax(backend.model(torch.tensor([e.token_ids])).logits[0].float(), dim=-1)
        idx = [i for i, m in enumerate(e.mask) if m == 1]
        full = logp[torch.tensor(idx) - 1, torch.tensor([e.token_ids[i] for i in idx])]
        assert torch.allclose(full, torch.tensor([e.logprobs[i] for i in idx]), atol=1e-4)


def test_long_episodes_through_several_cache_growths_stay_exact(tiny):
    """Six turns of 40 sampled tokens: the growing cache reallocates several times per layer
    and turn prefills are split into length chunks; every logprob still matches one full
    forward pass over the finished episode."""
    tasks = [PlayTask(e, 0, max_turns=6) for e in ("spade/Env-00013", "spade/Env-00021", "spade/Env-00024")]
    agent = LLMAgent(tiny, max_new_tokens=40, temperature=1.0, seed=3)
    episodes = agent.play(tasks)
    stats = agent.last_timings
    assert max(e.turns for e in episodes) == 6
    assert stats["cache_growths"] >= 2 * tiny.model.config.num_hidden_layers
    assert stats["prefill_chunks"] > stats["rounds"]  # some turn's tails were prefilled in length chunks
    assert stats["computed_tokens"] < 1.2 * stats["encoded_tokens"]  # little work spent on padding
    _full_forward_check(tiny, episodes)


def test_models_without_the_growing_cache_keep_dynamic_cache(tiny, monkeypatch):
    from spade_envs.agents import kv_session

    fast = LLMAgent(tiny, max_new_tokens=8, temperature=0.0).play(_tasks()[:4])
    monkeypatch.setattr(kv_session, "growing_cache_for", lambda config: None)
    agent = LLMAgent(tiny, max_new_tokens=8, temperature=0.0)
    slow = agent.play(_tasks()[:4])
    assert agent.last_timings["cache_growths"] == 0
    for a, b in zip(fast, slow):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4


def test_identical_prompts_of_a_group_are_encoded_once(tiny):
    """Four rows per environment on the same seed (a GRPO group): the first turn computes each
    distinct prompt once, as a batch of the distinct prompts alone would, yet the rows sample
    their own continuations and every logprob matches one full forward pass."""
    envs = ("spade/Env-00013", "spade/Env-00021")
    distinct = LLMAgent(tiny, max_new_tokens=10, temperature=1.0, seed=2)
    distinct.play([PlayTask(e, 0, max_turns=1) for e in envs])
    grouped = LLMAgent(tiny, max_new_tokens=10, temperature=1.0, seed=2)
    episodes = grouped.play([PlayTask(e, 0, max_turns=1) for e in envs for _ in range(4)])
    assert grouped.last_timings["encoded_tokens"] == distinct.last_timings["encoded_tokens"]
    assert grouped.last_timings["computed_tokens"] == distinct.last_timings["computed_tokens"]
    for k in range(len(envs)):
        group = episodes[4 * k: 4 * k + 4]
        assert len({tuple(e.token_ids) for e in group}) > 1  # the copies still sample on their own
    _full_forward_check(tiny, episodes)


def test_a_batch_encodes_its_shared_prefix_once_and_matches_each_prompt_alone(tiny, monkeypatch):
    """The session-less batch path (evals, games, batches over the session size): prompts
    sharing a long prefix give the same greedy tokens and logprobs as each prompt alone,
    and the model is shown the shared prefix once (one row) instead of once per prompt."""
    from spade_envs.agents import backend_transformers as bt

    head = list(range(10, 60))
    prompts = [head + [70, 71, 72], head + [80], head + [90, 91, 92, 93, 94]]
    alone = [tiny.generate([p], max_new_tokens=6, temperature=0.0)[0] for p in prompts]
    widths = []
    forward = tiny.model.forward
    monkeypatch.setattr(tiny.model, "forward", lambda *a, **kw: widths.append(kw["input_ids"].shape) or forward(*a, **kw))
    batch = tiny._generate_batch(prompts, 6, 0.0, None, [None] * 3)
    assert widths[0] == (1, len(head)) and widths[1] == (3, 5)  # the prefix once, then the padded tails
    for a, b in zip(alone, batch):
        assert a.token_ids == b.token_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
    monkeypatch.setattr(bt, "SHARED_PREFIX_MIN", 10_000)  # sharing off: the same result
    off = tiny._generate_batch(prompts, 6, 0.0, None, [None] * 3)
    assert [g.token_ids for g in off] == [g.token_ids for g in batch]


def test_a_batch_prefills_each_distinct_prompt_once(tiny, monkeypatch):
    """The batch path (the designer's groups: 8 samples of one prompt): duplicate prompts are
    prefilled once each and copied, and every row's greedy tokens and logprobs are those
    of its prompt alone; sampled rows still draw their own continuations."""
    head = list(range(10, 60))
    a, b = head + [70, 71, 72], head + [80]
    prompts = [a, b, a, a, b]
    alone = {tuple(p): tiny.generate([p], max_new_tokens=6, temperature=0.0)[0] for p in (a, b)}
    widths = []
    forward = tiny.model.forward
    monkeypatch.setattr(tiny.model, "forward", lambda *x, **kw: widths.append(kw["input_ids"].shape) or forward(*x, **kw))
    batch = tiny._generate_batch(prompts, 6, 0.0, None, [None] * 5)
    assert widths[1] == (2, 3), "two distinct prompts: two prefill rows, then five decoding rows"
    assert widths[2][0] == 5
    for p, g in zip(prompts, batch):
        assert g.token_ids == alone[tuple(p)].token_ids and g.prompt_token_ids == p
        assert max(abs(x - y) for x, y in zip(g.logprobs, alone[tuple(p)].logprobs)) < 1e-4
    sampled = tiny._generate_batch([a] * 4, 8, 1.0, torch.Generator().manual_seed(0), [None] * 4)
    assert len({tuple(g.token_ids) for g in sampled}) > 1


def test_rows_that_stop_are_moved_behind_the_live_ones_and_results_stay_exact(tiny, monkeypatch):
    """Rows stop at different steps (a wide stop set); the session swaps them behind the
    live rows and attention skips them, yet every turn, with rows passed in another order
    and one dropped, gives each row exactly what generating it alone gives."""
    from spade_envs.agents import gqa_attention, kv_session

    vocab = tiny.model.config.vocab_size
    monkeypatch.setattr(tiny, "_stop", torch.arange(0, vocab, 7))
    live_rows = []
    real = gqa_attention.gqa_sdpa_forward

    def spy(module, query, *a, **kw):
        if kw.get("live_rows") is not None:
            live_rows.append((query.shape[0], kw["live_rows"]))
        return real(module, query, *a, **kw)

    monkeypatch.setattr(gqa_attention, "gqa_sdpa_forward", spy)
    from transformers import AttentionInterface

    AttentionInterface.register(gqa_attention.NAME, spy)
    swaps = []
    monkeypatch.setattr(kv_session.DecodeSession, "swap_rows",
                        lambda self, a, b, _real=kv_session.DecodeSession.swap_rows: swaps.append(a) or _real(self, a, b))
    try:
        session = tiny.new_session()
        prompts = {k: [5 + k, 11, 12 + k] + [20 + k] * k for k in range(5)}
        keys = list(prompts)
        for turn in range(3):
            gens = tiny.generate([prompts[k] for k in keys], max_new_tokens=8, temperature=0.0, session=session, keys=keys)
            for k, g in zip(keys, gens):
                alone = tiny.generate([prompts[k]], max_new_tokens=8, temperature=0.0)[0]
                assert g.token_ids == alone.token_ids, (turn, k)
                assert max(abs(x - y) for x, y in zip(g.logprobs, alone.logprobs)) < 1e-4
                prompts[k] = prompts[k] + g.token_ids + [30 + turn]
            keys = keys[::-1][:4] if turn == 0 else keys[1:] + keys[:1]  # another order, one row dropped
        assert session.stats["rebuilds"] == 1  # every turn continued the session
    finally:
        AttentionInterface.register(gqa_attention.NAME, real)
    assert swaps and any(live < b for b, live in live_rows)  # rows stopped early and were skipped
