"""TRL adapter, issue 30: per-row environment keywords (a difficulty curriculum) in the
prompt dataset, and ready ``reward_funcs`` (:mod:`spade_envs.integrations.trl_rewards`)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("datasets")

from spade_envs.errors import IntegrationError  # noqa: E402
from spade_envs.gym_env import SpadeEnv  # noqa: E402
from spade_envs.integrations import trl_adapter as ta  # noqa: E402
from spade_envs.integrations.trl_rewards import REWARD_FUNCS, episode_return, finished, won  # noqa: E402

LEVELS = [{"difficulty": 0}, {"difficulty": 3}]


def _reset_args(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "environment"}  # what TRL passes to reset(**row)


def test_levels_are_rows_in_curriculum_order_and_reach_the_program():
    ds = ta.build_prompt_dataset(["spade/Env-00001", "spade/Env-00016"], seeds=2, env_kwargs=LEVELS)
    assert len(ds) == 8 and ds["level"] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [json.loads(k) for k in ds["env_kwargs"]] == [LEVELS[0]] * 4 + [LEVELS[1]] * 4
    factories = ta.environment_factories(ds)
    for row in (ds[0], ds[4], ds[2], ds[6]):
        env = factories[row["environment"]]()
        obs = env.reset(**_reset_args(row))
        direct = SpadeEnv(row["env_id"].rsplit("-v", 1)[0], env_kwargs=json.loads(row["env_kwargs"]))
        assert obs == direct.reset(seed=row["seed"])[0]  # the row's difficulty reached the program
        direct.close()
        env._close()
    easy, hard = ds[0], ds[4]
    assert easy["env_id"] == hard["env_id"] and easy["seed"] == hard["seed"]
    e = factories[easy["environment"]]()
    assert e.reset(**_reset_args(easy)) != e.reset(**_reset_args(hard))


def test_saved_dataset_rebuilds_factories_with_levels():
    ds = ta.build_prompt_dataset("spade/Env-00016", seeds=1, env_kwargs=LEVELS)
    saved = ds.to_list()
    name = saved[0]["environment"]
    ta._FACTORIES.pop(name, None)
    from datasets import Dataset

    rebuilt = ta.environment_factories(Dataset.from_list(saved))
    env = rebuilt[name]()
    assert env.reset(**_reset_args(saved[1])).startswith(SpadeEnv("spade/Env-00016", env_kwargs=LEVELS[1])
                                                          .reset(seed=0)[0][:40])


def test_ready_reward_funcs():
    ds = ta.build_prompt_dataset("spade/Env-00001", seeds=1, env_kwargs={"difficulty": 1})
    factory = ta.environment_factories(ds)[ds[0]["environment"]]
    solved, wrong, idle = factory(), factory(), factory()
    for env in (solved, wrong, idle):
        env.reset(**_reset_args(ds[0]))
    direct = SpadeEnv("spade/Env-00001", env_kwargs={"difficulty": 1})
    direct.reset(seed=ds[0]["seed"])
    (answer,) = direct.solution_actions()
    direct.close()
    solved.answer(answer)
    wrong.answer("\\boxed{-1}")
    envs = [solved, wrong, idle, object()]  # a rollout of some other environment kind: None
    assert won(environments=envs) == [1.0, 0.0, 0.0, None]
    assert episode_return(environments=envs)[:3] == [1.0, wrong.get_reward(), 0.0] and wrong.get_reward() < 1.0
    assert finished(environments=envs)[0] == 1.0 and finished(environments=envs)[2] == 0.0
    assert REWARD_FUNCS == [won, finished] and won(prompts=["p"], completions=["c"], environments=[]) == []


def test_bad_env_kwargs_are_one_clear_error():
    with pytest.raises(IntegrationError, match="env_kwargs"):
        ta.build_prompt_dataset("spade/Env-00001", seeds=1, env_kwargs=[])
    with pytest.raises(IntegrationError, match="JSON"):
        ta.parse_env_kwargs("{not json")
