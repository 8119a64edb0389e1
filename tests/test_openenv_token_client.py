"""``token_client``: the documented OpenEnv client for ``spade serve --token`` (no private
attribute in user code), against a real server in a child process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("openenv.core")

from spade_envs.errors import IntegrationError  # noqa: E402
from spade_envs.integrations.openenv_client import token_client  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _port()
    env = {**os.environ, "SPADE_SERVE_TOKEN": "s3cret/+", "SPADE_HOME": str(tmp_path_factory.mktemp("home"))}
    spade = os.path.join(os.path.dirname(sys.executable), "spade")
    proc = subprocess.Popen([spade, "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"spade serve did not start: {proc.stderr.read()[-2000:]}")
            time.sleep(0.3)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def test_token_client_plays_and_a_wrong_token_is_refused(server):
    with token_client(server, "s3cret/+").sync() as env:
        result = env.reset(env_id="spade/Env-00001", seed=0)
        assert result.observation["text"]
    with pytest.raises(Exception):
        with token_client(server, "wrong").sync() as env:
            env.reset(env_id="spade/Env-00001", seed=0)


def test_missing_token_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("SPADE_SERVE_TOKEN", raising=False)
    with pytest.raises(IntegrationError, match="SPADE_SERVE_TOKEN"):
        token_client("http://127.0.0.1:1")
