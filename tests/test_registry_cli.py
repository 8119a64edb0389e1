"""``spade registry ...``: JSON shapes (DESIGN.md section 10), exit codes, import of pools."""

from __future__ import annotations

import json

import pytest
from registry_helpers import spade_home, synthetic_source  # noqa: F401

from spade_envs.cli import registry_common
from spade_envs.cli.main import main
from spade_envs.registry.catalog import seed_records


@pytest.fixture
def cli(capsys, spade_home):  # noqa: F811
    def run(*args: str, code: int = 0):
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        assert rc == code, err
        return json.loads(out) if "--json" in args else (out, err)

    return run


def _static_check(source: str, filename: str) -> dict:
    """Syntax and interface only: these tests are about the registry side, not acceptance."""
    from spade_envs.errors import EnvProgramError
    from spade_envs.program import inspect_program

    try:
        inspect_program(source, filename=filename)
    except EnvProgramError as exc:
        return {"accepted": False, "rejected_at": exc.stage, "stages": [{"name": exc.stage, "ok": False, "detail": str(exc)}]}
    return {"accepted": True, "rejected_at": None, "stages": [{"name": "static", "ok": True, "detail": "static only"}]}


@pytest.fixture
def static_acceptance(monkeypatch):
    monkeypatch.setattr(registry_common, "acceptance_runner", lambda *a, **k: _static_check)


def test_add_rejects_near_duplicates_but_not_identical_or_replacing_sources(cli, spade_home, tmp_path):  # noqa: F811
    seed = seed_records()[0]
    renamed = tmp_path / "renamed.py"
    renamed.write_text(seed.source.replace(seed.class_name, "Renamed" + seed.class_name), encoding="utf-8")
    out = cli("registry", "add", str(renamed), "--json", code=1)
    assert out["added"] == [] and out["rejected"][0]["rejected_at"] == "novelty"
    assert seed.env_id.base in out["rejected"][0]["detail"]
    same = tmp_path / "same.py"
    same.write_text(seed.source, encoding="utf-8")
    out = cli("registry", "add", str(same), "--json")
    assert out["rejected"] == [] and len(out["added"]) == 1


def test_list_without_store_shows_seeds(cli, spade_home):  # noqa: F811
    listed = cli("registry", "list", "--json")
    assert [e["id"] for e in listed["envs"]] == [r.env_id.base for r in seed_records()]
    assert set(listed["envs"][0]) >= {"id", "version", "generation", "status", "skill"}
    assert not spade_home.exists()  # listing never creates a store
    assert cli("registry", "stats", "--json")["versions"] == 0


def test_add_files_and_pool(cli, tmp_path, static_acceptance):
    (tmp_path / "a.py").write_text(synthetic_source(1))
    (tmp_path / "bad.py").write_text("print('no env here')\n")
    rows = [{"code": synthetic_source(2), "skill": "pool-skill", "generation": 3},
            {"code": synthetic_source(1)},  # same as a.py: deduplicated
            {"prompt": "no code"}]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    res = cli("registry", "add", str(tmp_path / "a.py"), str(tmp_path / "bad.py"), str(pool), "--json", code=1)
    assert res["added"] == [{"id": "spade/Env-01000", "version": 0, "new": True},
                            {"id": "spade/Env-01001", "version": 0, "new": True},
                            {"id": "spade/Env-01000", "version": 0, "new": False}]
    assert [(r["file"].split("/")[-1], r["rejected_at"]) for r in res["rejected"]] == [
        ("bad.py", "interface"), ("pool.jsonl:3", "read"), ("pool.jsonl:4", "read")]
    assert all(r["detail"] for r in res["rejected"])
    shown = cli("registry", "show", "spade/Env-01001", "--json")
    assert shown["skill"] == "pool-skill" and shown["generation"] == 3 and shown["trusted"] is False
    assert shown["acceptance"][0]["ok"] is True and shown["source"] == synthetic_source(2)
    (tmp_path / "a2.py").write_text(synthetic_source(5))
    res = cli("registry", "add", str(tmp_path / "a2.py"), "--replaces", "spade/Env-01000", "--json")
    assert res == {"added": [{"id": "spade/Env-01000", "version": 1, "new": True}], "rejected": []}
    out, _ = cli("registry", "add", str(tmp_path / "a.py"))
    assert "already stored: spade/Env-01000-v0" in out


def test_status_commands_and_listing(cli, tmp_path, static_acceptance):
    for i in range(3):
        (tmp_path / f"e{i}.py").write_text(synthetic_source(i))
    cli("registry", "add", *(str(tmp_path / f"e{i}.py") for i in range(3)), "--json")
    cli("registry", "deprecate", "spade/Env-01001", "--reason", "dull")
    cli("registry", "quarantine", "spade/Env-01002-v0", "--reason", "leaks")
    envs = cli("registry", "list", "--json", "--generation", "1")["envs"]
    assert [(e["id"], e["status"]) for e in envs] == [
        ("spade/Env-01000", "active"), ("spade/Env-01001", "deprecated"), ("spade/Env-01002", "quarantined")]
    assert len(cli("registry", "list", "--json", "--status", "active")["envs"]) == len(seed_records()) + 1
    assert cli("registry", "list", "--json", "--tag", "synthetic")["envs"][0]["id"] == "spade/Env-01000"
    stats = cli("registry", "stats", "--json")
    assert stats["by_status"] == {"active": 1, "deprecated": 1, "quarantined": 1}
    _, err = cli("registry", "show", "spade/Env-01002", code=1)
    assert "quarantined" in err and "Traceback" not in err
    _, err = cli("registry", "show", "spade/Env-07777", code=1)
    assert err.startswith("spade: error: no environment")
    import gymnasium as gym

    assert "spade/Env-01001-v0" in gym.registry and "spade/Env-01002-v0" not in gym.registry


def test_real_acceptance_rejects_garbage(cli, tmp_path):
    (tmp_path / "junk.py").write_text("def broken(:\n")
    res = cli("registry", "add", str(tmp_path / "junk.py"), "--json", code=1)
    assert res["added"] == [] and "syntax" in res["rejected"][0]["rejected_at"]


def test_corrupt_store_is_one_clear_line(cli, spade_home):  # noqa: F811
    spade_home.mkdir(parents=True)
    (spade_home / "registry.sqlite3").write_bytes(b"garbage" * 200)
    _, err = cli("registry", "stats", code=1)
    assert err.count("\n") == 1 and "not a spade registry" in err
    _, err = cli("registry", "list", code=1)
    assert "not a spade registry" in err


def test_error_paths_are_one_line(cli, spade_home, tmp_path, monkeypatch):  # noqa: F811
    (tmp_path / "e.py").write_text(synthetic_source(1))
    spade_home.parent.mkdir(parents=True, exist_ok=True)
    spade_home.write_text("not a folder")  # SPADE_HOME is a file
    _, err = cli("registry", "add", str(tmp_path / "e.py"), code=1)
    assert err.count("\n") == 1 and "is a file, not a folder" in err and "internal error" not in err
    spade_home.unlink()
    _, err = cli("registry", "export", str(tmp_path / "e.py"), code=1)  # export onto a file
    assert err.count("\n") == 1 and "is a file" in err
    _, err = cli("registry", "list", "--status", "bogus", code=2)
    assert "active, deprecated, quarantined" in err
    cli("registry", "list", "--generation", "-1", code=2)
    cli("registry", "add", str(tmp_path / "e.py"), "--generation", "-1", code=2)
    out, err = cli("registry", "add", str(tmp_path / "missing.py"), code=1)
    assert "no such file" in err and "no such file" not in out


def test_unwritable_store_is_a_registry_error(tmp_path):
    """A store that cannot be written (read-only home; root ignores chmod, so the
    connection itself is read-only here) gives RegistryError, not sqlite's OperationalError."""
    import sqlite3

    from spade_envs.errors import RegistryError
    from spade_envs.registry.store import Registry

    path = tmp_path / "r.sqlite3"
    with Registry.open(path) as writable:
        writable.add(synthetic_source(2))
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    reg = Registry(conn, path, readonly=False)
    with pytest.raises(RegistryError, match="cannot write the registry store"):
        reg.add(synthetic_source(1))
    with pytest.raises(RegistryError, match="cannot write"):
        reg.set_status("spade/Env-01000", "deprecated")
    assert reg.get("spade/Env-01000").status == "active"  # nothing lost, still readable


def test_corrupt_store_at_import_is_one_warning_line(spade_home):  # noqa: F811
    import os
    import subprocess
    import sys

    spade_home.mkdir(parents=True)
    (spade_home / "registry.sqlite3").write_bytes(b"garbage" * 200)
    env = {**os.environ, "SPADE_HOME": str(spade_home)}
    out = subprocess.run([sys.executable, "-c", "import spade_envs"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr.count("\n") == 1 and "not a spade registry" in out.stderr
    spade = os.path.join(os.path.dirname(sys.executable), "spade")
    out = subprocess.run([spade, "registry", "stats"], env=env, capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "RuntimeWarning" not in out.stderr
