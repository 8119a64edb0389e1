"""TRL's newer environment contract: the environment owns the data and the reward
(``GRPOTrainer(environment_factory=one factory)``, no ``train_dataset``, no ``reward_funcs``),
and a dict of factories mixing a text and a tool environment, also without reward
functions. Both take real GRPO steps with the tiny model on CPU."""

from __future__ import annotations

import pickle
import re

import pytest

import spade_envs  # noqa: F401
from spade_envs.errors import IntegrationError
from spade_envs.integrations import trl_adapter
from spade_envs.integrations.trl_owned import environment_factory

pytest.importorskip("trl")


def test_schedule_groups_resets_and_prefixes_the_system_message():
    factory = environment_factory(["spade/Env-00001", "spade/Env-00002"], seeds=[0, 1], group=2,
                                  env_kwargs={"difficulty": 0})
    factory = pickle.loads(pickle.dumps(factory))  # AsyncGRPO pickles it
    envs = [factory() for _ in range(4)]
    texts = [e.reset(prompt=[{"role": "user", "content": ""}]) for e in envs]
    played = [(e.env_id, e.seed) for e in envs]
    assert played[0] == played[1] and played[2] == played[3] and played[0] != played[2]
    assert played[0] == ("spade/Env-00001-v0", 0) and played[2] == ("spade/Env-00001-v0", 1)
    assert all(t.endswith(e.trajectory[0]["observation"]) and "answer" in t.split("\n\n")[0] for t, e in zip(texts, envs))
    row = factory().reset(env_id="spade/Env-00002", seed=5)  # a dataset row still wins
    assert "\n\n" not in row[:1]


def test_several_tool_classes_need_a_dict():
    with pytest.raises(IntegrationError, match="dict of factories"):
        environment_factory(["spade/Env-00013", "spade/Env-00016"], seeds=1)


def _trainer(tmp_path, **kwargs):
    from trl import GRPOConfig, GRPOTrainer

    from spade_envs.agents.models import load_model

    model, tokenizer = load_model("tiny-random", device="cpu")
    trl_adapter.install_tool_chat_template(tokenizer)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_steps=2, logging_steps=1, report_to="none", use_cpu=True,
                      save_strategy="no", max_tool_calling_iterations=1, seed=0)
    return GRPOTrainer(model=model, args=args, processing_class=tokenizer, **kwargs)


@pytest.mark.slow  # ~20 s: two GRPO steps on CPU
def test_grpo_steps_with_environment_owned_data_and_reward(tmp_path):
    factory = environment_factory("spade/Env-00002", seeds=range(4), group=2, env_kwargs={"difficulty": 0})
    trainer = _trainer(tmp_path, environment_factory=factory)  # no train_dataset, no reward_funcs
    trainer.train()
    assert trainer.state.global_step == 2
    log = trainer.state.log_history[0]
    assert any(re.match(r"rewards/SpadeTextEnv\w*/mean", k) for k in log)
    played = {(e.env_id, e.seed) for pool in trainer._environment_pool.values() for e in pool if e.env_id}
    assert played and all(env_id == "spade/Env-00002-v0" for env_id, _ in played)
    assert factory.schedule.calls >= 4


@pytest.mark.slow  # ~20 s: two GRPO steps on CPU
def test_grpo_steps_with_a_dict_of_factories_and_no_reward_funcs(tmp_path):
    ds = trl_adapter.build_prompt_dataset(["spade/Env-00002", "spade/Env-00013"], seeds=[0])
    factories = trl_adapter.environment_factories(ds)
    assert len(factories) == 2
    trainer = _trainer(tmp_path, train_dataset=ds, environment_factory=factories)
    trainer.train()
    assert trainer.state.global_step == 2
    keys = [k for k in trainer.state.log_history[0] if k.startswith("rewards/") and k.endswith("/mean")]
    assert len(keys) == 2  # one environment-owned reward column per class
