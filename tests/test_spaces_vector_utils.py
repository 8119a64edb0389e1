"""Every space spade-envs defines works with every ``gymnasium.vector.utils`` function and
with SuperSuit's vector wrappers (SuperSuit itself, not a copy of its calls)."""

from __future__ import annotations

import multiprocessing as mp

import pytest
from gymnasium import spaces
from gymnasium.vector import utils as vu

import spade_envs
from spade_envs.spaces import TextList, UnicodeText

SPACES = {
    "text": (UnicodeText(40), ("Guess: 12 < x?", "ßλ→✓中", "")),
    "text_list": (TextList(200), (("\\boxed{1}", "λ"), (), ("a",))),
    "dict": (
        spaces.Dict({"observation": UnicodeText(40), "legal_actions": TextList(200)}),
        {"observation": ("a", "bé", "c"), "legal_actions": (("x",), (), ("y", "z"))},
    ),
}


def _items(batch, space):
    if isinstance(space, spaces.Dict):
        return [{k: batch[k][i] for k in batch} for i in range(3)]
    return list(batch)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_every_vector_util(name):
    space, batch = SPACES[name]
    items = _items(batch, space)
    assert list(vu.iterate(space, batch)) == items  # SuperSuit iterates the single space
    assert list(vu.iterate(vu.batch_space(space, 3), batch)) == items
    empty = vu.create_empty_array(space, 3)
    out = vu.concatenate(space, items, empty)
    assert out == batch
    assert vu.batch_differing_spaces([space, space]) is not None
    for ctx in (mp.get_context("spawn"), None):
        shm = vu.create_shared_memory(space, n=3, ctx=ctx)
        for i, item in enumerate(items):
            vu.write_to_shared_memory(space, i, item, shm)
        read = vu.read_from_shared_memory(space, shm, n=3)
        assert _items({k: tuple(v) for k, v in read.items()} if isinstance(read, dict) else tuple(read), space) == items


def test_iterate_refuses_a_single_string():
    with pytest.raises(TypeError, match="batch"):
        list(vu.iterate(UnicodeText(), "abc"))


def test_text_list_shared_memory_overflow_is_one_clear_error():
    space = TextList(10)
    shm = vu.create_shared_memory(space, n=1)
    with pytest.raises(ValueError, match="does not fit"):
        vu.write_to_shared_memory(space, 0, ("a" * 20,), shm)


GAME = "spade/Env-00026"  # Connect Four: a two-player game that lists its legal moves


def test_supersuit_markov_vector_env_steps():
    ss = pytest.importorskip("supersuit")
    env = spade_envs.make_parallel(GAME)
    venv = ss.pettingzoo_env_to_vec_env_v1(env)
    obs, infos = venv.reset(seed=0)
    assert len(obs["observation"]) == venv.num_envs
    for _ in range(3):
        legal = [moves[0] if moves else "pass" for moves in obs["legal_actions"]]
        obs, rew, term, trunc, infos = venv.step(legal)
        assert len(rew) == venv.num_envs and all(isinstance(o, str) for o in obs["observation"])
    venv.close()


@pytest.mark.parametrize("num_cpus", [0, 1])
def test_supersuit_concat_vec_envs(num_cpus):
    ss = pytest.importorskip("supersuit")
    env = spade_envs.make_parallel(GAME)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(env), 2, num_cpus=num_cpus, base_class="gymnasium")
    try:
        obs, infos = venv.reset(seed=0)
        assert len(obs["observation"]) == venv.num_envs
        for _ in range(2):
            legal = [moves[0] if moves else "pass" for moves in obs["legal_actions"]]
            obs, rew, term, trunc, infos = venv.step(legal)
            assert len(rew) == venv.num_envs
            assert all(isinstance(o, str) and o for o in obs["observation"])
    finally:
        venv.close()
