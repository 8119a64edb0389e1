"""``spade registry import-pool`` / ``export-pool`` on a small pool in SPADE's exact layout
(games/game_<rollout:05d>_<index:03d>_<skill>.py opening with SPADE's docstring line,
manifest.jsonl, validation_manifest.jsonl, summaries, README.md, checksums.sha256):
checksums refuse a tampered pool, duplicates are skipped, a hostile file is rejected by the
sandbox while the import goes on, an interrupted import resumes without judging a file
twice, ``--json`` has its shape, and export -> import round-trips the sources."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.cli.main import main
from spade_envs.designer.pool_samples import SPADE_HEADER, pool_file_name, sample_program
from spade_envs.registry.pool_layout import read_pool, source_of

HOSTILE = """import os


class EscapeEnv:
    def reset(self, seed=None):
        os.system("touch {marker}")
        return "Say \\\\boxed{{yes}}.", {{}}

    def step(self, action):
        return "done", 1.0, True, False, {{}}
"""

#: passes the static layer; the worker's memory limit stops it at run time
FLOOD = """class FloodEnv:
    def __init__(self, **kwargs):
        self.turns = 0

    def reset(self, seed=None):
        self._pad = "x" * (8 * 1024 * 1024 * 1024)
        return "Say \\\\boxed{yes}.", {}

    def step(self, action):
        return "done", 1.0, True, False, {}
"""


def write_pool(root: Path, games: dict[str, str], manifest: list[dict] | None = None) -> Path:
    """A pool folder in SPADE's layout with a sha256sum-format checksums file over it all."""
    (root / "games").mkdir(parents=True)
    for name, text in games.items():
        (root / "games" / name).write_text(text, encoding="utf-8")
    rows = manifest if manifest is not None else [{"file": f"games/{n}", "rollout": 1, "judge": "gpt-5.5"} for n in games]
    (root / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "validation_manifest.jsonl").write_text(
        "".join(json.dumps({"game_file": n, "valid": True}) + "\n" for n in games))
    (root / "validation_summary.json").write_text(json.dumps({"total": len(games), "valid": len(games)}))
    (root / "snapshot_summary.json").write_text(json.dumps({"games": len(games)}))
    (root / "README.md").write_text("# a test pool\n")
    sums = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(root).as_posix()}\n"
            for p in sorted(root.rglob("*")) if p.is_file()]
    (root / "checksums.sha256").write_text("".join(sums))
    return root


@pytest.fixture
def pool(tmp_path):
    """Three distinct SPADE-format games, an exact duplicate under another name, a near
    duplicate (the first game with other constants and names) and two hostile files (one
    the static layer refuses, one the worker's memory limit stops)."""
    marker = tmp_path / "escaped"
    games = {
        pool_file_name(1, 0, "Mathematical_Reasoning"): SPADE_HEADER + sample_program("tally", 0),
        pool_file_name(1, 1, "Spatial_Reasoning"): SPADE_HEADER + sample_program("beacons", 1),
        pool_file_name(1, 2, "API_Orchestration"): SPADE_HEADER + sample_program("shelves", 2),
        pool_file_name(2, 0, "Mathematical_Reasoning"): SPADE_HEADER + sample_program("tally", 0),
        pool_file_name(2, 1, "Mathematical_Reasoning"): SPADE_HEADER + sample_program("tally", 3),
        pool_file_name(2, 2, "Logical_Deduction"): SPADE_HEADER + HOSTILE.format(marker=marker),
        pool_file_name(2, 3, "Optimization"): SPADE_HEADER + FLOOD,
    }
    return write_pool(tmp_path / "pool", games), marker


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_import_pool_json_duplicates_hostile(spade_home, pool, capsys):  # noqa: F811
    root, marker = pool
    code, out, err = _run(capsys, ["registry", "import-pool", str(root), "--json", "--jobs", "2"])
    assert code == 0, err
    data = json.loads(out)
    assert data["checksums"] == "verified" and data["files"] == 7 and data["jobs"] == 2
    assert data["judged"] == 6  # the exact duplicate is never judged
    assert data["accepted"] == 4 and data["registered"] == 3 and data["duplicates"] == 2
    assert data["rejected_by_stage"] == {"compile": 1, "interface": 1} and not marker.exists()
    assert len(data["ids"]) == 3 and data["generation"] == 1 and data["interrupted"] is False

    # provenance: pool, revision, file, sha256 of the file, skill from the name, manifest rows verbatim
    code, out, _ = _run(capsys, ["registry", "show", data["ids"][0], "--json"])
    shown = json.loads(out)
    name = "game_00001_000_mathematical_reasoning.py"
    prov = shown["metadata"]["pool"]
    assert prov["file"] == name and prov["name"] == "pool" and prov["revision"] is None
    assert prov["sha256"] == hashlib.sha256((root / "games" / name).read_bytes()).hexdigest()
    assert prov["manifest"] == {"file": f"games/{name}", "rollout": 1, "judge": "gpt-5.5"}
    assert prov["validation"] == {"game_file": name, "valid": True}
    assert shown["skill"] == "mathematical reasoning" and shown["generation"] == 1
    assert shown["source"] == source_of((root / "games" / name).read_text())
    code, out, _ = _run(capsys, ["registry", "show", data["ids"][2], "--json"])  # the tool-use game
    specs = json.loads(out)["metadata"]["tool_specs"]
    assert sorted(t["function"]["name"] for t in specs) == ["count", "list_shelves"]

    import gymnasium as gym  # the imported games are Gymnasium ids, sandboxed, that replay to a win

    env = gym.make(data["ids"][1])
    env.reset(seed=7)
    reward = 0.0
    for line in env.unwrapped.solution().splitlines():
        _, reward, terminated, _, _ = env.step(line)
    env.close()
    assert reward == 1.0 and terminated

    # a second run judges nothing and registers nothing new
    code, out, err = _run(capsys, ["registry", "import-pool", str(root), "--json"])
    again = json.loads(out)
    assert code == 0 and again["judged"] == 0 and again["ids"] == data["ids"] and again["generation"] == 1


def test_tampered_checksum_refuses_the_pool(spade_home, pool, capsys):  # noqa: F811
    root, _ = pool
    victim = root / "games" / "game_00001_001_spatial_reasoning.py"
    victim.write_text(victim.read_text() + "\n# changed after the checksums were taken\n")
    code, out, err = _run(capsys, ["registry", "import-pool", str(root), "--json"])
    assert code == 1 and out == ""
    assert "games/game_00001_001_spatial_reasoning.py" in err and "sha256" in err and "Traceback" not in err
    code, out, _ = _run(capsys, ["registry", "list", "--generation", "1", "--json"])
    assert json.loads(out)["envs"] == []
    journal = spade_home / "pool_imports.sqlite3"
    assert not journal.exists() or sqlite3.connect(journal).execute("SELECT count(*) FROM judged").fetchone()[0] == 0

    victim.unlink()  # a listed file that is missing refuses the pool too
    code, _, err = _run(capsys, ["registry", "import-pool", str(root)])
    assert code == 1 and "game_00001_001_spatial_reasoning.py" in err and "missing" in err


def test_unlisted_game_and_paths_outside_are_refused(tmp_path):
    from spade_envs.registry.pool_layout import PoolError

    root = write_pool(tmp_path / "p", {pool_file_name(1, 0, "Optimization"): SPADE_HEADER + sample_program("tally", 5)})
    (root / "games" / "game_00009_000_optimization.py").write_text(SPADE_HEADER + sample_program("beacons", 5))
    with pytest.raises(PoolError, match="game_00009_000_optimization.py is not listed"):
        read_pool(root)
    (root / "games" / "game_00009_000_optimization.py").unlink()
    with open(root / "checksums.sha256", "a") as fh:
        fh.write(f"{'0' * 64}  ../outside.txt\n")
    with pytest.raises(PoolError, match="outside the pool"):
        read_pool(root)


def test_interrupted_import_resumes_without_judging_twice(spade_home, pool):  # noqa: F811
    from spade_envs.cli.pool_import import import_pool

    root, _ = pool
    first: list[str] = []

    def stop_after_two(name, result):
        first.append(name)
        if len(first) == 2:
            raise KeyboardInterrupt

    out = import_pool(str(root), jobs=1, on_result=stop_after_two, progress=False)
    assert out["interrupted"] is True and out["judged"] == 2 and out["pending"] == 4
    second: list[str] = []
    out = import_pool(str(root), jobs=2, on_result=lambda name, result: second.append(name), progress=False)
    assert out["interrupted"] is False and out["judged_earlier"] == 2
    assert not set(first) & set(second) and len(second) == 4  # nothing judged twice
    assert out["registered"] == 3 and out["duplicates"] == 2 and out["rejected"] == 2 and out["pending"] == 0


def test_export_then_import_round_trips(spade_home, pool, capsys, tmp_path, monkeypatch):  # noqa: F811
    root, _ = pool
    code, out, err = _run(capsys, ["registry", "import-pool", str(root), "--json", "--jobs", "1"])
    assert code == 0, err
    ids = json.loads(out)["ids"]
    before = {}
    for env_id in ids:
        _, shown, _ = _run(capsys, ["registry", "show", env_id, "--json"])
        before[env_id] = json.loads(shown)["source"]

    exported = tmp_path / "exported"
    code, out, err = _run(capsys, ["registry", "export-pool", str(exported), "--json"])
    assert code == 0, err
    assert json.loads(out)["games"] == 3
    for name in ("manifest.jsonl", "validation_manifest.jsonl", "validation_summary.json", "snapshot_summary.json",
                 "README.md", "checksums.sha256"):
        assert (exported / name).is_file()
    files = sorted((exported / "games").glob("game_*.py"))
    assert len(files) == 3
    for f in files:  # SPADE's own files come back byte for byte, each opening with the docstring line
        assert f.read_text().startswith('"""') and f.read_bytes() == (root / "games" / f.name).read_bytes()
    assert read_pool(exported).checksums == "verified"

    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "fresh_home"))
    code, out, err = _run(capsys, ["registry", "import-pool", str(exported), "--json", "--jobs", "1"])
    assert code == 0, err
    again = json.loads(out)
    assert again["registered"] == 3
    after = set()
    for env_id in again["ids"]:
        _, shown, _ = _run(capsys, ["registry", "show", env_id, "--json"])
        after.add(json.loads(shown)["source"])
    assert after == set(before.values())
