"""Prefix Sliding across the turns of a KV session (agents/session_window.py): the cache
stays bounded over the whole episode, every logprob equals one forward pass over the
episode under the Prefix Sliding mask, and real episodes play through it."""

from __future__ import annotations

import pytest
import torch

from spade_envs.agents import PlayTask
from spade_envs.agents.backend_transformers import TransformersBackend
from spade_envs.agents.prefix_sliding_mask import prefix_sliding_attention_mask
from spade_envs.agents.rollout import LLMAgent
from spade_envs.agents.session_window import SLACK

WINDOW = 8


@pytest.fixture(scope="module")
def sliding():
    return TransformersBackend("tiny-random", device="cpu", prefix_sliding=(None, WINDOW))


def _episode_logprobs(backend, tokens: list[int], prefix: int, window: int | None) -> torch.Tensor:
    """Logprob of every token given the ones before, in one forward pass (window None: causal)."""
    ids = torch.tensor([tokens])
    mask = None
    if window is not None:
        mask = prefix_sliding_attention_mask(len(tokens), prefix, window, prefill_len=prefix, dtype=torch.float32)
    with torch.no_grad():
        logits = backend.model(input_ids=ids, attention_mask=mask).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return logp[torch.arange(len(tokens) - 1), ids[0, 1:]]


def test_three_turns_stay_bounded_and_match_one_masked_forward(sliding):
    gen = torch.Generator().manual_seed(7)
    prompts = [torch.randint(3, 500, (n,), generator=gen).tolist() for n in (21, 30, 14)]
    firsts = [len(p) for p in prompts]
    session = sliding.new_session()
    keys = ["a", "b", "c"]
    sampled: list[list[tuple[int, float]]] = [[] for _ in prompts]  # (index in the episode, logprob)
    for turn in range(3):
        outs = sliding.generate(prompts, max_new_tokens=80, temperature=1.0, seed=turn, session=session, keys=keys)
        for r, out in enumerate(outs):
            sampled[r] += [(len(prompts[r]) + i, lp) for i, lp in enumerate(out.logprobs)]
            reply = torch.randint(3, 500, (5 + 4 * r,), generator=gen).tolist()  # the environment's answer
            prompts[r] = prompts[r] + out.token_ids + reply
    stats = session.stats
    assert stats["rebuilds"] == 1  # one session for the three turns
    assert stats["compactions"] >= 5  # at the 2 later turn starts, and inside every turn's decoding
    longest_reply = 5 + 4 * 2
    assert stats["peak_width"] <= max(firsts) + WINDOW + max(SLACK, longest_reply)
    assert max(len(p) for p in prompts) > 2 * stats["peak_width"]  # the episodes outgrew the bound
    for layer in session.cache.layers:
        assert layer.length == session.width
    windowed_differs = False
    for r, first in enumerate(firsts):
        tokens = prompts[r]
        exact = _episode_logprobs(sliding, tokens, first, WINDOW)
        causal = _episode_logprobs(sliding, tokens, first, None)
        idx = torch.tensor([i for i, _ in sampled[r]])
        got = torch.tensor([lp for _, lp in sampled[r]])
        assert torch.allclose(exact[idx - 1], got, atol=1e-4)
        windowed_differs |= bool((causal[idx - 1] - got).abs().max() > 1e-3)
    assert windowed_differs  # the window really changed what the tokens saw


def test_an_explicit_prefix_keeps_only_p_positions(sliding):
    backend = TransformersBackend("tiny-random", device="cpu", prefix_sliding=(4, WINDOW),
                                  model=sliding.model, tokenizer=sliding.tokenizer)
    prompt = list(range(10, 40))
    session = backend.new_session()
    out = backend.generate([prompt], max_new_tokens=5, temperature=1.0, seed=1, session=session, keys=["x"])[0]
    tail = prompt + out.token_ids + [7, 8, 9]
    out2 = backend.generate([tail], max_new_tokens=100, temperature=1.0, seed=2, session=session, keys=["x"])[0]
    assert session.stats["rebuilds"] == 1 and len(out2.token_ids) == 100
    assert session.stats["compactions"] >= 2  # at the second turn's start, and while decoding
    assert session.stats["peak_width"] <= 4 + WINDOW + SLACK  # the first prompt's 30 are not all kept
    mask = prefix_sliding_attention_mask(len(tail) + len(out2.token_ids), 4, WINDOW, prefill_len=len(prompt),
                                         dtype=torch.float32)
    ids = torch.tensor([tail + out2.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(input_ids=ids, attention_mask=mask).logits[0].float(), dim=-1)
    seq = tail + out2.token_ids
    got = torch.tensor(out.logprobs + out2.logprobs)
    idx = list(range(len(prompt), len(prompt) + len(out.token_ids))) + list(range(len(tail), len(seq)))
    want = torch.stack([logp[i - 1, seq[i]] for i in idx])
    assert torch.allclose(want, got, atol=1e-4)


def test_episodes_play_through_a_sliding_session(sliding):
    tasks = [PlayTask(e, 0, max_turns=3) for e in ("spade/Env-00013", "spade/Env-00021", "spade/Env-00024")]
    agent = LLMAgent(sliding, max_new_tokens=20, temperature=0.0)
    episodes = agent.play(tasks)
    assert all(e.error is None for e in episodes) and max(e.turns for e in episodes) >= 2
    assert agent.last_timings["rebuilds"] == 1 and agent.last_timings["compactions"] >= 1


def test_a_session_without_the_window_is_not_used_by_a_sliding_backend(sliding):
    from spade_envs.agents.kv_session import DecodeSession

    plain = DecodeSession()
    sliding.generate([[5, 6, 7, 8]], max_new_tokens=3, temperature=0.0, session=plain, keys=["k"])
    assert plain.cache is None  # not continued with a cache that knows no window


def test_rows_that_stop_move_and_drop_with_their_window(sliding, monkeypatch):
    """A wide stop set makes rows stop at different steps (swapped behind the live ones);
    between turns rows come in another order and one is dropped: every row's positions
    and prefix travel with it, so its logprobs still equal its own masked forward."""
    from spade_envs.agents import kv_session

    monkeypatch.setattr(sliding, "_stop", torch.arange(0, sliding.model.config.vocab_size, 29))
    swaps = []
    monkeypatch.setattr(kv_session.DecodeSession, "swap_rows",
                        lambda self, a, b, _real=kv_session.DecodeSession.swap_rows: swaps.append(a) or _real(self, a, b))
    gen = torch.Generator().manual_seed(3)
    prompts = {k: torch.randint(3, 500, (12 + 5 * k,), generator=gen).tolist() for k in range(4)}
    firsts = {k: len(p) for k, p in prompts.items()}
    sampled: dict[int, list[tuple[int, float]]] = {k: [] for k in prompts}
    session, keys = sliding.new_session(), list(prompts)
    for turn in range(4):
        outs = sliding.generate([prompts[k] for k in keys], max_new_tokens=60, temperature=1.0, seed=turn,
                                session=session, keys=keys)
        for k, out in zip(keys, outs):
            sampled[k] += [(len(prompts[k]) + i, lp) for i, lp in enumerate(out.logprobs)]
            prompts[k] = prompts[k] + out.token_ids + [40 + turn, 41, 42]
        keys = keys[::-1][:3] if turn == 0 else keys[1:] + keys[:1]
    assert session.stats["rebuilds"] == 1 and swaps and session.stats["compactions"] >= 3
    for k in prompts:
        exact = _episode_logprobs(sliding, prompts[k], firsts[k], WINDOW)
        idx = torch.tensor([i for i, _ in sampled[k]])
        assert torch.allclose(exact[idx - 1], torch.tensor([lp for _, lp in sampled[k]]), atol=1e-4), k
