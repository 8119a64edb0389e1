"""Issue 39 point 11: SPADE's three released layouts import, each from a small fixture
built from SPADE's published descriptions: the games folder (``games/game_*.py``,
``manifest.jsonl``, ``checksums.sha256``), the Qwen3-30B games folder (``manifest.json``
listing ``games/gen_<NNNN>/game_<NNNNN>_<NNN>_<slug>.py``) and the GPT-5.5 tool-use
Parquet rows (``game_id``, ``file_name`` ``game_000000.py``, ``original_file_name``,
``skill``, ``sha256``, ``line_count``, ``byte_count``, ``code``). Provenance names the
pool, the file or row and its sha256; a resumed import judges nothing twice; a digest
that does not match refuses the pool."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from registry_helpers import spade_home  # noqa: F401 - fixture

from spade_envs.designer.pool_samples import SPADE_HEADER, sample_program
from spade_envs.registry.pool_layout import PoolError, read_game, source_of
from spade_envs.registry.pool_layouts import read_any_pool as read_pool


def thirty_b_pool(root: Path) -> Path:
    games = []
    for gen, (template, variant, skill) in enumerate([("tally", 11, "Mathematical Reasoning"),
                                                      ("beacons", 12, "Spatial Reasoning"),
                                                      ("shelves", 13, None)]):
        slug = (skill or "general").lower().replace(" ", "_")
        rel = f"games/gen_{gen:04d}/game_{gen * 4:05d}_000_{slug}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(SPADE_HEADER + sample_program(template, variant))
        games.append({"generation": f"gen_{gen:04d}", "step": gen * 4, "filename": Path(rel).name, "skill": skill,
                      "difficulty": "medium", "path_in_dataset": rel, "has_hint": False, "reward_joined": False})
    (root / "manifest.json").write_text(json.dumps({"summary": {"n_games": 3, "n_skipped": 0}, "games": games}))
    (root / "README.md").write_text("# generated environments\n")
    return root


def tool_use_rows(root: Path, *, tamper: bool = False) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for i, (template, skill) in enumerate([("shelves", "state_modification"), ("tally", "data_retrieval")]):
        code = sample_program(template, 21 + i)
        rows.append({"game_id": f"game_{i:06d}", "file_name": f"game_{i:06d}.py",
                     "original_file_name": f"game_{i * 128:04d}_{skill}.py", "skill": skill,
                     "sha256": hashlib.sha256(code.encode()).hexdigest(), "line_count": code.count("\n"),
                     "byte_count": len(code.encode()), "code": code + ("# changed\n" if tamper and i else "")})
    (root / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "data" / "train-00000-of-00001.parquet")
    return root


def test_thirty_b_manifest_layout_reads(tmp_path):
    pool = read_pool(thirty_b_pool(tmp_path / "p30"))
    assert [g.rel for g in pool.games][0] == "games/gen_0000/game_00000_000_mathematical_reasoning.py"
    assert [g.skill for g in pool.games] == ["Mathematical Reasoning", "Spatial Reasoning", "general"]
    assert pool.games[1].manifest["step"] == 4 and pool.summaries["manifest.json"]["n_games"] == 3
    assert source_of(read_game(pool.games[0])) == sample_program("tally", 11)


def test_manifest_entry_outside_the_pool_or_linked_is_refused(tmp_path):
    root = thirty_b_pool(tmp_path / "p30")
    data = json.loads((root / "manifest.json").read_text())
    data["games"][0]["path_in_dataset"] = "../../etc/passwd.py"
    data["games"][0]["filename"] = "x.py"
    (root / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(PoolError, match="outside the pool|names no file"):
        read_pool(root)
    root = thirty_b_pool(tmp_path / "q30")
    target = root / "games" / "gen_0001"
    (target / "game_00004_000_spatial_reasoning.py").unlink()
    (target / "game_00004_000_spatial_reasoning.py").symlink_to(tmp_path / "p30" / "README.md")
    with pytest.raises(PoolError, match="symbolic link"):
        read_pool(root)


def test_tool_use_parquet_rows_read_with_their_digests(tmp_path):
    pytest.importorskip("pyarrow")
    pool = read_pool(tool_use_rows(tmp_path / "tu"))
    assert [g.name for g in pool.games] == ["game_000000.py", "game_000001.py"]
    assert [g.skill for g in pool.games] == ["state modification", "data retrieval"]
    assert pool.games[0].rel == "data/train-00000-of-00001.parquet:1:game_000000.py"
    assert read_game(pool.games[1]) == sample_program("tally", 22) and "code" not in pool.games[1].manifest
    with pytest.raises(PoolError, match="does not match its sha256"):
        read_pool(tool_use_rows(tmp_path / "bad", tamper=True))


@pytest.mark.parametrize("layout", ["thirty_b", "tool_use"])
def test_each_layout_imports_with_provenance_and_resumes(spade_home, tmp_path, capsys, layout):  # noqa: F811
    from spade_envs.cli.main import main
    from spade_envs.cli.pool_import import import_pool

    if layout == "tool_use":
        pytest.importorskip("pyarrow")
    root = thirty_b_pool(tmp_path / "p") if layout == "thirty_b" else tool_use_rows(tmp_path / "p")
    out = import_pool(str(root), jobs=1, progress=False)
    assert out["registered"] == out["files"] and out["registered"] >= 2, out
    prov = []
    for env_id in out["ids"]:
        assert main(["registry", "show", env_id, "--json"]) == 0
        prov.append(json.loads(capsys.readouterr().out)["metadata"]["pool"])
    assert all(p["sha256"] and p["path"] and p["name"] == "p" for p in prov)
    again = import_pool(str(root), jobs=1, progress=False)
    assert again["judged"] == 0 and again["registered"] == out["registered"]


MAZE = '''import random
import re


class ShortestPathGridEnv:
    """Walk the shortest path through a small grid (a reasoning-gym hard task's name)."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._w, self._h = rng.randint(2, 9), rng.randint(2, 9)
        return f"A {self._w} by {self._h} grid: how many moves from one corner to the opposite? \\\\boxed{{n}}", {}

    def solution(self):
        return str(self._w + self._h - 2)

    def step(self, action):
        self.turn_count += 1
        m = re.search(r"\\\\boxed\\{(\\d+)\\}", action)
        if m and int(m.group(1)) == self._w + self._h - 2:
            return "Shortest.", 1.0, True, False, {}
        return "Longer than needed.", 0.0, False, self.turn_count >= self.max_turns, {}
'''


def test_decontamination_flags_counts_and_keeps_out_of_training(spade_home, tmp_path, capsys):  # noqa: F811
    from spade_envs.cli.main import main
    from spade_envs.cli.pool_import import import_pool
    from spade_envs.evals.contamination import eval_overlap, excluded_from_training

    assert eval_overlap(MAZE) == ["reasoning-gym hard: shortest_path (name 'ShortestPathGrid')"]
    assert eval_overlap(sample_program("tally", 1)) == []
    root = thirty_b_pool(tmp_path / "p")
    data = json.loads((root / "manifest.json").read_text())
    rel = "games/gen_0009/game_00036_000_spatial_reasoning.py"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(SPADE_HEADER + MAZE)
    data["games"].append({"filename": Path(rel).name, "skill": "Spatial Reasoning", "path_in_dataset": rel})
    (root / "manifest.json").write_text(json.dumps(data))
    out = import_pool(str(root), jobs=1, progress=False)
    assert out["registered"] == 4 and out["eval_overlap"] == 1, out
    flagged = []
    for env_id in out["ids"]:
        assert main(["registry", "show", env_id, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        if excluded_from_training(shown["metadata"]):
            flagged.append((shown["metadata"]["pool"]["eval_overlap"], shown.get("tags") or shown["metadata"].get("tags")))
    assert len(flagged) == 1 and "shortest_path" in flagged[0][0][0] and "eval-overlap" in flagged[0][1]
