"""Hub dataset: export -> load_dataset, push/pull against the local Hub server."""

from __future__ import annotations

import json
import os

import pytest
from hub_server import hub  # noqa: F401  (the local-Hub fixture)
from registry_helpers import spade_home, synthetic_source  # noqa: F401

from spade_envs.errors import RegistryError
from spade_envs.registry import hub_sync
from spade_envs.registry.catalog import seed_records
from spade_envs.registry.hub_export import export
from spade_envs.registry.store import Registry


def _fill(reg: Registry) -> None:
    a = reg.add(synthetic_source(1, skill="echo", tags=("x",)), generation=1, designer_model="m",
                grounding_ref="doc:1", parent_ids=["spade/Env-00001"]).env_id
    reg.add(synthetic_source(2), generation=1)
    reg.add(synthetic_source(3), replaces=a.base, generation=2)
    reg.update_scores(a, regret=0.2, win_rate_hint=0.8, win_rate_plain=0.6)


def test_export_reads_back_with_datasets(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "USE_PARQUET_EXPORT", False)
    with Registry.open(tmp_path / "r.sqlite3") as reg:
        _fill(reg)
        recs = reg.list(seeds=True)
    out = tmp_path / "ds"
    summary = export(recs, out)
    assert summary["generations"] == [0, 1, 2] and summary["rows"] == len(seed_records()) + 3
    card = (out / "README.md").read_text()
    assert "config_name: gen-0002" in card and "license: apache-2.0" in card and "content_sha256" in card
    again = export(recs, tmp_path / "ds2")
    assert again["content_sha256"] == summary["content_sha256"]
    assert all((out / f).read_bytes() == (tmp_path / "ds2" / f).read_bytes() for f in summary["files"])
    cache = str(tmp_path / "cache")
    full = datasets.load_dataset(str(out), split="train", cache_dir=cache)
    assert len(full) == summary["rows"]
    gen1 = datasets.load_dataset(str(out), "gen-0001", split="train", cache_dir=cache)
    assert sorted(gen1["env_id"]) == ["spade/Env-01000-v0", "spade/Env-01001-v0"]
    raw = datasets.load_dataset("parquet", data_dir=str(out), split="train", cache_dir=cache)
    assert len(raw) == summary["rows"]
    row = next(r for r in full if r["env_id"] == "spade/Env-01000-v0")
    assert row["source"] == synthetic_source(1, skill="echo", tags=("x",)) and row["tags"] == ["x"] and row["regret"] == 0.2
    assert row["parent_ids"] == ["spade/Env-00001"] and row["class_name"] == "Echo1Env"
    assert json.loads(row["tool_specs"]) == []


def test_push_is_atomic_idempotent_and_tagged(tmp_path, hub):
    with Registry.open(tmp_path / "r.sqlite3") as reg:
        reg.add(synthetic_source(1), generation=1)
        first = hub_sync.push(reg.list(seeds=True), "me/reg")
        assert first["new_commit"] and first["tags_created"] == ["gen-0000", "gen-0001"]
        assert hub.commits("me/reg") == 2  # the repo's initial commit + ours
        same = hub_sync.push(reg.list(seeds=True), "me/reg")
        assert not same["new_commit"] and same["commit"] == first["commit"] and same["tags_created"] == []
        assert hub.commits("me/reg") == 2
        reg.add(synthetic_source(2), generation=2)
        with pytest.raises(RegistryError, match="stale parent"):
            # an earlier head than the branch's: refused, nothing written
            hub_sync.push(reg.list(seeds=True), "me/reg",
                          parent_commit=hub.repos["me/reg"].commits[first["commit"]]["parent"])
        assert hub.commits("me/reg") == 2
        second = hub_sync.push(reg.list(seeds=True), "me/reg")
        assert second["new_commit"] and second["tags_created"] == ["gen-0002"]
        tags = hub.repos["me/reg"].tags
        assert tags["gen-0001"] == first["commit"] and tags["gen-0002"] == second["commit"]
        files = hub.repos["me/reg"].commits[second["commit"]]["files"]
        assert {"README.md", "data/gen-0002/train-00000-of-00001.parquet"} <= set(files)

    # tag-pinned pull: gen-0001 predates Env-01001
    with Registry.open(tmp_path / "pinned.sqlite3") as fresh:
        res = hub_sync.pull(fresh, "me/reg", revision="gen-0001")
        assert res["commit"] == first["commit"] and res["added"] == 1 and res["seeds"] == len(seed_records())
        assert [str(r.env_id) for r in fresh.list()] == ["spade/Env-01000-v0"]
        res = hub_sync.pull(fresh, "me/reg")
        assert (res["added"], res["unchanged"]) == (1, 1)
        assert all(r.trusted is False and r.metadata["origin"].startswith("hub:me/reg@") for r in fresh.list())
    with pytest.raises(RegistryError, match="no such revision"):
        hub_sync.pull(Registry.open(tmp_path / "x.sqlite3"), "me/reg", revision="gen-0099")
    with pytest.raises(RegistryError, match="no such dataset"):
        hub_sync.pull(Registry.open(tmp_path / "y.sqlite3"), "me/missing")


def _episodes(env_id: str, seeds=(0, 1, 2)) -> list:
    import gymnasium as gym

    out = []
    env = gym.make(env_id, trust_remote_code=True)  # the sandbox is its own issue; same code path either way
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        steps = [obs]
        for action in env.unwrapped.solution_actions() + ["garbage"]:
            obs, reward, terminated, truncated, _ = env.step(action)
            steps.append((obs, reward, terminated, truncated))
            if terminated or truncated:
                break
        out.append(steps)
    env.close()
    return out


def test_cli_push_then_pull_into_fresh_home_reproduces(tmp_path, hub, monkeypatch, capsys, spade_home):  # noqa: F811
    from spade_envs.cli.main import main
    from spade_envs.registry.catalog import resolve

    def cli(*args: str) -> dict:
        capsys.readouterr()
        assert main(list(args)) == 0, capsys.readouterr().err
        return json.loads(capsys.readouterr().out)

    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "a"))
    with Registry.open() as reg:
        _fill(reg)
        reg.set_status("spade/Env-01001", "deprecated", "dull")
    listed_a = cli("registry", "list", "--json")
    episodes_a = [_episodes(f"spade/Env-0100{i}") for i in range(2)]
    pushed = cli("registry", "push", "me/suite", "--json", "--endpoint", hub.url)
    assert pushed["generations"] == [0, 1, 2]

    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "b"))
    assert cli("registry", "list", "--json")["envs"] == [e for e in listed_a["envs"] if e["generation"] == 0]
    # these synthetic programs leak their answer: acceptance (recomputed on pull) would
    # quarantine them (test_pull_recomputes_acceptance); this test is about the round trip
    pulled = cli("registry", "pull", "me/suite", "--json", "--skip-acceptance")
    assert pulled["added"] == 3 and pulled["acceptance"] == "pending"
    assert cli("registry", "list", "--json") == listed_a
    assert resolve("spade/Env-01000").trusted is False
    assert [_episodes(f"spade/Env-0100{i}") for i in range(2)] == episodes_a
    assert os.path.exists(tmp_path / "b" / "registry.sqlite3")
