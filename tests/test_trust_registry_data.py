"""Attacks: registry data (a Hub row, a variant's params, stored metadata) tries to turn
trust on, redirect an id, switch the privileged hint on or break ``solution()``
(DESIGN.md section 5: trust comes only from the caller's own argument).

The program below reads a file of the test's temporary folder in ``reset``: it can only
when it runs in-process (the sandbox has no such file in its view), so its first
observation says where it ran.
"""

from __future__ import annotations

import json
import sqlite3

import gymnasium as gym
import pytest
from hub_server import hub  # noqa: F401  (the local-Hub fixture)
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.gym_env import SpadeEnv
from spade_envs.parameters import InvalidParametersError
from spade_envs.program import source_sha256
from spade_envs.registry.store import Registry
from spade_envs.trust import reserved_keywords

pytestmark = pytest.mark.filterwarnings("ignore:.*latest versioned environment")

ATTACKS = [{"trust_remote_code": True}, {"env_id": "spade/Env-00001"}, {"hint": True}, {"runtime": "inprocess"},
           {"source": "class XEnv: pass"}, {"version": 0}]


def probe_source(secret: str) -> str:
    """A program with open ``PARAMETERS`` (any extra kwarg is allowed) that tells where it runs."""
    return f'''
PARAMETERS = {{"type": "object", "additionalProperties": True,
              "properties": {{"size": {{"type": "integer", "minimum": 1, "maximum": 9, "default": 3}}}}}}


class ProbeEnv:
    def __init__(self, size=3, **kwargs):
        self.size = size
        self.extra = sorted(kwargs)

    def reset(self, seed=None):
        try:
            with open({secret!r}) as fh:
                fh.read()
            where = "IN-PROCESS"
        except Exception as exc:
            where = "sandboxed"
        self._n = (seed or 0) % 7 + self.size
        return f"{{where}}: say {{self._n}} in \\\\boxed{{{{}}}} (extra={{self.extra}})", {{}}

    def step(self, action):
        won = action.strip() == "\\\\boxed{{" + str(self._n) + "}}"
        return ("yes" if won else "no"), (1.0 if won else 0.0), True, False, {{}}

    def solution(self):
        return "\\\\boxed{{" + str(self._n) + "}}"

    def hint(self):
        return "THE-PRIVILEGED-HINT"
'''


@pytest.fixture
def probe(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("only the host can read this")
    return probe_source(str(secret))


def test_the_reserved_set_is_spade_envs_own_signature():
    import inspect

    names = set(inspect.signature(SpadeEnv.__init__).parameters) - {"self", "kwargs"}
    assert reserved_keywords() == names
    assert {"trust_remote_code", "env_id", "version", "source", "hint", "runtime", "env_kwargs"} <= names


@pytest.mark.parametrize("params", ATTACKS, ids=lambda p: next(iter(p)))
def test_add_variant_refuses_spade_env_keywords_even_when_the_schema_allows_them(spade_home, probe, params):  # noqa: F811
    with Registry.open() as reg:
        parent = reg.add(probe)
        with pytest.raises(InvalidParametersError, match="SpadeEnv's own keywords"):
            reg.add_variant(str(parent.env_id), {"size": 4, **params})
        with pytest.raises(InvalidParametersError):  # the generic write path refuses them too
            reg.add(probe, parent=str(parent.env_id), params={"size": 4, **params})
        assert len(reg.list()) == 1


def test_a_stored_variant_with_spade_env_keywords_is_not_registered_and_not_made(spade_home, probe):  # noqa: F811
    """A row written around every check (an older store, a hand-edited file)."""
    from spade_envs.registry.gym_registration import _load_seq, register_store

    with Registry.open() as reg:
        parent = reg.add(probe)
        good = reg.add_variant(str(parent.env_id), {"size": 5})
        path = reg.path
    bad = json.dumps({"size": 5, "trust_remote_code": True, "hint": True})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE envs SET params = ? WHERE seq = ?", (bad, good.env_id.seq))
    with pytest.warns(RuntimeWarning, match="not registered"):
        register_store()
    assert str(good.env_id) not in gym.registry
    with pytest.warns(RuntimeWarning, match="not registered"):
        assert [s.id for s in _load_seq(good.env_id.seq)] == []  # the lazy registry's loader too
    with pytest.raises(InvalidParametersError, match="trust_remote_code"):
        SpadeEnv(env_id=good.env_id.base)
    with pytest.raises(gym.error.Error):
        gym.make(str(good.env_id))


def test_variant_params_reach_the_program_only(spade_home, probe):  # noqa: F811
    with Registry.open() as reg:
        parent = reg.add(probe)
        res = reg.add_variant(str(parent.env_id), {"size": 5, "colour": "red"})  # an extra kwarg the schema allows
    spec = gym.spec(str(res.env_id))
    assert spec.kwargs == {"env_id": res.env_id.base, "version": 0, "env_kwargs": {"size": 5, "colour": "red"}}
    env = gym.make(str(res.env_id))
    try:
        obs, info = env.reset(seed=1)
        assert obs.startswith("sandboxed") and "extra=['colour']" in obs and "hint" not in info
    finally:
        env.close()


# -- a crafted Hub dataset, pulled through a local Hub server -------------------------------
def _publish_crafted(tmp_path, hub, probe: str) -> dict[str, str]:
    """Export a store holding the probe and one honest variant, then forge rows: variants
    whose params name SpadeEnv keywords, a variant of a missing parent, one whose source is
    not its parent's, and the parent's metadata ``solution_form: "last"``."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import HfApi

    from spade_envs.registry.hub_export import export

    with Registry.open(tmp_path / "src.sqlite3") as reg:
        parent = reg.add(probe, generation=1)
        honest = reg.add_variant(str(parent.env_id), {"size": 4}, generation=1)
        export(reg.list(), tmp_path / "ds")
    (path,) = (tmp_path / "ds" / "data").glob("gen-0001/*.parquet")
    rows = pq.read_table(path).to_pylist()
    base = next(r for r in rows if r["seq"] == honest.env_id.seq)
    for r in rows:
        if r["seq"] == parent.env_id.seq:
            r["metadata"] = json.dumps({**json.loads(r["metadata"] or "{}"), "solution_form": "last",
                                        "max_episode_steps": "lots", "tags": {"not": "a list"}})
    names = {}
    forged = [{"params": json.dumps({"size": 4, **attack}, sort_keys=True)} for attack in ATTACKS]
    other = probe.replace("ProbeEnv", "OtherProbeEnv")
    forged += [{"params": json.dumps({"size": 6}), "parent": "spade/Env-09999-v0"},
               {"params": json.dumps({"size": 6}), "source": other, "sha256": source_sha256(other)}]
    for i, change in enumerate(forged, 1):
        seq = honest.env_id.seq + i
        row = {**base, **change, "seq": seq, "id": f"spade/Env-{seq:05d}", "env_id": f"spade/Env-{seq:05d}-v0"}
        names[row["env_id"]] = json.dumps(change)[:80]
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    api = HfApi(endpoint=hub.url, token="hf_test")
    api.create_repo("evil/reg", repo_type="dataset")
    api.upload_folder(repo_id="evil/reg", repo_type="dataset", folder_path=str(tmp_path / "ds"))
    return {"parent": str(parent.env_id), "honest": str(honest.env_id), **names}


def test_a_crafted_hub_dataset_cannot_turn_trust_on(spade_home, hub, tmp_path, probe):  # noqa: F811
    from spade_envs.registry.hub_sync import pull

    ids = _publish_crafted(tmp_path, hub, probe)
    forged = [i for i in ids if i not in ("parent", "honest")]
    with Registry.open() as reg:
        res = pull(reg, "evil/reg", endpoint=hub.url, token="hf_test")
        stored = {str(r.env_id): r for r in reg.list()}
    skipped = {s["id"]: s["reason"] for s in res["skipped"]}
    assert sorted(skipped) == sorted(forged), res
    assert all(reason.startswith("refused: ") for reason in skipped.values())
    assert "SpadeEnv's own keywords" in skipped[forged[0]]
    assert "is not a program" in skipped[forged[-2]] and "not its parent's" in skipped[forged[-1]]
    assert sorted(stored) == sorted([ids["parent"], ids["honest"]])
    assert all(not k in reserved_keywords() for r in stored.values() for k in r.params)
    for env_id in forged:  # none of them can be made, by any entry point
        assert env_id not in gym.registry
    # the honest variant and the parent play sandboxed; bad metadata falls back to defaults
    parent = stored[ids["parent"]]
    assert "solution_form" not in parent.metadata and parent.metadata.get("tags") == []
    for env_id in (ids["parent"], ids["honest"]):
        env = gym.make(env_id)
        try:
            obs, info = env.reset(seed=2)
            assert obs.startswith("sandboxed") and "hint" not in info and "PRIVILEGED" not in obs
            assert env.step(env.unwrapped.solution())[1] == 1.0
        finally:
            env.close()


def test_malformed_stored_metadata_gives_defaults_not_a_traceback(spade_home, probe):  # noqa: F811
    with Registry.open() as reg:
        res = reg.add(probe)
        path = reg.path
    meta = json.dumps({"solution_form": "last", "file": ["x"], "max_episode_steps": -3, "tags": 7, "lineage": {}})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE envs SET metadata = ?, max_episode_steps = NULL WHERE seq = ?", (meta, res.env_id.seq))
    env = SpadeEnv(env_id=res.env_id.base)
    try:
        env.reset(seed=0)
        assert env.solution().startswith("\\boxed{")
        assert {"solution_form", "file", "tags", "lineage"}.isdisjoint(env.spade_metadata)
    finally:
        env.close()
    with Registry.open() as reg:  # and a write of such metadata keeps none of it
        again = reg.add(probe.replace("ProbeEnv", "Probe2Env"), metadata=json.loads(meta))
        assert "solution_form" not in reg.get(again.env_id).metadata
