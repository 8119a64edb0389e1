"""A fresh batch whose tails share long prefixes (agents/tail_split.py): plain and hinted
plays of the same episodes compute their shared first observation once, and every token
and logprob stays what one prefill (and one full forward) gives."""

from __future__ import annotations

import pytest

from spade_envs.agents import PlayTask
from spade_envs.agents.backend_transformers import TransformersBackend
from spade_envs.agents.rollout import LLMAgent
from spade_envs.agents.tail_split import split_tails

from test_agents_kv_reuse import _full_forward_check

ENVS = ["spade/Env-00013", "spade/Env-00021", "spade/Env-00024"]


@pytest.fixture(scope="module")
def tiny():
    return TransformersBackend("tiny-random", device="cpu")


def test_heads_are_the_longest_prefix_shared_with_another_row():
    obs = list(range(100, 140))
    plain, hinted, other = obs + [1, 2], obs + [7, 8, 9, 1, 2], list(range(200, 230))
    heads, rests = split_tails([plain, hinted, other], min_saved=1)
    assert heads[0] == heads[1] == obs  # the shared observation, computed once
    assert heads[2] == other[:-1] and rests[2] == other[-1:]  # a row sharing nothing costs the same
    assert all(h + r == t for h, r, t in zip(heads, rests, [plain, hinted, other]))
    assert all(rests)


def test_no_split_when_it_saves_nothing():
    assert split_tails([list(range(50)), list(range(100, 150))]) is None
    assert split_tails([list(range(50))] * 3) is None  # identical rows are deduplicated without a split
    assert split_tails([[1], [1, 2, 3]]) is None  # a one-token tail has no head
    assert split_tails([list(range(40)) + [1], list(range(40)) + [2]], min_saved=64) is None


def _tasks():
    return [PlayTask(e, seed, hint=hint, max_turns=2) for e in ENVS for seed in (0, 1) for hint in (False, True)]


def test_plain_and_hinted_plays_share_their_observation_and_stay_exact(tiny, monkeypatch):
    from spade_envs.agents import kv_session

    split = LLMAgent(tiny, max_new_tokens=8, temperature=0.0)
    episodes = split.play(_tasks())
    monkeypatch.setattr(kv_session, "split_tails", lambda tails: None)  # one prefill of whole tails
    whole = LLMAgent(tiny, max_new_tokens=8, temperature=0.0)
    reference = whole.play(_tasks())
    for a, b in zip(episodes, reference):
        assert a.token_ids == b.token_ids and a.mask == b.mask
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
    saved = whole.last_timings["encoded_tokens"] - split.last_timings["encoded_tokens"]
    assert saved >= 64 * len(ENVS)  # each environment's two seeds: the observation once instead of twice
    assert split.last_timings["computed_tokens"] < whole.last_timings["computed_tokens"]
    _full_forward_check(tiny, episodes)


def test_sampled_plays_match_one_full_forward(tiny):
    episodes = LLMAgent(tiny, max_new_tokens=10, temperature=1.0, seed=4).play(_tasks())
    _full_forward_check(tiny, episodes)
