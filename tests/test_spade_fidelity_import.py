"""``spade registry import``: SPADE-format pools (a folder of saved game files, JSONL,
Parquet) come in with one verdict per file; what is stored replays to a win through
``gym.make``; unverified entries are marked and filtered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.cli.main import main

PROGRAMS = Path(__file__).parent / "spade_programs"
pytestmark = pytest.mark.skipif(not PROGRAMS.is_dir(), reason="no SPADE-format programs")


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def pool(tmp_path):
    """A SPADE run folder: five games, a duplicate under another name, a broken game,
    one of SPADE's own rejects with its reason file, and a stray file."""
    d = tmp_path / "spare_games"
    d.mkdir()
    for p in PROGRAMS.glob("game_*.py"):
        shutil.copy(p, d / p.name)
    shutil.copy(PROGRAMS / "game_00001_000_mathematical_reasoning.py", d / "game_00002_000_mathematical_reasoning.py")
    (d / "game_00002_001_optimization.py").write_text('"""SPARE self-play generated game"""\n\nclass BrokenEnv:\n    pass\n')
    (d / "reject_00002_002_optimization_validate.py").write_text("class XEnv: pass\n")
    (d / "reject_00002_002_optimization_validate.reason.txt").write_text("no")
    (d / "notes.md").write_text("not a game")
    return d


def test_import_folder_json(spade_home, pool, capsys):  # noqa: F811
    code, out, err = _run(capsys, ["registry", "import", str(pool), "--json"])
    assert code == 0, err
    data = json.loads(out)  # exactly one JSON object
    by_file = {Path(f["file"]).name: f for f in data["files"]}
    assert len(by_file) == 8  # 7 game files + the reject; notes.md and the reason file are not candidates
    for name in (p.name for p in PROGRAMS.glob("game_*.py")):
        assert by_file[name]["verdict"] == "added", (by_file[name]["rejected_at"], by_file[name]["detail"])
    assert by_file["game_00001_002_logical_deduction.py"]["verified"] is False
    assert by_file["game_00001_003_api_orchestration.py"]["verified"] is True
    assert by_file["game_00002_000_mathematical_reasoning.py"]["verdict"] == "duplicate"
    assert by_file["game_00002_001_optimization.py"]["verdict"] == "rejected"
    assert by_file["game_00002_001_optimization.py"]["rejected_at"] == "interface"
    assert by_file["reject_00002_002_optimization_validate.py"]["verdict"] == "unreadable"
    assert data["summary"] == {"added": 5, "duplicate": 1, "rejected": 1, "unreadable": 1, "unverified": 1,
                               "total": 8, "rejected_by_stage": {"interface": 1}}

    # a second import of the same pool stores nothing new
    code, out, _ = _run(capsys, ["registry", "import", str(pool), "--json"])
    again = json.loads(out)["summary"]
    assert code == 0 and again["added"] == 0 and again["duplicate"] == 6

    # the stored entries: skill from the file name, unverified marked, and each verified
    # one replays to a win through gym.make
    from spade_envs.registry.store import Registry
    from spade_envs.registry.verification import is_verified, verified_only

    with Registry.open() as reg:
        recs = reg.list()
    assert {r.skill for r in recs} >= {"spatial reasoning", "api orchestration", "logical deduction"}
    assert len(verified_only(recs)) == 4 and len(verified_only(recs, include_unverified=True)) == 5
    grid = next(r for r in recs if r.class_name == "LanternGridEnv")
    assert grid.metadata.get("solution_form", 0) == 0  # its bare moves are boxed: the observation asks for boxes
    for rec in recs:
        if not is_verified(rec):
            continue
        env = gym.make(f"{rec.env_id.base}-v{rec.env_id.version}").unwrapped
        env.reset(seed=7)
        reward = 0.0
        for action in env.solution().splitlines():
            _o, reward, terminated, truncated, _i = env.step(action)
            if terminated or truncated:
                break
        env.close()
        assert reward == 1.0, rec.class_name


def test_import_table_and_pools(spade_home, tmp_path, capsys):  # noqa: F811
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{"code": (PROGRAMS / "game_00001_000_mathematical_reasoning.py").read_text(),
             "filename": "game_00009_000_mathematical_reasoning.py"},
            {"code": "not python (", "filename": "game_00009_001_optimization.py"},
            {"other": 1}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pool.parquet")
    (tmp_path / "pool.jsonl").write_text(json.dumps({"source": (PROGRAMS / "game_00001_001_spatial_reasoning.py").read_text()})
                                         + "\n{broken\n")
    code, out, err = _run(capsys, ["registry", "import", str(tmp_path / "pool.parquet"), str(tmp_path / "pool.jsonl")])
    assert code == 0, err
    assert "registry import" in out and "added spade/Env-" in out
    assert "rejected at size_syntax" in out and "no code field" in out and "not valid JSON" in out
    code, out, _ = _run(capsys, ["registry", "list", "--json"])
    skills = {e["skill"] for e in json.loads(out)["envs"] if e["generation"] >= 1}
    assert "mathematical reasoning" in skills


def test_import_nothing_is_one_error(spade_home, tmp_path, capsys):  # noqa: F811
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _run(capsys, ["registry", "import", str(empty), "--json"])
    assert code == 2 and out == "" and "no candidate found" in err and "Traceback" not in err
