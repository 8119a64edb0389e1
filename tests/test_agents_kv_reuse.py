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
    for e in episodes:
        with torch.no_grad():
            logp = torch.log_softmax(tiny.model(torch.tensor([e.token_ids])).logits[0].float(), dim=-1)
        idx = [i for i, m in enumerate(e.mask) if m == 1]
        full = logp[torch.tensor(idx) - 1, torch.tensor([e.token_ids[i] for i in idx])]
        assert torch.allclose(full, torch.tensor([e.logprobs[i] for i in idx]), atol=1e-4)


def test_session_falls_back_when_prompts_do_not_extend(tiny):
    session = tiny.new_session()
    a = tiny.generate([[1, 2, 3, 4], [1, 2, 5]], max_new_tokens=3, temperature=0.0, session=session, keys=["x", "y"])
    # a prompt that does not extend what the cache holds: rebuilt, and the same as a plain call
    b = tiny.generate([[9, 9, 9]], max_new_tokens=3, temperature=0.0, session=session, keys=["x"])
    plain = tiny.generate([[9, 9, 9]], max_new_tokens=3, temperature=0.0)
    assert session.stats["rebuilds"] == 2 and b[0].token_ids == plain[0].token_ids
    assert len(a) == 2
