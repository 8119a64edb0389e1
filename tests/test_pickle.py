"""Environments pickle and unpickle in ANOTHER process (spawned, as Ray, AsyncGRPO and
async vector envs do): seeds, sandboxed store entries, sources, games, gym.make wrappers.

The pickled form is id/version (or source) + the episode so far; the child replays it
and must continue exactly where the parent stopped: same observation, same remaining
steps, same final reward.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import warnings

import gymnasium as gym
import pytest

import spade_envs  # noqa: F401
from spade_envs.gym_env import SpadeEnv
from spade_envs.registry.catalog import resolve
from tests.registry_helpers import spade_home  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:.*latest versioned environment")


def _continue(blob: bytes, actions: list[str]) -> dict:
    """In the child: unpickle, report where the episode stands, play ``actions``."""
    import spade_envs  # noqa: F401  (registers the ids, as any user script does)

    env = pickle.loads(blob)
    base = env.unwrapped
    out = {"render": base._last_obs, "turns": base.turns, "steps": [], "sandboxed": type(base._runtime).__name__}
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out["steps"].append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    env.close()
    return out


def _round_trip(env, actions_before: list[str], actions_after: list[str]) -> tuple[list, dict]:
    """Play ``actions_before`` here, then continue here and (from the pickle) in a child."""
    for action in actions_before:
        env.step(action)
    blob = pickle.dumps(env)
    here = []
    for action in actions_after:
        obs, reward, terminated, truncated, _ = env.step(action)
        here.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    with mp.get_context("spawn").Pool(1) as pool:
        there = pool.apply(_continue, (blob, actions_after))
    return here, there


def test_a_seed_environment_continues_in_another_process():
    env = gym.make("spade/Env-00021")  # lights out: a multi-step solution
    env.reset(seed=7)
    actions = env.unwrapped.solution_actions()
    assert len(actions) >= 2
    here, there = _round_trip(env, actions[:1], actions[1:])
    assert there["turns"] == 1 and there["steps"] == here
    assert here[-1][1] == 1.0 and here[-1][2]  # the rest of the solution still wins over there


def test_a_sandboxed_store_entry_continues_in_another_process(spade_home):  # noqa: F811
    from spade_envs.registry.store import Registry

    source = resolve("spade/Env-00013").source.replace("Bank Ledger", "Bank Ledger Pickled")
    with Registry.open() as reg:
        env_id = reg.add(source, filename="ledger_copy.py").env_id.base
    env = SpadeEnv(env_id)
    assert type(env._runtime).__name__ == "SandboxRuntime"
    env.reset(seed=3)
    actions = env.solution_actions()
    assert len(actions) >= 2
    here, there = _round_trip(env, actions[:-1], actions[-1:])
    assert there["sandboxed"] == "SandboxRuntime" and there["turns"] == len(actions) - 1
    assert there["steps"] == here and here[-1][1] == 1.0
    env.close()


def test_a_source_environment_and_a_game_view_continue_in_another_process():
    source = resolve("spade/Env-00002").source
    env = SpadeEnv(source=source)  # untrusted source: sandboxed, pickled with its source
    env.reset(seed=5)
    here, there = _round_trip(env, ["I am not sure"], env.solution_actions())
    assert there["steps"] == here and there["turns"] == 1
    env.close()

    game = gym.make("spade/Env-00027", opponent="random")
    game.reset(seed=2)
    moves = ["\\boxed{20}", "\\boxed{10}", "\\boxed{30}"]
    here, there = _round_trip(game, moves[:1], moves[1:])
    assert there["steps"] == here


def test_an_unstarted_environment_pickles_and_reset_draws_the_same_seed():
    env = gym.make("spade/Env-00001")
    env.reset(seed=11)
    env.step("junk")
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.turns == 1 and clone.unwrapped._last_obs == env.unwrapped._last_obs
    # the np_random state travels too: an unseeded reset gives the same episode on both
    assert clone.reset()[0] == env.reset()[0]
    fresh = pickle.loads(pickle.dumps(SpadeEnv("spade/Env-00001")))
    assert fresh.turns == 0 and fresh.reset(seed=4)[0] == SpadeEnv("spade/Env-00001").reset(seed=4)[0]


def test_async_vector_env_works_with_spawn():
    envs = gym.make_vec("spade/Env-00001", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"context": "spawn"})
    try:
        obs, _ = envs.reset(seed=[0, 1])
        assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
    finally:
        envs.close()
