"""Attacks on the caller's reading of others' pool folders (issue 40, points 2, 9, 11):
links out of the pool (a linked game file, a linked ``games/`` folder, a linked manifest,
checksums listing a link), a 1 GiB sparse game file, and 100,000 ``[`` in
``manifest.jsonl`` / ``validation_summary.json``. Each must end in one clear
:class:`PoolError` (or a one-file rejection), never an outside file in the registry, a
whole read of the big file or ``internal error: RecursionError``."""

from __future__ import annotations

import hashlib
import os
import resource
from pathlib import Path

import pytest
from test_registry_pool_import import write_pool

from spade_envs.designer.pool_samples import SPADE_HEADER, pool_file_name, sample_program
from spade_envs.registry.importer import iter_candidates
from spade_envs.registry.pool_layout import PoolError, read_game, read_pool
from spade_envs.registry.safe_read import json_depth, loads_bounded

GAME = pool_file_name(1, 0, "Mathematical_Reasoning")


def _resum(root: Path) -> None:
    """Rewrite checksums.sha256 over every file (links included, as an attacker would)."""
    def digest(p: Path) -> str:  # a file over 1 MiB gets a made-up digest (never read here either)
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.stat().st_size <= 1 << 20 else "0" * 64

    sums = [f"{digest(p)}  {p.relative_to(root).as_posix()}\n"
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "checksums.sha256"]
    (root / "checksums.sha256").write_text("".join(sums))


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "outside" / "game_00009_000_secret.py"
    secret.parent.mkdir()
    secret.write_text(SPADE_HEADER + sample_program("beacons", 7))
    return secret


@pytest.mark.parametrize("checksums", [True, False])
def test_linked_game_file_refuses_the_pool(tmp_path, outside, checksums):
    root = write_pool(tmp_path / "pool", {GAME: SPADE_HEADER + sample_program("tally", 1)})
    (root / "games" / "game_00002_000_secret.py").symlink_to(outside)
    _resum(root) if checksums else (root / "checksums.sha256").unlink()
    with pytest.raises(PoolError, match="symbolic link"):
        read_pool(root)


def test_linked_games_folder_refuses_the_pool(tmp_path, outside):
    root = write_pool(tmp_path / "pool", {GAME: SPADE_HEADER + sample_program("tally", 1)})
    os.rename(root / "games", tmp_path / "real_games")
    (root / "games").symlink_to(outside.parent)
    (root / "checksums.sha256").unlink()
    with pytest.raises(PoolError, match="symbolic link"):
        read_pool(root)


def test_linked_manifest_and_summary_refuse_the_pool(tmp_path, outside):
    for name in ("manifest.jsonl", "validation_summary.json"):
        root = write_pool(tmp_path / name, {GAME: SPADE_HEADER + sample_program("tally", 1)})
        (root / name).unlink()
        (root / name).symlink_to("/etc/passwd")
        (root / "checksums.sha256").unlink()
        with pytest.raises(PoolError, match="symbolic link"):
            read_pool(root)


def test_hub_cache_links_into_blobs_are_followed(tmp_path):
    """The one exception, named by the caller: a snapshot's links into the cache's blobs/."""
    cache = tmp_path / "datasets--o--p"
    snap = write_pool(cache / "snapshots" / ("a" * 40), {GAME: SPADE_HEADER + sample_program("tally", 1)})
    (cache / "blobs").mkdir()
    for p in [p for p in snap.rglob("*") if p.is_file()]:
        blob = cache / "blobs" / hashlib.sha256(p.read_bytes()).hexdigest()
        os.rename(p, blob)
        p.symlink_to(blob)
    with pytest.raises(PoolError, match="symbolic link"):
        read_pool(snap)  # not named by the caller: refused
    pool = read_pool(snap, links_into=cache / "blobs")
    assert [g.name for g in pool.games] == [GAME] and read_game(pool.games[0]).startswith(SPADE_HEADER)


def test_sparse_gigabyte_game_is_refused_unread(tmp_path):
    root = write_pool(tmp_path / "pool", {GAME: SPADE_HEADER + sample_program("tally", 1)})
    big = root / "games" / "game_00003_000_big.py"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    (root / "checksums.sha256").unlink()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pool = read_pool(root)
    game = next(g for g in pool.games if g.name == big.name)
    with pytest.raises(PoolError, match="is 1073741824 bytes, more than"):
        read_game(game)
    _resum(root)  # listed in checksums too: still never read (hashing it would read 1 GiB)
    pool = read_pool(root)
    with pytest.raises(PoolError, match="is 1073741824 bytes, more than"):
        read_game(next(g for g in pool.games if g.name == big.name))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: far below 1 GiB


def test_registry_add_folder_does_not_follow_links_or_read_big_files(tmp_path, outside):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "ok.py").write_text(sample_program("tally", 2))
    (folder / "link.py").symlink_to(outside)
    with open(folder / "big.py", "wb") as fh:
        fh.truncate(1 << 30)
    (folder / "rows.jsonl").write_text("[" * 100_000 + "\n" + '{"code": "x = 1"}\n')
    got = {Path(c.file).name: c for c in iter_candidates([folder])}
    assert got["ok.py"].source and got["link.py"].error.startswith("a symbolic link")
    assert "cap; not read" in got["big.py"].error
    assert "nested 100000 deep" in got["rows.jsonl:1"].error and got["rows.jsonl:2"].source == "x = 1"
    named = next(iter_candidates([folder / "link.py"]))  # a path the caller names is read as named
    assert named.source and named.error is None


@pytest.mark.parametrize("name", ["manifest.jsonl", "validation_summary.json"])
def test_deeply_nested_json_is_one_clear_error(tmp_path, name):
    root = write_pool(tmp_path / "pool", {GAME: SPADE_HEADER + sample_program("tally", 1)})
    (root / name).write_text("[" * 100_000 + "\n")
    _resum(root)
    with pytest.raises(PoolError, match="nested 100000 deep"):
        read_pool(root)


def test_depth_bound_skips_strings_and_is_linear():
    assert json_depth('[{"a": "[[[\\"[["}, [1]]') == 2
    assert loads_bounded('{"code": "' + "[" * 100_000 + '"}')["code"].startswith("[[")
    with pytest.raises(ValueError, match="nested 65 deep"):
        loads_bounded("[" * 65 + "]" * 65)
