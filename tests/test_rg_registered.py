"""spade environments as real reasoning-gym datasets: everything here goes through
reasoning-gym's own API (factory, score function, composites, curricula)."""

from __future__ import annotations

import pytest

rg = pytest.importorskip("reasoning_gym")

import spade_envs  # noqa: E402
from reasoning_gym.composite import CompositeConfig, CompositeDataset, DatasetSpec  # noqa: E402
from reasoning_gym.dataset import ProceduralDataset  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def registered():
    names = spade_envs.register_reasoning_gym()
    assert "spade/Env-00002" in names and "spade/Env-00013" not in names  # tool use is not single-answer
    assert spade_envs.register_reasoning_gym() == names  # idempotent
    return names


def test_create_dataset_through_reasoning_gym():
    ds = rg.create_dataset("spade/Env-00002", size=3, seed=5, difficulty=1)
    assert isinstance(ds, ProceduralDataset) and len(ds) == 3
    entries = list(ds)
    assert len(entries) == 3 and all(e["question"] and e["answer"] for e in entries)
    assert entries[0]["metadata"]["source_dataset"] == "spade/Env-00002"
    assert entries[0]["metadata"]["env_kwargs"] == {"difficulty": 1}
    again = rg.create_dataset("spade/Env-00002", size=3, seed=5, difficulty=1)
    assert again[1] == entries[1]  # deterministic


def test_score_answer_fn_is_the_environment_judging():
    ds = rg.create_dataset("spade/Env-00002", size=2, seed=3, difficulty=0)
    score = rg.get_score_answer_fn("spade/Env-00002")
    entry = ds[0]
    assert score(entry["answer"], entry) == 1.0
    assert score(str(int(entry["answer"]) + 1), entry) < 1.0
    assert score(None, entry) == 0.0


def test_config_is_checked_against_the_program_schema():
    with pytest.raises(Exception, match="difficulty"):
        rg.create_dataset("spade/Env-00002", size=2, seed=0, difficulty=99)
    with pytest.raises(TypeError):
        rg.create_dataset("spade/Env-00002", size=2, no_such_parameter=1)


def test_composite_mixes_spade_and_native_datasets():
    config = CompositeConfig(size=6, seed=11, datasets=[
        DatasetSpec("spade/Env-00001", 1.0, {"difficulty": 0}),
        DatasetSpec("spade/Env-00007", 1.0, {"difficulty": 0}),
        DatasetSpec("basic_arithmetic", 1.0, {}),
    ])
    comp = CompositeDataset(config)
    sources = set()
    for entry in comp:
        sources.add(entry["metadata"]["source_dataset"])
        assert comp.score_answer(entry["answer"], entry) == 1.0
    assert any(s.startswith("spade/") for s in sources)


def test_curriculum_raises_difficulty():
    from reasoning_gym.factory import has_curriculum

    assert has_curriculum("spade/Env-00002")
    cur = rg.factory.create_curriculum("spade/Env-00002")
    first = cur.generate_configuration({"seed": 1, "size": 2})
    assert first.difficulty == 0
    assert cur.increment_attr_level("difficulty")
    second = cur.generate_configuration({"seed": 1, "size": 2})
    assert second.difficulty == 1
    ds = rg.create_dataset("spade/Env-00002", **{k: getattr(second, k) for k in ("seed", "size", "difficulty")})
    assert ds[0]["metadata"]["env_kwargs"] == {"difficulty": 1}
