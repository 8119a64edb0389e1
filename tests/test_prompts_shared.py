"""One prompt for everyone: the opening messages come from the environment, and the
agents' rollout loop (what `spade eval` runs), the TRL adapter and the OpenEnv server
(tests/test_integrations_openenv.py) all use them."""

from __future__ import annotations

import pytest

import spade_envs  # noqa: F401
from spade_envs.agents import Backend, Generation, PlayTask
from spade_envs.agents.rollout import LLMAgent
from spade_envs.gym_env import SpadeEnv
from spade_envs.integrations import trl_adapter


class Recorder(Backend):
    name = "recorder"

    def __init__(self, native: bool) -> None:
        self.native_tools = native
        self.first: list[list[dict]] = []

    def chat(self, conversations, *, tools=None, max_new_tokens=256, temperature=0.6, seed=None):
        if not self.first:
            self.first = [list(c) for c in conversations]
        return [Generation(text="\\boxed{0}", token_ids=[], logprobs=[], prompt_token_ids=[]) for _ in conversations]


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("env_id", ["spade/Env-00001", "spade/Env-00013", "spade/Env-00025"])
def test_the_rollout_loop_opens_with_the_environments_messages(env_id, native):
    backend = Recorder(native)
    LLMAgent(backend, temperature=0).play([PlayTask(env_id=env_id, seed=4, max_turns=1)])
    env = SpadeEnv(env_id)
    _, info = env.reset(seed=4)
    assert backend.first[0] == env.messages(native_tools=native)
    if not native:
        assert backend.first[0] == info["messages"]
        if info["tools"]:  # the fallback rendering lists the specs, the native one leaves them to the template
            assert info["tools"][0]["function"]["name"] in info["messages"][0]["content"]
    env.close()


def test_trl_rows_carry_the_environments_system_message():
    ds = trl_adapter.build_prompt_dataset(["spade/Env-00013", "spade/Env-00001"], seeds=[0])
    for row in ds:
        env = SpadeEnv(row["env_id"].rsplit("-v", 1)[0])
        env.reset(seed=row["seed"])
        assert row["prompt"][0] == env.messages(answer_tool=True)[0]
        env.close()
