"""Registry store: ids, dedup, versions, statuses, resolution, damaged files, registration."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from registry_helpers import spade_home, synthetic_source  # noqa: F401

from spade_envs.errors import EnvProgramError, RegistryFormatError, UnknownEnvironmentError
from spade_envs.registry.catalog import resolve, seed_records
from spade_envs.registry.ids import EnvId
from spade_envs.registry.migrations import APPLICATION_ID, FIRST_STORE_SEQ, SCHEMA_VERSION
from spade_envs.registry.store import Registry


@pytest.fixture
def reg(tmp_path):
    with Registry.open(tmp_path / "r.sqlite3") as r:
        yield r


def test_ids_dense_after_seed_range_and_dedup(reg):
    a = reg.add(synthetic_source(1))
    b = reg.add(synthetic_source(2))
    again = reg.add(synthetic_source(1))
    assert (a.env_id, a.new) == (EnvId(FIRST_STORE_SEQ, 0), True)
    assert b.env_id == EnvId(FIRST_STORE_SEQ + 1, 0)
    assert (again.env_id, again.new) == (a.env_id, False)
    assert max(r.env_id.seq for r in seed_records()) < FIRST_STORE_SEQ
    seed = seed_records()[0]
    res = reg.add(seed.source)  # a seed's source is that seed
    assert (res.env_id, res.new) == (seed.env_id, False)
    assert reg.stats()["versions"] == 2


def test_fields_metadata_scores_and_generations(reg):
    res = reg.add(synthetic_source(1, skill="arithmetic", tags=("a", "b")), generation=2, designer_model="m1",
                  grounding_ref="doc:42", parent_ids=["spade/Env-00001"], tool_specs=[],
                  acceptance=[{"name": "syntax", "ok": True, "detail": ""}])
    rec = reg.get(res.env_id)
    m = rec.metadata
    assert rec.trusted is False and rec.class_name == "Echo1Env" and rec.generation == 2
    assert (m["skill"], m["designer_model"], m["grounding_ref"]) == ("arithmetic", "m1", "doc:42")
    assert m["parent_ids"] == ["spade/Env-00001"] and m["tags"] == ["a", "b"] and len(m["sha256"]) == 64
    assert m["acceptance"][0]["name"] == "syntax" and m["created_at"].endswith("Z")
    reg.update_scores(res.env_id, regret=0.25, win_rate_hint=0.9, win_rate_plain=0.5, metadata={"note": "x"})
    m = reg.get(res.env_id).metadata
    assert (m["regret"], m["win_rate_hint"], m["win_rate_plain"], m["note"]) == (0.25, 0.9, 0.5, "x")
    assert reg.next_generation() == 3
    reg.add(synthetic_source(2))  # default generation: the newest one
    assert [r.generation for r in reg.list()] == [2, 2]
    assert [str(r.env_id) for r in reg.list(tags=["b"])] == ["spade/Env-01000-v0"]
    assert reg.list(skill="nope") == [] and len(reg.list(generation=2, status="active")) == 2
    assert [r.generation for r in reg.list(seeds=True)][:1] == [0]


def test_not_a_program_is_refused(reg):
    with pytest.raises(EnvProgramError):
        reg.add("x = 1\n")
    assert reg.stats()["versions"] == 0


def test_version_resolution_latest_explicit_deprecated_missing(reg):
    v0 = reg.add(synthetic_source(1)).env_id
    v1 = reg.add(synthetic_source(2), replaces=v0.base).env_id
    assert v1 == EnvId(v0.seq, 1)
    assert reg.latest(v0.base).env_id == v1
    assert reg.get(v0.base).env_id == v1
    assert reg.get(str(v0)).source == synthetic_source(1)
    assert reg.get(v0.base, version=0).env_id == v0
    reg.set_status(v1, "deprecated", "superseded")
    assert reg.latest(v0.base).env_id == v0  # the highest ACTIVE version wins
    dep = reg.get(str(v1))  # explicit versions stay loadable
    assert dep.status == "deprecated" and dep.metadata["status_reason"] == "superseded"
    reg.set_status(v0, "deprecated")
    assert reg.latest(v0.base).env_id == v1  # only deprecated left: the highest of them
    reg.set_status(v0.base, "quarantined", "leaks the answer")
    with pytest.raises(UnknownEnvironmentError, match="quarantined"):
        reg.get(str(v1))
    with pytest.raises(UnknownEnvironmentError, match="quarantined"):
        reg.latest(v0.base)
    with pytest.raises(UnknownEnvironmentError, match="no environment"):
        reg.get("spade/Env-05555")
    with pytest.raises(UnknownEnvironmentError, match="no environment"):
        reg.get(f"{v0.base}-v7")
    with pytest.raises(UnknownEnvironmentError):
        reg.add(synthetic_source(3), replaces="spade/Env-05555")
    assert reg.registration_rows() == []


def test_catalog_resolves_store_entries_untrusted(spade_home):  # noqa: F811
    with Registry.open() as reg:
        eid = reg.add(synthetic_source(7)).env_id
    rec = resolve(eid.base)
    assert rec.env_id == eid and rec.trusted is False
    with pytest.raises(UnknownEnvironmentError):
        resolve("spade/Env-04444")


def _foreign(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()


def _newer(path):
    Registry.open(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()


def _other_app(path):
    con = sqlite3.connect(path)
    con.execute("PRAGMA application_id = 1234")
    con.execute("CREATE TABLE envs (x)")
    con.commit()
    con.close()


def _garbage(path):
    path.write_bytes(b"this is not a database at all\n" * 100)


def _truncated(path):
    with Registry.open(path) as r:
        r.add(synthetic_source(1))
        r._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\xff" * 3000 + data[3100:])


@pytest.mark.parametrize("make,kind", [(_foreign, "foreign"), (_other_app, "foreign"), (_newer, "newer_schema"),
                                       (_garbage, "corrupt"), (_truncated, "corrupt")])
def test_damaged_files_give_clear_errors_and_stay_untouched(tmp_path, make, kind):
    path = tmp_path / "registry.sqlite3"
    make(path)
    before = path.read_bytes()
    for opener in (lambda: Registry.open(path), lambda: Registry.open(path, create=False)):
        with pytest.raises(RegistryFormatError) as info:
            opener().list()
        assert info.value.kind == kind and str(path) in str(info.value)
    assert path.read_bytes() == before
    assert not (tmp_path / "registry.sqlite3-wal").exists() or kind == "corrupt"


def test_schema_identity(reg):
    assert reg._pragma("application_id") == APPLICATION_ID
    assert reg._pragma("user_version") == SCHEMA_VERSION
    assert reg._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


_PROBE = (
    "import warnings, gymnasium as gym\n"
    "with warnings.catch_warnings(record=True) as w:\n"
    "    warnings.simplefilter('always')\n"
    "    import spade_envs\n"
    "ids = [k for k in gym.registry if k.startswith('spade/')]\n"
    "print(len(ids), sum(k >= 'spade/Env-01000' for k in ids), any('registry' in str(x.message) for x in w))\n"
)


def _probe(home) -> list[str]:
    env = {**os.environ, "SPADE_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_import_registers_store_and_survives_bad_stores(tmp_path):
    n_seeds = str(len(seed_records()))
    home = tmp_path / "h"
    assert _probe(home) == [n_seeds, "0", "False"]  # no store: seeds only, nothing created
    assert not home.exists()
    with Registry.open(home / "registry.sqlite3") as reg:
        a = reg.add(synthetic_source(1)).env_id
        reg.add(synthetic_source(2), replaces=a.base)
        q = reg.add(synthetic_source(3)).env_id
        reg.set_status(q, "quarantined", "bad")
    assert _probe(home) == [str(len(seed_records()) + 2), "2", "False"]
    _garbage(home / "registry.sqlite3")
    for f in home.glob("registry.sqlite3-*"):
        f.unlink()
    assert _probe(home) == [n_seeds, "0", "True"]  # corrupt: warning, seeds still there
    unwritable = tmp_path / "ro"
    unwritable.mkdir(mode=0o500)
    assert _probe(unwritable / "sub")[:2] == [n_seeds, "0"]


def test_lazy_registration_of_a_large_store(tmp_path):
    """Above SPADE_EAGER_REGISTRATION_MAX the import registers the store lazily: every id
    still makes, is `in gym.registry`, and `refresh()` sees later additions."""
    home = tmp_path / "home"
    with Registry.open(home / "registry.sqlite3") as reg:
        for i in range(6):
            reg.add(synthetic_source(i))
        reg.add(synthetic_source(9), replaces="spade/Env-01002")
        reg.set_status("spade/Env-01004", "quarantined", "bad")
    code = f"""
import gymnasium as gym, spade_envs
from spade_envs.registry.gym_lazy import active
from spade_envs.registry.store import Registry
from registry_helpers import synthetic_source
assert active() is not None
assert "spade/Env-01003-v0" not in dict(gym.registry)       # not built at import
assert "spade/Env-01003-v0" in gym.registry                # ... but found on lookup
env = gym.make("spade/Env-01002", trust_remote_code=True)  # latest version of a lazy id
assert env.unwrapped.version == 1, env.unwrapped.version
assert "spade/Env-01004-v0" not in gym.registry            # quarantined: never registered
Registry.open().add(synthetic_source(20))
assert "spade/Env-01006-v0" in gym.registry                # an add in this process
gym.make("spade/Env-01006-v0", trust_remote_code=True).reset(seed=0)
import gymnasium.envs.registration as r
assert "spade/Env-01006-v0" in r.__dict__["registry"] and gym.registry is r.registry
print("ok")
"""
    env = {**os.environ, "SPADE_HOME": str(home), "SPADE_EAGER_REGISTRATION_MAX": "3",
           "PYTHONPATH": os.path.dirname(__file__)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
