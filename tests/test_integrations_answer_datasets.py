"""reasoning-gym-shaped datasets of single-answer environments (issue 30):
``spade_envs.create_dataset(name, size=, seed=, **config)`` and
``spade_envs.score_answer(answer, entry)``, compared with reasoning-gym's own datasets
when the package is installed."""

from __future__ import annotations

import pytest

import spade_envs
from spade_envs.errors import IntegrationError
from spade_envs.parameters import InvalidParametersError

NAME = "spade/Env-00001"


def test_shape_determinism_and_scoring():
    ds = spade_envs.create_dataset(NAME, size=5, seed=7, difficulty=1)
    assert len(ds) == 5 and len(list(ds)) == 5
    entry = ds[2]
    assert set(entry) == {"question", "answer", "metadata"}
    assert isinstance(entry["question"], str) and isinstance(entry["answer"], str) and "\\boxed" not in entry["answer"]
    meta = entry["metadata"]
    assert meta["source_dataset"] == NAME and meta["source_index"] == 2 and meta["seed"] == 9
    assert meta["env_kwargs"] == meta["difficulty"] == {"difficulty": 1}
    assert spade_envs.create_dataset(NAME, size=5, seed=7, difficulty=1)[2] == entry  # deterministic
    assert ds[-1] == ds[4]
    assert spade_envs.score_answer(entry["answer"], entry) == 1.0
    assert spade_envs.score_answer(f"\\boxed{{{entry['answer']}}}", entry) == 1.0
    assert ds.score_answer(entry["answer"] + "9", entry) == 0.0
    assert spade_envs.score_answer(None, entry) == 0.0 and spade_envs.score_answer("", entry) == 0.0
    other = spade_envs.create_dataset(NAME, size=1, seed=7, difficulty=3)[0]
    assert other["question"] != ds[0]["question"]  # the config reaches the program


def test_refusals_are_one_clear_error():
    with pytest.raises(IntegrationError, match="tools"):
        spade_envs.create_dataset("spade/Env-00013", size=2, seed=0)
    with pytest.raises(IntegrationError, match="game"):
        spade_envs.create_dataset("spade/Env-00025", size=2, seed=0)
    with pytest.raises(InvalidParametersError):
        spade_envs.create_dataset(NAME, size=2, seed=0, difficulty=99)
    with pytest.raises(IntegrationError, match="size"):
        spade_envs.create_dataset(NAME, size=0)
    with pytest.raises(IntegrationError, match="create_dataset"):
        spade_envs.score_answer("1", {"question": "q", "answer": "1", "metadata": {}})
    with pytest.raises(IndexError):
        spade_envs.create_dataset(NAME, size=2, seed=0)[2]


def test_same_shape_as_reasoning_gym():
    rg = pytest.importorskip("reasoning_gym")
    theirs = rg.create_dataset("leg_counting", size=3, seed=1)
    ours = spade_envs.create_dataset(NAME, size=3, seed=1)
    t, o = theirs[0], ours[0]
    assert set(t) == set(o) and all(type(t[k]) is type(o[k]) for k in t)
    assert {"source_dataset", "source_index", "difficulty"} <= set(t["metadata"]) & set(o["metadata"])
    assert len(theirs) == len(ours) and [type(x) for x in theirs] == [type(x) for x in ours]
    # the same call shape scores both: score_answer(answer, entry) -> float in [0, 1]
    assert theirs.score_answer(t["answer"], t) == ours.score_answer(o["answer"], o) == 1.0
    assert theirs.score_answer(None, t) == ours.score_answer(None, o) == 0.0
