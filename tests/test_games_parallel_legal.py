"""PettingZoo for every game (issue 30): ``spade_envs.make_parallel`` of turn-based and
simultaneous games passes PettingZoo's ``parallel_api_test`` (and ``api_test`` through
``make_aec``), and legal moves appear in observations and infos where a game lists them,
also in the single-agent Gymnasium view."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import spade_envs
from spade_envs.games import is_multiplayer
from spade_envs.registry.catalog import seed_records

GAME_IDS = [r.env_id.base for r in seed_records() if is_multiplayer(r)]


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_parallel_api_test_for_every_game(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(spade_envs.make_parallel(env_id), num_cycles=30)
        parallel_seed_test(lambda: spade_envs.make_parallel(env_id), num_cycles=20)


def test_turn_based_parallel_plays_only_the_agent_to_move_with_legal_moves():
    env = spade_envs.make_parallel("spade/Env-00025")  # nim duel: turn-based, lists its moves
    obs, infos = env.reset(seed=3)
    assert env.observation_space("player_0").contains(obs["player_0"])
    mover = next(a for a in env.agents if infos[a]["to_move"])
    other = next(a for a in env.agents if a != mover)
    legal = obs[mover]["legal_actions"]
    assert legal and list(legal) == infos[mover]["legal_actions"] and obs[other]["legal_actions"] == ()
    before = obs[other]["observation"]
    obs, rewards, terms, truncs, infos = env.step({mover: legal[0], other: "ignored: not my turn"})
    assert not any(terms.values()) and "ignored" not in before
    assert infos[other]["to_move"] and obs[other]["legal_actions"] and obs[mover]["legal_actions"] == ()
    while env.agents:  # play legal moves to the end: the game finishes with every agent done
        mover = next(a for a in env.agents if infos[a]["to_move"])
        obs, rewards, terms, truncs, infos = env.step({mover: obs[mover]["legal_actions"][0]})
    assert all(terms.values()) and all(i["legal_actions"] == [] for i in infos.values())
    env.close()


def test_aec_observation_and_info_carry_legal_moves():
    env = spade_envs.make_aec("spade/Env-00026")  # connect four mini
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(env, num_cycles=30)
    env.reset(seed=1)
    agent = env.agent_selection
    obs, _, _, _, info = env.last()
    assert obs["legal_actions"] == tuple(info["legal_actions"]) and len(obs["legal_actions"]) >= 3
    waiting = next(a for a in env.agents if a != agent)
    assert env.observe(waiting)["legal_actions"] == ()
    env.close()


def test_simultaneous_game_lists_moves_for_every_agent():
    env = spade_envs.make_parallel("spade/Env-00030")  # colonel blotto
    obs, infos = env.reset(seed=0)
    assert all(o["legal_actions"] and i["to_move"] for o, i in zip(obs.values(), infos.values()))
    env.close()


def test_gym_view_info_has_the_agents_legal_moves():
    env = gym.make("spade/Env-00025")
    _, info = env.reset(seed=2)
    assert info["legal_actions"] and all("\\boxed{" in a for a in info["legal_actions"])
    _, _, terminated, truncated, info = env.step(info["legal_actions"][0])
    assert "legal_actions" in info and (info["legal_actions"] or terminated or truncated)
    env.close()
