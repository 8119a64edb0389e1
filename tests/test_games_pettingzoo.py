"""Multi-player seed games through PettingZoo: api_test, seed_test, hidden views, errors."""

from __future__ import annotations

import warnings

import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from registry_helpers import spade_home  # noqa: F401

import spade_envs
from spade_envs.errors import EnvProgramError
from spade_envs.games.pettingzoo import TextObservation, make_aec, make_parallel
from spade_envs.games import is_multiplayer, is_multiplayer_source
from spade_envs.registry.catalog import resolve, seed_records

GAMES = [r for r in seed_records() if is_multiplayer(r)]
GAME_IDS = [r.env_id.base for r in GAMES]


def test_at_least_six_two_player_games_of_every_kind():
    assert len(GAMES) >= 6
    tags = [set(r.metadata["tags"]) for r in GAMES]
    for r in GAMES:
        assert r.metadata["num_players"] == 2 and r.metadata["skill"] == "multi-agent game"
        assert r.env_id.seq in range(25, 31)
        assert is_multiplayer_source(r.source)
    for needed in ("zero-sum", "cooperative", "perfect-information", "hidden-information", "simultaneous"):
        assert any(needed in t for t in tags), needed
    assert not any(is_multiplayer(r) for r in seed_records() if r.env_id.seq < 25)


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_api_test_and_seed_test(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(spade_envs.make_aec(env_id), num_cycles=60)
        seed_test(lambda: make_aec(env_id), num_cycles=60)


def test_parallel_api_for_the_simultaneous_game():
    sim = [r.env_id.base for r in GAMES if "simultaneous" in r.metadata["tags"]]
    assert sim
    for env_id in sim:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parallel_api_test(make_parallel(env_id), num_cycles=20)
            parallel_seed_test(lambda: make_parallel(env_id), num_cycles=20)
    with pytest.raises(EnvProgramError, match="gym.make"):
        make_parallel("spade/Env-00001")


def test_observations_are_private_views():
    env = make_aec("spade/Env-00027")  # number duel: each player sees only its own secret
    env.reset(seed=4)
    views = [env.observe(a)["observation"] for a in env.possible_agents]
    assert all(isinstance(v, TextObservation) and isinstance(v, str) for v in views)
    own = [v.split("Your secret number: ")[1].split(".")[0] for v in views]
    assert f"Your secret number: {own[1]}." not in views[0]
    assert f"Your secret number: {own[0]}." not in views[1]
    assert env.unwrapped.game.views() == [str(v) for v in views]
    env.close()


def test_a_scripted_game_through_aec_ends_with_zero_sum_rewards():
    env = make_aec("spade/Env-00025")
    env.reset(seed=2)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter(200):
        _, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        env.step(None if term or trunc else env.unwrapped.game.scripted_action())
    assert sorted(totals.values()) == [-1.0, 1.0]
    assert env.agents == []


def test_single_player_id_and_unknown_id_are_clear_errors():
    with pytest.raises(EnvProgramError, match="gym.make"):
        spade_envs.make_aec("spade/Env-00001")
    with pytest.raises(spade_envs.UnknownEnvironmentError):
        spade_envs.make_aec("spade/Env-09999")
    assert resolve("spade/Env-00030").metadata["num_players"] == 2


def test_a_stored_game_is_an_ordinary_entry_and_plays_sandboxed(spade_home):  # noqa: F811
    from spade_envs.evals.games import game_ids
    from spade_envs.registry.store import Registry

    source = resolve("spade/Env-00025").source.replace('"Nim Duel"', '"Nim Duel Copy"')
    with Registry.open() as reg:
        env_id = reg.add(source, filename="nim_copy.py").env_id.base
    record = resolve(env_id)
    assert not record.trusted and is_multiplayer(record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(make_aec(env_id), num_cycles=20)  # untrusted: runs in the sandbox
    assert env_id in game_ids()
