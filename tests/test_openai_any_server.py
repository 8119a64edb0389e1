"""The ``openai:URL#MODEL`` backend against a real third-party OpenAI-compatible server.

``transformers serve`` (FastAPI) answers 422 ``Unexpected fields ... {'return_token_ids'}``
to vLLM's extension; the backend must drop the named field, retry, and remember the refusal
for that server. No mock: the server is started here with the tiny random model.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("transformers")

httpx = pytest.importorskip("httpx")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def transformers_server(tmp_path_factory):
    from spade_envs.agents.models import ensure_tiny_random

    model = str(ensure_tiny_random())
    exe = Path(sys.executable).with_name("transformers")
    cmd = [str(exe)] if exe.exists() else [shutil.which("transformers") or "transformers"]
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd + ["serve", model, "--port", str(port), "--device", "cpu"],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url, model
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_server_really_refuses_the_extension(transformers_server):
    url, model = transformers_server
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
            "return_token_ids": True}
    resp = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
    assert 400 <= resp.status_code < 500 and resp.status_code != 400  # 422: the old retry missed it
    assert "return_token_ids" in resp.text


def test_backend_drops_refused_extension_and_remembers_it(transformers_server):
    from spade_envs.agents.backend_openai import OpenAIBackend, rejected_extensions

    url, model = transformers_server
    assert "return_token_ids" not in rejected_extensions(url)
    backend = OpenAIBackend(url, model, timeout_s=120, max_workers=2)
    gens = backend.chat([[{"role": "user", "content": "hi"}]], max_new_tokens=3, temperature=0.0)
    assert len(gens) == 1 and isinstance(gens[0].text, str) and gens[0].finish_reason
    assert "return_token_ids" in rejected_extensions(url)
    assert "logprobs" not in rejected_extensions(url)  # only what the server named
    backend.close()

    # a second backend for the same server sends only what it accepts: count the requests
    sent: list[dict] = []
    again = OpenAIBackend(url + "/v1", model, timeout_s=120)
    real_send = again._send

    def counting(body):
        sent.append(body)
        return real_send(body)

    again._send = counting
    again.chat([[{"role": "user", "content": "hello"}]], max_new_tokens=2, temperature=0.0)
    assert len(sent) == 1 and "return_token_ids" not in sent[0]
    again.close()


def test_openai_agent_plays_episodes_on_a_standard_server(transformers_server):
    import spade_envs  # noqa: F401  (registers the ids)
    from spade_envs.agents import PlayTask, load_agent

    url, model = transformers_server
    agent = load_agent(f"openai:{url}#{model}", max_new_tokens=4, temperature=0.0)
    episodes = agent.play([PlayTask("spade/Env-00002", 0, max_turns=1)])
    assert episodes[0].error is None and episodes[0].turns >= 1
    agent.close()
