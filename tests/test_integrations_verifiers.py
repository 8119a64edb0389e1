"""verifiers interop (issue 30): ``load_environment`` returns a real verifiers
``MultiTurnEnv`` whose rollouts play spade environments; scored by its rubric, with a
scripted OpenAI-compatible client (``httpx.MockTransport`` under ``openai.AsyncOpenAI``,
as verifiers' own tests mock the model)."""

from __future__ import annotations

import json
import sys

import pytest

from spade_envs.gym_env import SpadeEnv


def _import_verifiers():
    # The repository root holds spade's own ``agents/`` source folder, which shadows the
    # openai-agents package (``agents``) that verifiers imports when tests run from the root.
    if "agents" not in sys.modules:
        import os

        root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
        saved = list(sys.path)
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != root]
        try:
            import agents  # noqa: F401  (openai-agents)
        except ImportError:
            pass
        finally:
            sys.path[:] = saved
    top = pytest.importorskip("verifiers")
    if hasattr(top, "MultiTurnEnv"):
        return top
    legacy = pytest.importorskip("verifiers.legacy")  # 0.3: the environment API moved here
    if not hasattr(legacy, "MultiTurnEnv"):
        pytest.skip("this verifiers release has no MultiTurnEnv (tests/test_verifiers_contract.py covers it)")
    return legacy


vf = _import_verifiers()
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

TOOL_ENV = "spade/Env-00013"  # bank ledger: tool calls, then an answer
TEXT_ENV = "spade/Env-00001"


def _solution(env_id: str, seed: int) -> list[str]:
    env = SpadeEnv(env_id)
    try:
        env.reset(seed=seed)
        return env.solution_actions()
    finally:
        env.close()


def scripted_client(reply) -> "openai.AsyncOpenAI":
    """An AsyncOpenAI client whose model answers ``reply(messages)`` (no network)."""

    def handler(request):
        body = json.loads(request.content)
        text = reply(body["messages"])
        return httpx.Response(200, json={
            "id": "scripted", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    client = openai.AsyncOpenAI(base_url="http://scripted.invalid/v1", api_key="none",
                                http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    wrapper = getattr(getattr(vf, "clients", None), "OpenAIChatCompletionsClient", None)
    return wrapper(client) if wrapper is not None else client  # verifiers 0.3 takes its own client type


def _turn(messages) -> int:
    return sum(m["role"] == "assistant" for m in messages)


def test_hub_convention_and_rollouts_scored_by_the_rubric():
    import spade_envs.integrations.verifiers as spade_vf

    env = vf.load_environment("spade-envs", ids=[TOOL_ENV], seeds=[0, 1])  # the Environments Hub entry point
    assert isinstance(env, vf.MultiTurnEnv) and isinstance(env.rubric, vf.Rubric)
    rows = env.get_eval_dataset()
    assert len(rows) == 2 and rows[0]["prompt"][0]["role"] == "system" and "find_customer" in rows[0]["prompt"][0]["content"]
    assert [r["info"]["seed"] for r in rows] == [0, 1]
    plans = {r["prompt"][1]["content"]: _solution(TOOL_ENV, r["info"]["seed"]) for r in rows}

    def reply(messages):  # plays each row's reference solution, one action per turn
        plan = plans[messages[1]["content"]]
        return plan[min(_turn(messages), len(plan) - 1)]

    out = env.evaluate_sync(client=scripted_client(reply), model="scripted", num_examples=2, rollouts_per_example=1)
    results = out["outputs"]
    assert [r["reward"] for r in results] == [1.0, 1.0]
    assert all(r["metrics"]["won"] == 1.0 for r in results)
    assert sorted(r["metrics"]["num_turns"] for r in results) == sorted(len(p) for p in plans.values())
    assert results[0]["completion"][-1] == {"role": "user", "content": results[0]["completion"][-1]["content"]}
    assert spade_vf.load_environment is not None


def test_a_wrong_answer_scores_its_return_and_the_last_capped_turn_is_judged():
    from spade_envs.integrations.verifiers import load_environment

    wrong = load_environment(ids=[TEXT_ENV], seeds=[0], max_turns=1)
    out = wrong.evaluate_sync(client=scripted_client(lambda m: r"\boxed{not the answer}"), model="m",
                              num_examples=1, rollouts_per_example=1)
    (r,) = out["outputs"]
    assert r["reward"] < 1.0 and r["metrics"]["won"] == 0.0 and r["metrics"]["num_turns"] == 1
    (answer,) = _solution(TEXT_ENV, 0)
    right = load_environment(ids=[TEXT_ENV], seeds=[0], max_turns=1)  # the single allowed turn still reaches the env
    out = right.evaluate_sync(client=scripted_client(lambda m: answer), model="m", num_examples=1, rollouts_per_example=1)
    assert out["outputs"][0]["reward"] == 1.0


def test_bad_arguments_are_one_clear_error():
    from spade_envs.errors import IntegrationError
    from spade_envs.integrations.verifiers import load_environment

    with pytest.raises(IntegrationError, match="split"):
        load_environment(ids=[TEXT_ENV], split="nope")
    with pytest.raises(IntegrationError, match="max_turns"):
        load_environment(ids=[TEXT_ENV], max_turns=0)
