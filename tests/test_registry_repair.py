"""A damaged store is repaired or explained by every command, and the explanation works
(issue 27, point 10): a 0-byte file is an empty store (initialised by the first command);
a truncated or corrupt one gets one error line naming the file and ``spade registry
repair``, which moves it aside (nothing lost) and starts anew; another application's
file is never touched."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from registry_helpers import spade_home, synthetic_source  # noqa: F401

from spade_envs.cli.main import main
from spade_envs.errors import RegistryError, RegistryFormatError
from spade_envs.registry import forget_connections
from spade_envs.registry.catalog import seed_records
from spade_envs.registry.migrations import APPLICATION_ID
from spade_envs.registry.store import DB_NAME, Registry

#: commands a user runs against the store; each must work or explain in one line
READERS = [("registry", "list", "--json"), ("registry", "stats", "--json"), ("registry", "show", "spade/Env-01002"),
           ("registry", "deprecate", "spade/Env-01002")]


@pytest.fixture
def cli(capsys, spade_home):  # noqa: F811
    def run(*args: str) -> tuple[int, str, str]:
        forget_connections()
        capsys.readouterr()
        rc = main(list(args))
        out, err = capsys.readouterr()
        return rc, out, err

    yield run
    forget_connections()


def _store(home) -> tuple:
    home.mkdir(parents=True, exist_ok=True)
    path = home / DB_NAME
    with Registry.open(path) as reg:
        for i in range(12):
            reg.add(synthetic_source(i) + ("# padding\n" * 400), filename=f"s{i}.py")
        reg._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path, path.read_bytes()


def test_a_zero_byte_store_is_an_empty_store_for_every_command(cli, spade_home):  # noqa: F811
    spade_home.mkdir(parents=True)
    (spade_home / DB_NAME).write_bytes(b"")
    rc, out, err = cli("registry", "list", "--json")
    assert rc == 0, err  # was: "needs schema migration; run any `spade registry` command once", forever
    assert {e["id"] for e in json.loads(out)["envs"]} == {r.env_id.base for r in seed_records()}
    rc, out, err = cli("registry", "stats", "--json")
    assert rc == 0 and json.loads(out)["versions"] == 0, err
    con = sqlite3.connect(spade_home / DB_NAME)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID  # initialised for good
    con.close()


def test_a_zero_byte_store_opened_read_only_names_a_command_that_works(spade_home):  # noqa: F811
    spade_home.mkdir(parents=True)
    path = spade_home / DB_NAME
    path.write_bytes(b"")
    with pytest.raises(RegistryError, match="spade registry list") as info:
        Registry.open(path, readonly=True)
    assert str(path) in str(info.value)
    assert main(["registry", "list", "--json"]) == 0  # following the advice
    forget_connections()
    with Registry.open(path, readonly=True) as reg:
        assert reg.stats()["versions"] == 0


def test_import_with_a_zero_byte_store_registers_the_store_quietly(spade_home, tmp_path):  # noqa: F811
    spade_home.mkdir(parents=True)
    (spade_home / DB_NAME).write_bytes(b"")
    code = "import spade_envs, gymnasium as gym; print(len([i for i in gym.registry if i.startswith('spade/')]))"
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, "SPADE_HOME": str(spade_home)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) >= len(seed_records())


@pytest.mark.parametrize("damage", ["truncated", "torn-page", "bad-header"])
def test_a_corrupt_store_is_explained_by_every_command_and_repair_fixes_it(cli, spade_home, damage):  # noqa: F811
    path, good = _store(spade_home)
    if damage == "truncated":
        path.write_bytes(good[: len(good) // 3])
    elif damage == "torn-page":
        path.write_bytes(good[:8192] + bytes(range(256)) * 64 + good[8192 + 16384:])
    else:
        path.write_bytes(b"\0" * 4096 + good[4096:])
    damaged = path.read_bytes()
    for args in READERS:
        rc, out, err = cli(*args)
        lines = err.strip().splitlines()
        if rc == 0:  # a read that never meets the damaged pages may still work
            continue
        assert rc == 1 and len(lines) == 1, (args, err)
        assert str(path) in lines[0] and "`spade registry repair`" in lines[0], (args, err)
        assert "internal error" not in err and "Traceback" not in err
    rc, out, err = cli("registry", "list", "--json")
    assert rc == 1  # the whole store is read: the damage is met
    rc, out, err = cli("registry", "repair", "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert report["action"] == "moved"
    kept = spade_home / os.path.basename(report["moved_to"])
    assert kept.read_bytes()[: len(damaged)] == damaged[: len(kept.read_bytes())]  # moved, not rewritten
    for args in READERS[:2]:
        rc, out, err = cli(*args)
        assert rc == 0, (args, err)
    rc, out, err = cli("registry", "repair")
    assert rc == 0 and "is healthy" in out


def test_a_query_that_meets_corruption_raises_the_registry_error_not_sqlites(spade_home):  # noqa: F811
    path, good = _store(spade_home)
    page = 4096
    with Registry.open(path) as reg:  # find a page of the sources table and tear it
        reg._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    torn = bytearray(good)
    for start in range(len(good) // 2, len(good) - page, page):
        torn[start + 8 : start + page] = b"\xff" * (page - 8)
    path.write_bytes(bytes(torn))
    with pytest.raises(RegistryFormatError, match="spade registry repair") as info:
        with Registry.open(path) as reg:
            for i in range(12):
                reg.list()
                reg.get(f"spade/Env-{1000 + i:05d}").source  # noqa: B018
    assert not isinstance(info.value, sqlite3.Error) and info.value.kind == "corrupt"


def test_repair_leaves_a_foreign_database_untouched(cli, spade_home):  # noqa: F811
    spade_home.mkdir(parents=True)
    path = spade_home / DB_NAME
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (x TEXT)")
    con.commit()
    con.close()
    before = path.read_bytes()
    rc, out, err = cli("registry", "repair")
    assert rc == 1 and "another application" in err
    assert path.read_bytes() == before and sorted(p.name for p in spade_home.iterdir()) == [DB_NAME]


def test_repair_without_a_store_does_nothing(cli, spade_home):  # noqa: F811
    rc, out, err = cli("registry", "repair", "--json")
    assert rc == 0 and json.loads(out)["action"] == "none" and not spade_home.exists()
