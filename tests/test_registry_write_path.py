"""The one write path of an accepted environment (DESIGN.md section 7, issue 30): every
path that registers an accepted program (the write function itself, ``spade registry
add``, ``spade registry import``, the designer, self-play) stores MEASURED tool specs, so
a tool-use environment never lands with ``[]``; specs claimed by a caller are ignored."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from spade_envs.cli import registry_common
from spade_envs.cli.main import main
from spade_envs.registry.catalog import seed_records
from spade_envs.registry.store import Registry
from spade_envs.registry.write import measure_tool_specs, register_accepted
from spade_envs.trust import get_runtime
from registry_helpers import spade_home  # noqa: F401  (fixture)

TOOL_PROGRAM = Path(__file__).parent / "spade_programs" / "game_00001_003_api_orchestration.py"


def _tool_source(tag: str = "") -> str:
    """A tool-use program that is in no registry yet (a renamed tool seed)."""
    seed = next(r for r in seed_records() if "ToolUseBaseEnv" in r.source)
    return seed.source.replace(seed.class_name, f"Mine{tag}{seed.class_name}")


def _stored_specs(reg: Registry, env_id: str) -> list:
    return list(reg.get(env_id).metadata.get("tool_specs") or [])


def _static_accept(source: str, filename: str) -> dict:
    return {"accepted": True, "rejected_at": None, "stages": [{"name": "static", "ok": True, "detail": "test"}]}


@pytest.fixture
def reg(tmp_path):
    r = Registry.open(tmp_path / "reg.sqlite3")
    yield r
    r.close()


def test_register_accepted_measures_and_ignores_claimed_specs(reg):
    forged = [{"type": "function", "function": {"name": "forged", "parameters": {"type": "object"}}}]
    res = register_accepted(reg, _tool_source("A"), filename="a.py", runtime=get_runtime(trusted=True),
                            tool_specs=forged, metadata={"tool_specs_vary_by_seed": True})
    specs = _stored_specs(reg, str(res.env_id))
    assert specs and "forged" not in {s["function"]["name"] for s in specs}
    assert specs == measure_tool_specs(_tool_source("A"), runtime=get_runtime(trusted=True))["tool_specs"]
    # a text-only program stores [] and no vary flag, whatever the caller claimed
    text = next(r for r in seed_records() if "ToolUseBaseEnv" not in r.source and "get_tools" not in r.source)
    res = register_accepted(reg, text.source.replace(text.class_name, "Other" + text.class_name),
                            runtime=get_runtime(trusted=True), tool_specs=forged, metadata={"tool_specs_vary_by_seed": True})
    rec = reg.get(str(res.env_id))
    assert rec.metadata.get("tool_specs") == [] and not rec.metadata.get("tool_specs_vary_by_seed")


def test_default_runtime_is_the_sandbox_and_reads_specs(reg):
    res = register_accepted(reg, TOOL_PROGRAM.read_text(), filename=TOOL_PROGRAM.name)
    names = {s["function"]["name"] for s in _stored_specs(reg, str(res.env_id))}
    assert {"pwd", "ls", "cd", "mkdir", "mv"} <= names


def _cli(monkeypatch, capsys, home: Path, *args: str) -> dict:
    monkeypatch.setenv("SPADE_HOME", str(home))
    monkeypatch.setattr(registry_common, "acceptance_runner", lambda *a, **k: _static_accept)
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_cli_add_stores_tool_specs(spade_home, monkeypatch, capsys, tmp_path):  # noqa: F811
    path = tmp_path / "tool.py"
    path.write_text(_tool_source("Cli"), encoding="utf-8")
    added = _cli(monkeypatch, capsys, spade_home, "registry", "add", str(path), "--json")["added"][0]
    with Registry.open(spade_home / "registry.sqlite3") as store:
        assert _stored_specs(store, added["id"])


def test_cli_import_stores_tool_specs(spade_home, monkeypatch, capsys, tmp_path):  # noqa: F811
    pool = tmp_path / "pool" / "games"
    pool.mkdir(parents=True)
    (pool / TOOL_PROGRAM.name).write_text(TOOL_PROGRAM.read_text(), encoding="utf-8")
    result = _cli(monkeypatch, capsys, spade_home, "registry", "import", str(pool / TOOL_PROGRAM.name), "--json")
    (row,) = [r for r in result["files"] if r["verdict"] == "added"]
    with Registry.open(spade_home / "registry.sqlite3") as store:
        assert {"pwd", "mv"} <= {s["function"]["name"] for s in _stored_specs(store, row["id"])}


def test_designer_registration_stores_tool_specs(reg):
    from spade_envs.designer.designer import DesignConfig, EnvironmentDesigner
    from designer_fakes import ScriptedAgent, ScriptedBackend, fenced

    backend = ScriptedBackend([fenced(TOOL_PROGRAM.read_text())])
    agent = ScriptedAgent(hint_returns=[1.0, 1.0], plain_returns=[0.0, 0.0])
    config = DesignConfig(model="fake:scripted", mode="tool", skill="api orchestration", max_repairs=0,
                          hint_plays=2, plain_plays=2)
    run = EnvironmentDesigner(config, backend=backend, agent=agent, registry=reg).run()
    (c,) = run.candidates
    assert c.accepted and c.env_id, [a.verdicts for a in c.attempts]
    assert {"pwd", "mv"} <= {s["function"]["name"] for s in _stored_specs(reg, c.env_id)}


def test_selfplay_registration_stores_tool_specs(reg):
    from spade_envs.designer.proposal import Proposal
    from spade_envs.selfplay.registration import Registrar

    registrar = Registrar(reg, designer_model="fake")
    p = Proposal("c1", "r0-p0", "tool", [], [], [], "", skill="api orchestration", doc_ref="doc")
    source = _tool_source("SelfPlay")
    registrar.add_pending(p, "pending:c1", source, "program", 0)
    report = registrar.register(0, {})
    assert report.registered_new == 1 and report.generation == 1
    ((key, eid),) = report.renamed
    rec = reg.get(eid)
    assert key == "pending:c1" and rec.metadata.get("selfplay_round") == 0 and rec.metadata.get("candidate") == "c1"
    measured = measure_tool_specs(source, runtime=get_runtime(trusted=True))["tool_specs"]
    assert len(measured) >= 2 and _stored_specs(reg, eid) == measured  # measured on the way in: every tool


def test_every_variant_goes_through_the_one_variant_write_path(reg, monkeypatch):
    """Self-play's params mode and ``spade design --mode params`` both register variants
    with ``registry.write.register_variant``."""
    import spade_envs.registry.write as write
    from spade_envs.designer.acceptance import StageVerdict
    from spade_envs.designer.params_mode import register_variants
    from spade_envs.designer.proposal import Proposal
    from spade_envs.errors import Stage
    from spade_envs.selfplay.registration import Registrar

    calls = []
    real = write.register_variant

    def spy(registry, parent, params, **fields):
        calls.append((parent, dict(params), fields.get("metadata", {}).get("mode")))
        return real(registry, parent, params, **fields)

    monkeypatch.setattr(write, "register_variant", spy)
    from variant_programs import SUM_SOURCE

    pid = str(reg.add(SUM_SOURCE).env_id)
    eid, new = Registrar(reg, designer_model="fake").register_variant(
        pid, {"n_terms": 5}, round_no=0, cid="c1", acceptance=[StageVerdict(Stage.PARAMS, True, "")])
    assert new and reg.get(eid).parent == pid
    prop = Proposal(cid="c2", group="g", mode="params", offers=[pid], messages=[], prompt_hash="h", prompt_ids=[],
                    completion_ids=[], logprobs=[], text="{}", constrained=False, parent=pid,
                    point={"n_terms": 6}, verdicts=[StageVerdict(Stage.PARAMS, True, "")])
    assert register_variants(reg, [prop], generation=1)[0].new
    assert [c[0] for c in calls] == [pid, pid] and [c[2] for c in calls] == ["params", "params"]


def test_pull_measures_tool_specs_not_the_datasets_claim(spade_home, monkeypatch, capsys, tmp_path):  # noqa: F811
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import HfApi
    from hub_server import HubServer

    from spade_envs.registry.hub_export import export

    with Registry.open(tmp_path / "src.sqlite3") as src:
        register_accepted(src, TOOL_PROGRAM.read_text(), filename=TOOL_PROGRAM.name, generation=1)
        export(src.list(), tmp_path / "ds")
    (path,) = (tmp_path / "ds" / "data").rglob("*.parquet")
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        row["tool_specs"] = "[]"  # the dataset claims no tools
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    with HubServer() as server:
        for key, value in {"HF_ENDPOINT": server.url, "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": "hf_test"}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        api = HfApi(endpoint=server.url, token="hf_test")
        api.create_repo("team/tools", repo_type="dataset")
        api.upload_folder(repo_id="team/tools", repo_type="dataset", folder_path=str(tmp_path / "ds"))
        monkeypatch.setenv("SPADE_HOME", str(spade_home))
        capsys.readouterr()
        assert main(["registry", "pull", "team/tools", "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["added"] == 1
    with Registry.open(spade_home / "registry.sqlite3") as store:
        (rec,) = store.list()
        assert rec.status == "active", rec.metadata.get("status_reason")
        assert {"pwd", "mv"} <= {s["function"]["name"] for s in rec.metadata["tool_specs"]}
