"""Sharing one Hub dataset between homes: merge on pull (rebase semantics), aliases,
push refusals, removal, and what a pull never takes on faith (local Hub server)."""

from __future__ import annotations

import json
import warnings

import pytest
from hub_server import hub  # noqa: F401  (the local-Hub fixture)
from registry_helpers import playable_source, spade_home, synthetic_source  # noqa: F401

from spade_envs.cli import registry_common
from spade_envs.cli.main import main
from spade_envs.registry.store import Registry


def _static_check(source: str, filename: str) -> dict:
    from spade_envs.program import inspect_program

    inspect_program(source, filename=filename)
    return {"accepted": True, "rejected_at": None, "stages": [{"name": "static", "ok": True, "detail": "static only"}]}


@pytest.fixture
def cli(capsys, spade_home, monkeypatch, tmp_path):  # noqa: F811
    """``cli(home, *args, code=0)``: run ``spade`` with SPADE_HOME=tmp/home; --json parsed.
    ``registry add`` uses a static check (acceptance is tested elsewhere); pull runs the
    real acceptance pipeline."""
    monkeypatch.setattr(registry_common, "acceptance_runner", lambda *a, **k: _static_check)

    def run(home: str, *args: str, code: int = 0):
        monkeypatch.setenv("SPADE_HOME", str(tmp_path / home))
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        assert rc == code, err
        return json.loads(out) if "--json" in args else (out, err)

    return run


def _write(tmp_path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return str(path)


def _state(tmp_path, home: str) -> list[tuple]:
    with Registry.open(tmp_path / home / "registry.sqlite3") as reg:
        return [(str(r.env_id), r.metadata["sha256"], r.generation, r.status) for r in reg.list()]


def test_two_homes_pull_push_pull_end_identical_and_lose_nothing(cli, hub, tmp_path):
    p = {i: playable_source(i) for i in range(1, 6)}
    cli("a", "registry", "add", _write(tmp_path, "p1.py", p[1]), _write(tmp_path, "p2.py", p[2]), "--json")
    pushed = cli("a", "registry", "push", "team/reg", "--json")
    assert pushed["new_commit"]

    # B works on its own: two environments, one with a second version, one identical to A's
    cli("b", "registry", "add", _write(tmp_path, "p3.py", p[3]), _write(tmp_path, "p1b.py", p[1]), "--json")
    cli("b", "registry", "add", _write(tmp_path, "p5.py", p[5]), "--replaces", "spade/Env-01000", "--json")
    commits = hub.commits("team/reg")
    _, err = cli("b", "registry", "push", "team/reg", code=1)
    assert "pull" in err and err.count("\n") == 1 and hub.commits("team/reg") == commits  # nothing lost

    out, _ = cli("b", "registry", "pull", "team/reg")
    assert "renumbered spade/Env-01000-v0 -> spade/Env-01002-v0" in out  # the printed mapping
    assert "renumbered spade/Env-01000-v1 -> spade/Env-01002-v1" in out
    assert "deduplicated spade/Env-01001-v0 -> spade/Env-01000-v0" in out
    again = cli("b", "registry", "pull", "team/reg", "--json")
    assert (again["added"], again["renumbered"], again["deduplicated"]) == (0, [], [])

    shown = cli("b", "registry", "show", "spade/Env-01002", "--json")
    assert shown["source"] == p[5] and shown["version"] == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = cli("b", "registry", "show", "spade/Env-01000-v1", "--json")  # free old id: an alias
        assert old["source"] == p[5] and old["id"] == "spade/Env-01002"
        taken = cli("b", "registry", "show", "spade/Env-01000", "--json")  # the published entry wins
        assert taken["source"] == p[1]
    notices = [str(w.message) for w in caught if w.category.__name__ == "RenumberedNotice"]
    assert any("now spade/Env-01002-v1" in n for n in notices) and any("published" in n for n in notices)

    assert cli("b", "registry", "push", "team/reg", "--json")["new_commit"]  # push after pull works
    pulled = cli("a", "registry", "pull", "team/reg", "--json")
    assert pulled["added"] == 2 and pulled["renumbered"] == [] and pulled["quarantined"] == []
    a, b = _state(tmp_path, "a"), _state(tmp_path, "b")
    assert a == b
    shas = {sha for _, sha, _, _ in a}
    from spade_envs.program import source_sha256

    assert {source_sha256(s) for s in p.values() if s != p[4]} == shas  # lose nothing
    assert [e for e, *_ in a] == ["spade/Env-01000-v0", "spade/Env-01001-v0", "spade/Env-01002-v0",
                                  "spade/Env-01002-v1"]
    # published entries cannot be removed; the remote's ids are permanent
    _, err = cli("a", "registry", "remove", "spade/Env-01002", code=1)
    assert "published" in err and "deprecate" in err


def test_gym_make_of_renumbered_ids(cli, hub, tmp_path, spade_home):  # noqa: F811
    import gymnasium as gym

    from spade_envs.registry.sharing import RenumberedNotice

    cli("a", "registry", "add", _write(tmp_path, "p1.py", playable_source(1)), "--json")
    cli("a", "registry", "push", "team/g", "--json")
    # B has three local entries; the pull moves only the one whose id the remote uses
    cli("b", "registry", "add", *(_write(tmp_path, f"q{i}.py", playable_source(10 + i)) for i in range(3)), "--json")
    res = cli("b", "registry", "pull", "team/g", "--json")
    assert res["renumbered"] == [{"from": "spade/Env-01000-v0", "to": "spade/Env-01003-v0"}]
    env = gym.make("spade/Env-01003")
    obs, _ = env.reset(seed=1)
    assert "Runner 10 " in obs  # B's first entry, under its new id
    with pytest.warns(RenumberedNotice, match="spade/Env-01003"):
        env = gym.make("spade/Env-01000")  # the published entry, with a notice
    obs, _ = env.reset(seed=1)
    assert "Runner 1 " in obs
    assert "spade/Env-01001-v0" in gym.registry  # the others kept their ids


def test_pull_recomputes_acceptance_and_never_trusts_claims(cli, hub, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spade_envs.registry import hub_sync
    from spade_envs.registry.hub_export import export

    with Registry.open(tmp_path / "src.sqlite3") as reg:
        reg.add(synthetic_source(1), generation=1)  # leaks its answer: acceptance fails
        reg.add(playable_source(2), generation=1, acceptance=[{"name": "forged", "ok": True, "detail": "trust me"}])
        out = tmp_path / "ds"
        export(reg.list(), out)
    # forge the dataset's claims: generation 0 for a store row
    path = out / "data" / "gen-0001" / "train-00000-of-00001.parquet"
    table = pq.read_table(path).to_pylist()
    for row in table:
        row["generation"] = 0
        row["tool_specs"] = json.dumps([{"type": "function", "function": {"name": "forged"}}])
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(path)), path)
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub.url, token="hf_test")
    api.create_repo("evil/reg", repo_type="dataset")
    api.upload_folder(repo_id="evil/reg", repo_type="dataset", folder_path=str(out))

    res = cli("c", "registry", "pull", "evil/reg", "--json")
    assert [q["id"] for q in res["quarantined"]] == ["spade/Env-01000-v0"]
    assert "no_leak" in res["quarantined"][0]["reason"]
    with Registry.open(tmp_path / "c" / "registry.sqlite3") as reg:
        recs = {str(r.env_id): r for r in reg.list()}
    assert all(r.generation >= 1 and r.trusted is False for r in recs.values())
    good = recs["spade/Env-01001-v0"]
    assert good.status == "active" and "forged" not in json.dumps(good.metadata["acceptance"])
    assert good.metadata["tool_specs"] == []  # measured in the sandbox, not the dataset's claim
    assert {"size_syntax", "solution_replay", "no_leak"} <= {s["name"] for s in good.metadata["acceptance"]}
    assert hub_sync  # the module under test


def test_remove_only_unpublished(cli, tmp_path):
    cli("a", "registry", "add", _write(tmp_path, "x.py", playable_source(1)), _write(tmp_path, "y.py", playable_source(2)),
        "--json")
    assert cli("a", "registry", "remove", "spade/Env-01000", "--json") == {"removed": ["spade/Env-01000-v0"]}
    ids = [e["id"] for e in cli("a", "registry", "list", "--json")["envs"] if e["generation"] > 0]
    assert ids == ["spade/Env-01001"]
    _, err = cli("a", "registry", "remove", "spade/Env-01000", code=1)
    assert "no environment" in err
    _, err = cli("a", "registry", "remove", "spade/Env-00001", code=1)
    assert "seed suite" in err


def test_export_has_tool_specs_of_every_tool_row_and_parameters(cli, tmp_path):
    import pyarrow.parquet as pq

    from spade_envs.registry.catalog import seed_records

    tool_seed = next(r for r in seed_records() if "ToolUseBaseEnv" in r.source)
    mine = tool_seed.source.replace(tool_seed.class_name, "Mine" + tool_seed.class_name)
    mine += "\nPARAMETERS = {'type': 'object', 'properties': {'max_turns': {'type': 'integer', 'default': 5}}}\n"
    added = cli("a", "registry", "add", _write(tmp_path, "tool.py", mine), "--json")["added"][0]
    shown = cli("a", "registry", "show", added["id"], "--json")
    assert shown["metadata"]["tool_specs"] and shown["metadata"]["parameters"]["properties"]["max_turns"]
    summary = cli("a", "registry", "export", str(tmp_path / "ds"), "--license", "mit", "--repo", "team/x", "--json")
    rows = [r for f in summary["files"][1:] for r in pq.read_table(tmp_path / "ds" / f).to_pylist()]
    tool_rows = [r for r in rows if "ToolUseBaseEnv" in r["source"] or "get_tools" in r["source"]]
    assert len(tool_rows) >= 9 and all(json.loads(r["tool_specs"]) for r in tool_rows)
    assert all(json.loads(r["tool_specs"]) == [] for r in rows if r not in tool_rows)
    varying = {r["seq"] for r in rows if r["tool_specs_vary_by_seed"]}
    assert varying and varying <= {r["seq"] for r in tool_rows}  # said so where specs vary by seed
    row = next(r for r in rows if r["env_id"] == f"{added['id']}-v0")
    assert json.loads(row["parameters"])["properties"]["max_turns"]["default"] == 5
    from spade_envs.registry.toolspecs import read_parameters

    assert all((json.loads(r["parameters"]) if r["parameters"] else None) == read_parameters(r["source"]) for r in rows)
    assert any(r["parameters"] for r in rows if r["generation"] == 0) or not any(
        read_parameters(r["source"]) for r in rows if r["generation"] == 0)
    card = (tmp_path / "ds" / "README.md").read_text()
    assert "license: mit" in card and "REPO" not in card and 'load_dataset("team/x"' in card
    for column in rows[0]:
        assert f"| `{column}` |" in card  # the glossary names every column
    assert "config `gen-0001` holds only" in card and "*whole* registry" in card


def test_refresh_and_list_envs_in_a_running_process(tmp_path, spade_home):  # noqa: F811
    import subprocess
    import sys

    import gymnasium as gym

    import spade_envs
    from spade_envs.errors import RegistryError

    spade_envs.refresh()
    seeds = spade_envs.list_envs()
    assert seeds and all(r.generation == 0 for r in seeds)
    path = _write(tmp_path, "late.py", playable_source(7))
    # another process adds an environment after this one imported spade_envs
    code = ("import sys; from spade_envs.registry.store import Registry; "
            "Registry.open().add(open(sys.argv[1]).read(), generation=2)")
    subprocess.run([sys.executable, "-c", code, path], check=True, env={**__import__("os").environ})
    assert "spade/Env-01000-v0" not in gym.registry
    assert spade_envs.refresh() == 1
    obs, _ = gym.make("spade/Env-01000-v0").reset(seed=0)
    assert "Runner 7 " in obs
    listed = spade_envs.list_envs(generation=2)
    assert [str(r.env_id) for r in listed] == ["spade/Env-01000-v0"]
    assert spade_envs.list_envs(skill="arithmetic", status="active")[-1].env_id.seq == 1000
    assert len(spade_envs.list_envs()) == len(seeds) + 1
    assert spade_envs.list_envs(status="quarantined") == []
    with pytest.raises(RegistryError):
        spade_envs.list_envs(status="bogus")
    Registry.open().remove("spade/Env-01000")
    spade_envs.refresh()
    assert "spade/Env-01000-v0" not in gym.registry


def test_two_published_registries_with_colliding_ids_conflict(cli, hub, tmp_path):
    cli("a", "registry", "add", _write(tmp_path, "x.py", playable_source(1)), "--json")
    cli("a", "registry", "push", "team/one", "--json")
    cli("b", "registry", "add", _write(tmp_path, "y.py", playable_source(2)), "--json")
    cli("b", "registry", "push", "team/two", "--json")
    before = _state(tmp_path, "a")
    _, err = cli("a", "registry", "pull", "team/two", code=1)
    assert "conflict" in err and "separate SPADE_HOME" in err and err.count("\n") == 1
    assert _state(tmp_path, "a") == before  # nothing written
