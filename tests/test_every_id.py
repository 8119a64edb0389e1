"""A third-party script's view: loop over EVERY id under ``spade/`` in ``gym.registry``
and make, check, seed and play it, with nothing but Gymnasium's own API.

Games are made like everything else (a single-agent view against the built-in opponent);
their other opponents (``"random"``, a callable) and seats are checked too.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import spade_envs  # noqa: F401  (registers the spade/ namespace)
from spade_envs.episode import InvalidActionError
from registry_helpers import spade_home, synthetic_source  # noqa: F401  (fixture)

pytestmark = pytest.mark.filterwarnings("ignore:.*latest versioned environment")
IDS = sorted(i for i in gym.registry if i.startswith("spade/"))
GAME_IDS = [i for i in IDS if gym.make(i).unwrapped.is_game]


def test_the_namespace_holds_seeds_and_games(spade_home):
    """Every seed (games included) is under ``spade/``, and an entry added to the store
    joins the namespace a third-party script iterates."""
    from spade_envs.registry.catalog import seed_records
    from spade_envs.registry.store import Registry

    seeds = {str(r.env_id) for r in seed_records()}
    assert len(seeds) >= 30 and seeds <= set(IDS) and 6 <= len(GAME_IDS) and set(GAME_IDS) <= seeds
    with Registry.open(spade_home / "registry.sqlite3") as reg:
        added = str(reg.add(synthetic_source(7)).env_id)
    assert added not in seeds and added in {i for i in gym.registry if i.startswith("spade/")}


@pytest.mark.parametrize("env_id", IDS)
def test_make_check_seed_and_play(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    first, info = env.reset(seed=123)
    assert isinstance(first, str) and first and isinstance(info, dict)
    assert env.reset(seed=123)[0] == first  # same seed, same episode
    messages = info["messages"]
    assert [m["role"] for m in messages] == ["system", "user"] and messages[1]["content"] == first
    total, steps, ended = 0.0, 0, False
    while not ended and steps < 300:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample() if steps % 3 else "\\boxed{1}")
        assert isinstance(obs, str) and isinstance(reward, float) and isinstance(info, dict)
        assert info["turn"] == steps + 1
        ended, steps = terminated or truncated, steps + 1
        total += reward
    assert ended, f"{env_id}: random play did not end within 300 steps"
    assert ("terminated_by" in info) if terminated else (info.get("truncated_by") in {"max_turns", "env"})
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_the_reference_solution_wins_every_single_player_id(env_id):
    env = gym.make(env_id)
    if env.unwrapped.is_game:
        pytest.skip("games have a scripted move, not a winning line (see the opponent tests)")
    env.reset(seed=5)
    for action in env.unwrapped.solution_actions():
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert reward == 1.0 and terminated and info["terminated_by"] == "env"
    env.close()


def _first_legal(observation: str, legal: list[str] | None) -> str:
    return legal[0] if legal else "\\boxed{1}"


@pytest.mark.parametrize("env_id", GAME_IDS)
@pytest.mark.parametrize("opponent", ["scripted", "random", _first_legal])
def test_games_play_against_every_kind_of_opponent_from_both_seats(env_id, opponent):
    for seat in (0, 1):
        env = gym.make(env_id, opponent=opponent, seat=seat)
        obs, info = env.reset(seed=9)
        assert info["seat"] == seat and info["num_players"] >= 2
        assert env.reset(seed=9)[0] == obs
        ended, steps = False, 0
        while not ended and steps < 300:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.solution())
            assert -1.0 <= reward <= 1.0
            ended, steps = terminated or truncated, steps + 1
        assert ended
        env.close()


def test_the_scripted_baseline_beats_the_random_opponent_in_a_game():
    """The opponent really plays: scripted-vs-random wins more than scripted-vs-scripted loses."""
    wins = {}
    for opponent in ("random", "scripted"):
        score = 0.0
        for seed in range(12):
            env = gym.make("spade/Env-00025", opponent=opponent)  # Nim duel
            env.reset(seed=seed)
            ended, ret = False, 0.0
            while not ended:
                _, reward, terminated, truncated, _ = env.step(env.unwrapped.solution())
                ret += reward
                ended = terminated or truncated
            score += ret > 0
            env.close()
        wins[opponent] = score
    assert wins["random"] > wins["scripted"]


def test_bad_inputs_are_refused_with_one_clear_message():
    env = gym.make(IDS[0])
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="takes the action as text"):
        env.step(42)
    with pytest.raises(TypeError):
        env.step(None)
    assert env.step(b"\\boxed{1}")[4]["turn"] == 1  # bytes are UTF-8 text
    with pytest.raises(InvalidActionError, match="seed"):
        env.reset(seed="7")
    with pytest.raises(Exception, match="opponent must be"):
        gym.make(GAME_IDS[0], opponent="nobody")
    with pytest.raises(Exception, match="seat must be"):
        gym.make(GAME_IDS[0], seat=5)
