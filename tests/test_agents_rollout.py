"""Agents: batched LLM rollouts on tiny-random, token-level trajectories, the openai
backend against the local server."""

from __future__ import annotations

import pytest

from spade_envs.agents import PlayTask, load_agent
from spade_envs.agents.backend_openai import OpenAIBackend
from spade_envs.agents.rollout import LLMAgent
from spade_envs.agents.server import serve
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import seed_records

SEED_IDS = [rec.env_id.base for rec in seed_records() if not is_multiplayer(rec)]
PICK = SEED_IDS[:: max(1, len(SEED_IDS) // 6)]  # a spread of text and tool-use seeds


def _sandbox_available() -> bool:
    try:
        from spade_envs.sandbox import SandboxRuntime  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def tiny():
    from spade_envs.agents.backend_transformers import TransformersBackend

    return TransformersBackend("tiny-random", device="cpu")


def _recompute(backend, token_ids):
    import torch

    with torch.no_grad():
        logits = backend.model(torch.tensor([token_ids])).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


def test_tiny_random_plays_seed_envs_in_batch_with_and_without_hint(tiny):
    agent = LLMAgent(tiny, max_new_tokens=8, temperature=1.0, seed=0, sandbox=_sandbox_available())
    tasks = [PlayTask(env_id, seed, hint=hint, max_turns=2) for env_id in PICK for seed in (0, 1) for hint in (False, True)]
    episodes = agent.play(tasks)
    assert [e.task for e in episodes] == tasks
    for e in episodes:
        assert e.error is None
        assert 1 <= e.turns <= 2 and len(e.rewards) == e.turns == len(e.actions)
        assert e.terminated or e.truncated
        assert e.messages[0]["role"] == "system" and e.messages[1]["role"] == "user"
        assert ("Hint:" in e.messages[1]["content"]) == e.task.hint or not e.task.hint
        assert len(e.token_ids) == len(e.logprobs) == len(e.mask)
        assert 1 <= sum(e.mask) <= 8 * e.turns
        assert all(lp == 0.0 for lp, m in zip(e.logprobs, e.mask) if m == 0)
        assert all(lp <= 0.0 for lp in e.logprobs)
        assert e.timings["generation_s"] > 0
    hinted = [e for e in episodes if e.task.hint]
    assert any("Hint:" in e.messages[1]["content"] for e in hinted)  # seeds with a hint() show it
    t = agent.last_timings
    assert t["wall_s"] >= t["generation_s"] > 0 and t["rounds"] >= 1


def test_trajectory_tokens_mask_and_logprobs_match_recomputation(tiny):
    agent = LLMAgent(tiny, max_new_tokens=6, temperature=1.0, seed=3)
    episodes = agent.play([PlayTask(PICK[0], 5, max_turns=3), PlayTask(SEED_IDS[-1], 5, max_turns=3)])
    tok = tiny.tokenizer
    for e in episodes:
        logp = _recompute(tiny, e.token_ids)
        model_pos = [i for i, m in enumerate(e.mask) if m]
        assert model_pos and model_pos[0] > 0
        for i in model_pos:
            assert abs(logp[i - 1, e.token_ids[i]].item() - e.logprobs[i]) < 1e-4
        # the environment/prompt tokens are what the chat template writes for the messages
        text = tok.decode(e.token_ids, skip_special_tokens=False)
        assert text.startswith("<|im_start|>system\n")
        for m in e.messages[1:]:
            assert m["content"] in text
        # each assistant turn: model tokens, closed by <|im_end|>, followed by env tokens
        runs = sum(1 for i in model_pos if e.mask[i - 1] == 0)
        assert runs == e.turns


def test_greedy_is_deterministic_and_batch_independent(tiny):
    agent = LLMAgent(tiny, max_new_tokens=5, temperature=0.0)
    one = agent.play([PlayTask(PICK[1], 2, max_turns=2)])[0]
    many = agent.play([PlayTask(PICK[0], 1, max_turns=2), PlayTask(PICK[1], 2, max_turns=2)])[1]
    assert one.token_ids == many.token_ids
    assert max(abs(a - b) for a, b in zip(one.logprobs, many.logprobs)) < 1e-4


def test_openai_backend_against_local_server(tiny):
    with serve(tiny) as handle:
        assert handle.url.startswith("http://127.0.0.1:")
        backend = OpenAIBackend(handle.url, "tiny-random", timeout_s=60)
        gens = backend.chat([[{"role": "user", "content": "hi"}], [{"role": "user", "content": "hello there"}]],
                            max_new_tokens=4, temperature=1.0, seed=0)
        assert len(gens) == 2
        for g in gens:
            assert len(g.token_ids) == len(g.logprobs) >= 1 and g.prompt_token_ids
        agent = load_agent(f"openai:{handle.url}#tiny-random", max_new_tokens=4, temperature=1.0, seed=0)
        episodes = agent.play([PlayTask(env_id, 0, hint=True, max_turns=2) for env_id in PICK[:3]])
        for e in episodes:
            assert e.error is None and e.turns >= 1
            assert len(e.token_ids) == len(e.mask) == len(e.logprobs) and sum(e.mask) >= 1
            assert e.messages[-1]["role"] == "assistant"
        agent.close()
        backend.close()


def test_openai_backend_reports_unreachable_server():
    from spade_envs.agents import AgentError

    backend = OpenAIBackend("http://127.0.0.1:9", "x", timeout_s=5)
    with pytest.raises(AgentError, match="cannot reach"):
        backend.chat([[{"role": "user", "content": "hi"}]], max_new_tokens=2)
    backend.close()


@pytest.mark.slow
def test_default_model_plays_through_openai_server():
    agent_local = load_agent("transformers:default", max_new_tokens=24, temperature=0.0)
    with serve(agent_local.backend, model_name="default") as handle:
        agent = load_agent(f"openai:{handle.url}#default", max_new_tokens=24, temperature=0.0)
        episodes = agent.play([PlayTask(PICK[0], 0, max_turns=1), PlayTask(SEED_IDS[12], 0, max_turns=1)])
        assert all(e.error is None and e.turns == 1 and e.actions[0].strip() for e in episodes)
        agent.close()


def test_prefix_sliding_hook_with_a_wide_window_changes_nothing(tiny):
    from spade_envs.agents.backend_transformers import TransformersBackend

    sliding = TransformersBackend("tiny-random", model=tiny.model, tokenizer=tiny.tokenizer, prefix_sliding=(None, 4096))
    prompts = [[1, 520, 9531, 198], [1, 4093, 198, 6004, 2, 198, 1, 520, 9531, 198]]
    a = tiny.generate(prompts, max_new_tokens=6, temperature=0.0)
    b = sliding.generate(prompts, max_new_tokens=6, temperature=0.0)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert max(abs(x - y) for g, h in zip(a, b) for x, y in zip(g.logprobs, h.logprobs)) < 1e-4


@pytest.mark.slow
def test_default_model_plays_every_seed_env_sandboxed_in_batch():
    if not _sandbox_available():
        pytest.skip("the sandbox is not built yet")
    agent = load_agent("transformers:default", max_new_tokens=8, temperature=0.6, seed=0, sandbox=True)
    # every seed once, every other one with its hint (both prompt kinds, half the prefill)
    tasks = [PlayTask(env_id, 0, hint=bool(i % 2), max_turns=1) for i, env_id in enumerate(SEED_IDS)]
    episodes = agent.play(tasks)
    assert len(episodes) == len(tasks)
    assert [e for e in episodes if e.error] == []
    assert all(e.turns == 1 and sum(e.mask) >= 1 for e in episodes)
