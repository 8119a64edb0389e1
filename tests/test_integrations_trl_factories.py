"""TRL adapter factories: one class per environment (per-seed tool variations inside it),
the prompt from the environment, and factories that survive AsyncGRPO's pickling into a
spawned child process, where TRL's own tool discovery and a reference play must work."""

from __future__ import annotations

import inspect
import multiprocessing as mp
import pickle

import pytest

import spade_envs  # noqa: F401
from spade_envs.actions import extract_answer, parse_tool_calls
from spade_envs.gym_env import SpadeEnv
from spade_envs.integrations import trl_adapter

TOOL_ENVS = [f"spade/Env-{i:05d}" for i in range(13, 21)]


def _tool_names(instance) -> list[str]:
    """What TRL (GRPOTrainer and AsyncGRPO's rollout worker) exposes as tools."""
    return sorted(n for n, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
                  if n not in ("reset", "get_reward") and not n.startswith("_"))


def _play(instance, row) -> float:
    instance.reset(**{k: v for k, v in row.items() if k != "environment"})
    for action in instance._env.solution_actions():
        answer = extract_answer(action)
        if answer is not None:
            instance.answer(answer)
            continue
        calls = parse_tool_calls(action)
        if not calls:
            instance.answer(action)
        for call in calls:
            getattr(instance, call.name)(**call.arguments)
    return instance.get_reward()


def _child(blob: bytes, rows: list[dict]) -> list[tuple[str, list[str], float]]:
    factories = pickle.loads(blob)
    out = []
    for row in rows:
        instance = factories[row["environment"]]()
        out.append((type(instance).__name__, _tool_names(instance), _play(instance, row)))
    return out


@pytest.fixture(scope="module")
def dataset():
    return trl_adapter.build_prompt_dataset(TOOL_ENVS + ["spade/Env-00001", "spade/Env-00002"], seeds=range(16))


def test_one_class_per_environment_whatever_the_seeds(dataset):
    factories = trl_adapter.environment_factories(dataset)
    assert len(dataset) == 10 * 16
    assert len(factories) == len(TOOL_ENVS) + 1  # 8 tool environments + the shared text-only class
    for env_id in TOOL_ENVS:
        names = {r["environment"] for r in dataset if r["env_id"] == f"{env_id}-v0"}
        assert len(names) == 1, env_id


def test_seed_dependent_tools_are_one_merged_class_and_every_seed_wins(dataset):
    factories = trl_adapter.environment_factories(dataset)
    varying = []
    for env_id in TOOL_ENVS:
        env = SpadeEnv(env_id)
        specs = {str(env.reset(seed=s)[1]["tools"]) for s in range(16)}
        env.close()
        if len(specs) > 1:
            varying.append(env_id)
    assert varying, "the seed suite has environments whose tool specs vary with the seed"
    for env_id in varying:
        rows = [r for r in dataset if r["env_id"] == f"{env_id}-v0"]
        instance = factories[rows[0]["environment"]]()
        for row in rows[:6]:
            assert _play(instance, row) == 1.0, (env_id, row["seed"])


def test_the_prompt_is_the_environments_own(dataset):
    row = next(r for r in dataset if r["env_id"] == "spade/Env-00013-v0")
    env = SpadeEnv("spade/Env-00013")
    env.reset(seed=row["seed"])
    assert row["prompt"][0] == env.messages(answer_tool=True)[0]
    assert row["prompt"][0]["content"].startswith(env.messages()[0]["content"].split("\n\n")[0])
    env.close()


def test_factories_pickle_into_a_spawned_child_as_async_grpo_does(dataset):
    factories = trl_adapter.environment_factories(dataset)
    blob = pickle.dumps(factories)
    rows = []
    for name in factories:
        rows.append(next(r for r in dataset if r["environment"] == name))
    here = [(type(f()).__name__, _tool_names(f()), None) for f in (factories[r["environment"]] for r in rows)]
    with mp.get_context("spawn").Pool(1) as pool:
        there = pool.apply(_child, (blob, rows))
    assert [(n, t) for n, t, _ in there] == [(n, t) for n, t, _ in here]
    assert all(reward == 1.0 for _, _, reward in there)
