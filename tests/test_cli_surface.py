"""CLI surface: --version, -h, a bare `spade`, arguments checked before long work starts,
and `spade serve` binding before it announces itself. One line on stderr, the right code."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

import spade_envs

SPADE = str(Path(sys.executable).parent / "spade")


def run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([SPADE, *args], capture_output=True, text=True, timeout=timeout)


def test_version_and_short_help():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"spade-envs {spade_envs.__version__}"
    for args in (["-h"], ["eval", "-h"], ["registry", "list", "-h"]):
        proc = run(*args)
        assert proc.returncode == 0 and "Usage: spade" in proc.stdout and not proc.stderr, args


def test_bare_spade_prints_usage_not_an_empty_error():
    proc = run()
    assert proc.returncode == 0 and "Usage: spade" in proc.stdout
    assert "usage error" not in proc.stderr and not proc.stderr.strip()


@pytest.mark.parametrize("agent, needle", [("foo:bar", "unknown backend 'foo'"), ("nocolon", "BACKEND:MODEL")])
def test_a_bad_agent_fails_before_any_progress_bar(agent, needle):
    proc = run("eval", "--suite", "registry", "--agent", agent, "--limit", "1")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert "scoring" not in proc.stderr and not proc.stdout


def test_eval_out_pointing_at_a_file_fails_before_the_run(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("keep me")
    for out in (target, target / "sub"):
        proc = run("eval", "--suite", "registry", "--agent", "replay:reference", "--out", str(out))
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "is a file" in lines[0], proc.stderr
        assert "scoring" not in proc.stderr
    assert target.read_text() == "keep me"  # nothing lost


def test_serve_on_a_busy_port_is_one_line_and_no_announcement():
    pytest.importorskip("openenv.core")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run("serve", "--port", str(port))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "already in use" in lines[0] and "serving" not in proc.stderr
