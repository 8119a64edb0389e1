"""``spade validate FILE.py [--json] [--trust-remote-code]``: exit codes 0/1/2 and the JSON
shape of DESIGN.md section 10, through the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPADE = Path(sys.executable).with_name("spade")
SEED = ROOT / "spade_envs" / "seeds" / "env_00001_modular_lock.py"


def spade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SPADE), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def _sandbox_available() -> bool:
    try:
        import spade_envs.sandbox  # noqa: F401
    except ImportError:
        return False
    return True


def test_accepted_file_exits_0_with_the_json_shape():
    flags = [] if _sandbox_available() else ["--trust-remote-code"]
    res = spade("validate", str(SEED), "--json", *flags)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)  # exactly one JSON object on stdout
    assert data["accepted"] is True and data["rejected_at"] is None
    assert [s["name"] for s in data["stages"]][:3] == ["size_syntax", "compile", "interface"]
    assert all(isinstance(s["ok"], bool) and isinstance(s["detail"], str) for s in data["stages"])
    assert res.stdout.count("\n") == 1


def test_rejected_file_exits_1_and_names_the_stage(tmp_path):
    broken = tmp_path / "leaky_env.py"
    # any boxed number wins (a solution that merely loses is accepted unverified, as SPADE runs it)
    broken.write_text(SEED.read_text().replace("if m and int(m.group(1)) == self._answer:", "if m:"))
    res = spade("validate", str(broken), "--json", "--trust-remote-code")
    assert res.returncode == 1, res.stderr
    data = json.loads(res.stdout)
    assert data["accepted"] is False and data["rejected_at"] == "garbage"
    assert data["stages"][-1] == {**data["stages"][-1], "name": "garbage", "ok": False}
    assert "garbage wins" in data["stages"][-1]["detail"]
    table = spade("validate", str(broken), "--trust-remote-code")  # human output: a table
    assert table.returncode == 1 and "garbage" in table.stdout and "rejected at" in table.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["validate", "/nonexistent/env.py"], "no such file"),
        (["validate", "README.md"], "expected a Python source file"),
        (["validate", str(SEED), "--bogus"], "No such option"),
        (["validate"], "Missing argument"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, message):
    res = spade(*args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert message in res.stderr and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert res.stdout == ""


def test_binary_file_is_a_usage_error(tmp_path):
    junk = tmp_path / "junk.py"
    junk.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    res = spade("validate", str(junk), "--json")
    assert res.returncode == 2 and "not UTF-8" in res.stderr
