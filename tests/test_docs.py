"""The tutorials in docs/ are executed: every ```python block and every ```bash block, in
order, in a fresh temporary folder that is also SPADE_HOME (each block is a complete,
copy-pasteable snippet, run as its own process with the .venv's python / spade on PATH).

Directives (HTML comments on the line right before a block):

- ``<!-- doc-test: skip REASON -->``: the block is not run (sparingly; never the main path);
- ``<!-- doc-test: background PORT -->``: a shell block that starts a server: it runs in the
  background until the end of the tutorial, PORT (as written in the tutorial) is replaced by
  a free port in every block, and the next block starts once ``/health`` answers there;
- ``<!-- doc-test: file NAME -->``: the block is the content of file NAME (written to the
  folder, not run), for tutorials that show a file and then use it;
- ``<!-- doc-test: hub -->`` anywhere in a tutorial: a local Hub test server
  (tests/hub_server.py) runs for that tutorial, exported as ``HF_ENDPOINT`` with
  ``HF_TOKEN``/``HF_HUB_DISABLE_XET`` set, so publish/pull commands never leave 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
TUTORIALS = ["gym_quickstart.md", "write_an_environment.md", "train_with_trl.md", "serve_openenv.md", "hub.md",
             "evals.md", "interop.md", "selfplay_at_scale.md"]
_BLOCK = re.compile(r"(?:<!--\s*doc-test:\s*(?P<directive>[^>]*?)\s*-->\s*\n)?```(?P<lang>[a-z]*)\n(?P<code>.*?)```",
                    re.DOTALL)
BIN = Path(sys.executable).parent


def blocks(text: str) -> list[tuple[str, str, str]]:
    """``(lang, code, directive)`` of every fenced block, in order."""
    return [(m["lang"], m["code"], (m["directive"] or "").strip()) for m in _BLOCK.finditer(text)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"background block exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"nothing answered on port {port}")


def _acebench_root() -> str | None:
    """ACEBench's data: ``ACEBENCH_ROOT``, else the shared checkout beside the repository."""
    if os.environ.get("ACEBENCH_ROOT"):
        return os.environ["ACEBENCH_ROOT"]
    found = [p / "shared" / "acebench" for p in Path(__file__).resolve().parents
             if (p / "shared" / "acebench" / "data_all").is_dir()]
    return str(found[0]) if found else None


def run_tutorial(name: str, tmp_path: Path) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    env = {**os.environ, "SPADE_HOME": str(tmp_path / "home"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "TRL_EXPERIMENTAL_SILENCE": "1", "PYTHONUNBUFFERED": "1"}
    if "ACEBENCH_ROOT" not in env and _acebench_root():  # the evals tutorial runs ACEBench's real data
        env["ACEBENCH_ROOT"] = _acebench_root()
    work = tmp_path / "work"
    work.mkdir()
    background: list[subprocess.Popen] = []
    hub = None
    if "doc-test: hub" in text:
        sys.path.insert(0, str(Path(__file__).parent))
        from hub_server import HubServer

        hub = HubServer().__enter__()
        env.update(HF_ENDPOINT=hub.url, HF_TOKEN="hf_doc_test", HF_HUB_DISABLE_XET="1", HF_HUB_OFFLINE="0")
    ports: dict[str, str] = {}
    runnable = [b for b in blocks(text) if b[0] in ("python", "bash")]
    assert runnable, f"{name} has no code blocks"
    try:
        for i, (lang, code, directive) in enumerate(runnable):
            if directive.startswith("skip"):
                assert directive[4:].strip(), f"{name}: a skip needs a reason"
                continue
            if directive.startswith("file"):
                (work / directive.split()[1]).write_text(code, encoding="utf-8")
                continue
            if directive.startswith("background"):
                ports[directive.split()[1]] = str(_free_port())
            for written, real in ports.items():
                code = code.replace(written, real)
            argv = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
            if directive.startswith("background"):
                proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
                background.append(proc)
                _wait_healthy(int(ports[directive.split()[1]]), proc)
                continue
            done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=540)
            assert done.returncode == 0, (f"{name} block {i + 1} ({lang}) failed with {done.returncode}:\n{code}\n"
                                          f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}")
    finally:
        for proc in background:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=20)
        if hub is not None:
            hub.__exit__(None, None, None)


def test_tutorial_parser_reads_directives():
    text = "x\n<!-- doc-test: skip needs a GPU -->\n```python\nprint(1)\n```\n```bash\necho 2\n```\n"
    assert blocks(text) == [("python", "print(1)\n", "skip needs a GPU"), ("bash", "echo 2\n", "")]


def test_every_tutorial_is_tested():
    references = {"architecture.md", "DESIGN.md"}  # prose for contributors, no tutorial code
    assert sorted(p.name for p in DOCS.glob("*.md") if p.name not in references) == sorted(TUTORIALS)


@pytest.mark.parametrize("name", [t for t in TUTORIALS if t != "train_with_trl.md"])
def test_tutorial_runs(name: str, tmp_path: Path) -> None:
    if name == "serve_openenv.md":
        pytest.importorskip("openenv.core", reason="openenv-core is not installed: pip install 'spade-envs[openenv]'")
    if "acebench" in (DOCS / name).read_text(encoding="utf-8").lower() and not _acebench_root():
        pytest.skip("ACEBench's data is not here (../shared/acebench or ACEBENCH_ROOT), as for the other ACEBench tests")
    run_tutorial(name, tmp_path)


@pytest.mark.slow  # a real (tiny) GRPO step on CPU
def test_trl_tutorial_runs(tmp_path: Path) -> None:
    run_tutorial("train_with_trl.md", tmp_path)
