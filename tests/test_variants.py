"""Registry variants: a parent (id + version) plus fixed kwargs, with an id of its own."""

from __future__ import annotations

import json
import sqlite3

import gymnasium as gym
import pytest

from spade_envs.errors import UnknownEnvironmentError
from spade_envs.parameters import InvalidParametersError
from spade_envs.registry.store import Registry
from spade_envs.registry.variants import VariantError

from registry_helpers import spade_home, synthetic_source  # noqa: F401 - fixture
from variant_programs import SUM_SOURCE


@pytest.fixture
def reg(tmp_path):
    r = Registry.open(tmp_path / "store.sqlite3")
    yield r
    r.close()


def test_add_get_lineage(reg):
    parent = reg.add(SUM_SOURCE, generation=1)
    res = reg.add_variant(str(parent.env_id), {"n_terms": 5}, generation=2, metadata={"why": "harder"},
                          regret=0.25, win_rate_hint=0.75, win_rate_plain=0.5, designer_model="scripted")
    assert res.new and res.env_id != parent.env_id and res.env_id.version == 0
    rec = reg.get(res.env_id)
    assert rec.parent == "spade/Env-01000-v0" and rec.is_variant
    assert rec.params == {"n_terms": 5, "max_value": 50, "max_turns": 2}  # the full point
    assert rec.source == SUM_SOURCE and rec.class_name == "KnobSumEnv"
    assert rec.generation == 2 and rec.skill == "arithmetic"
    m = rec.metadata
    assert m["lineage"] == ["spade/Env-01000-v0"] and m["parent_ids"] == ["spade/Env-01000-v0"]
    assert m["why"] == "harder" and m["regret"] == 0.25 and m["win_rate_plain"] == 0.5
    assert m["designer_model"] == "scripted"
    plain = reg.get(parent.env_id)
    assert plain.parent is None and plain.params == {} and not plain.is_variant
    assert [r.env_id for r in reg.list()] == [parent.env_id, res.env_id]


def test_dedupe_identical_parent_and_params(reg):
    parent = reg.add(SUM_SOURCE)
    first = reg.add_variant(parent.env_id.base, {"n_terms": 4, "max_value": 80})
    again = reg.add_variant(str(parent.env_id), {"max_value": 80, "n_terms": 4.0, "max_turns": 2})
    assert again.env_id == first.env_id and not again.new
    other = reg.add_variant(str(parent.env_id), {"n_terms": 4, "max_value": 81})
    assert other.new and other.env_id != first.env_id
    defaults = reg.add_variant(str(parent.env_id), {"n_terms": 3})  # the parent's defaults: the parent
    assert defaults.env_id == parent.env_id and not defaults.new
    # the plain source is still deduplicated against the parent, not against its variants
    assert reg.add(SUM_SOURCE).env_id == parent.env_id
    assert len(reg.list()) == 3


def test_variant_of_variant_flattens(reg):
    parent = reg.add(SUM_SOURCE)
    v1 = reg.add_variant(str(parent.env_id), {"n_terms": 6})
    v2 = reg.add_variant(str(v1.env_id), {"max_value": 500})
    rec = reg.get(v2.env_id)
    assert rec.parent == str(parent.env_id)
    assert rec.params == {"n_terms": 6, "max_value": 500, "max_turns": 2}
    assert rec.metadata["lineage"] == [str(v1.env_id), str(parent.env_id)]
    assert rec.metadata["parent_ids"] == [str(v1.env_id)]
    same = reg.add_variant(str(parent.env_id), {"n_terms": 6, "max_value": 500})
    assert same.env_id == v2.env_id and not same.new


def test_bad_variants_fail_clearly_and_write_nothing(reg):
    parent = reg.add(SUM_SOURCE)
    with pytest.raises(InvalidParametersError, match="n_terms") as info:
        reg.add_variant(str(parent.env_id), {"n_terms": 99})
    assert info.value.name == "n_terms"
    with pytest.raises(InvalidParametersError, match="colour"):
        reg.add_variant(str(parent.env_id), {"colour": "red"})
    with pytest.raises(VariantError, match="PARAMETERS"):
        reg.add_variant(str(reg.add(synthetic_source(1)).env_id), {"max_turns": 2})
    with pytest.raises(UnknownEnvironmentError, match="Env-09999"):
        reg.add_variant("spade/Env-09999", {"n_terms": 4})
    with pytest.raises(UnknownEnvironmentError, match="Env-00999"):
        reg.add_variant("spade/Env-00999", {"n_terms": 4})
    with pytest.raises(InvalidParametersError):
        reg.add_variant(str(parent.env_id), {"n_terms": "four"})
    assert all(not r.is_variant for r in reg.list())


def _seed_with_parameters():
    from spade_envs.parameters import schema_of
    from spade_envs.registry.catalog import seed_records

    for rec in seed_records():
        if "ToolUseBaseEnv" not in rec.source and schema_of(rec.source) and "num_players" not in rec.source:
            return rec
    return None


def test_seed_parent(reg):
    seed = _seed_with_parameters()
    if seed is None:
        pytest.skip("no seed declares PARAMETERS on this branch yet")
    from spade_envs.parameters import defaults, sample_points, schema_of

    schema = schema_of(seed.source)
    point = sample_points(schema, 1)[0]
    res = reg.add_variant(seed.env_id.base, point)
    rec = reg.get(res.env_id)
    assert res.new and rec.parent == str(seed.env_id) and rec.source == seed.source
    assert rec.params == {**defaults(schema), **point}


def test_gym_make_needs_no_kwargs(spade_home):  # noqa: F811 - fixture
    reg = Registry.open()
    parent = reg.add(SUM_SOURCE)
    res = reg.add_variant(str(parent.env_id), {"n_terms": 6, "max_value": 900})
    env = gym.make(str(res.env_id))
    try:
        assert env.spec.kwargs["env_kwargs"]["n_terms"] == 6 and env.spec.kwargs["env_kwargs"]["max_value"] == 900
        obs, info = env.reset(seed=3)
        assert info["n_terms"] == 6 and obs.count("+") == 5
        assert env.unwrapped.env_id == res.env_id.base
        obs, reward, *_ = env.step(env.unwrapped.solution())
        assert reward == 1.0
    finally:
        env.close()
    base = gym.make(str(parent.env_id))
    try:
        assert base.reset(seed=3)[1]["n_terms"] == 3
    finally:
        base.close()
    # registration at import time (a fresh process) reads the kwargs from the store too
    from gymnasium.envs.registration import registry as gym_registry

    from spade_envs.registry.gym_registration import register_store

    gym_registry.pop(str(res.env_id))
    register_store()
    assert gym_registry[str(res.env_id)].kwargs == {"env_id": res.env_id.base, "version": 0,  # params: the program's
                                                    "env_kwargs": {"n_terms": 6, "max_value": 900, "max_turns": 2}}
    assert gym_registry[str(parent.env_id)].kwargs == {"env_id": parent.env_id.base, "version": 0}
    from spade_envs.gym_env import SpadeEnv

    direct = SpadeEnv(env_id=res.env_id.base)  # the record's params apply on every entry point
    try:
        assert direct.reset(seed=3)[1]["n_terms"] == 6
    finally:
        direct.close()


def test_export_columns_and_pull_roundtrip(reg, tmp_path):
    from spade_envs.registry.hub_export import export, read_rows

    parent = reg.add(SUM_SOURCE, generation=1)
    res = reg.add_variant(str(parent.env_id), {"n_terms": 2}, generation=2)
    export(reg.list(), tmp_path / "ds")
    rows = {r["id"]: r for r in read_rows(tmp_path / "ds")}
    vrow, prow = rows[res.env_id.base], rows[parent.env_id.base]
    assert vrow["parent"] == str(parent.env_id)
    assert json.loads(vrow["params"]) == {"n_terms": 2, "max_value": 50, "max_turns": 2}
    assert prow["parent"] is None and prow["params"] is None
    assert "lineage" in json.loads(vrow["metadata"])
    other = Registry.open(tmp_path / "other.sqlite3")
    try:
        from spade_envs.registry.sharing import merge_rows

        counts = merge_rows(other, rows.values(), repo="someone/envs", commit="c1")  # the Hub pull's merge
        assert len(counts.added) == 2
        pulled = other.get(res.env_id)
        assert pulled.parent == str(parent.env_id) and pulled.params == reg.get(res.env_id).params
        assert merge_rows(other, rows.values(), repo="someone/envs", commit="c1").unchanged == 2
        # a later local variant with the same point is the pulled one
        assert other.add_variant(str(parent.env_id), {"n_terms": 2}).env_id == res.env_id
    finally:
        other.close()


def test_migration_from_v1_keeps_entries(tmp_path):
    from spade_envs.registry.migrations import APPLICATION_ID, MIGRATIONS

    path = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO sources VALUES ('abc', ?)", (SUM_SOURCE,))
    conn.execute("INSERT INTO envs (seq, version, sha256, class_name, generation, created_at, updated_at) "
                 "VALUES (1000, 0, 'abc', 'KnobSumEnv', 1, 'now', 'now')")
    conn.commit()
    conn.close()
    reg = Registry.open(path)
    try:
        rec = reg.get("spade/Env-01000-v0")
        assert rec.source == SUM_SOURCE and rec.parent is None
        res = reg.add_variant("spade/Env-01000", {"n_terms": 6})
        assert res.new and reg.get(res.env_id).source == SUM_SOURCE
        assert reg.integrity_check() == "ok"
        names = {r[0] for r in reg._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"envs_registration", "envs_generation", "envs_skill", "envs_source_unique"} <= names
        with pytest.raises(sqlite3.IntegrityError):  # ordinary entries stay unique by source
            reg._conn.execute("INSERT INTO envs (seq, version, sha256, class_name, generation, created_at, "
                              "updated_at) VALUES (1005, 0, 'abc', 'KnobSumEnv', 1, 'now', 'now')")
    finally:
        reg.close()


def test_merge_on_pull_keeps_variants_apart_from_their_parent(reg, tmp_path):
    from spade_envs.registry.hub_export import export, read_rows
    from spade_envs.registry.sharing import merge_rows

    parent = reg.add(SUM_SOURCE, generation=1)
    res = reg.add_variant(str(parent.env_id), {"n_terms": 5}, generation=2)
    export(reg.list(), tmp_path / "ds")
    rows = read_rows(tmp_path / "ds")
    other = Registry.open(tmp_path / "other.sqlite3")
    try:
        mine = other.add(SUM_SOURCE)  # the same parent, local and unpublished
        assert mine.env_id == parent.env_id
        out = merge_rows(other, rows, repo="user/envs", commit="c1")
        assert out.added == [str(res.env_id)] and out.unchanged == 1 and not out.deduplicated
        pulled = other.get(res.env_id)
        assert pulled.parent == str(parent.env_id) and pulled.params["n_terms"] == 5
        assert other.get(parent.env_id).parent is None
        again = merge_rows(other, rows, repo="user/envs", commit="c1")
        assert again.added == [] and again.unchanged == 2
    finally:
        other.close()
