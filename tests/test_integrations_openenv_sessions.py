"""Attacks on ``spade serve`` from its clients (issue 27, points 3 and 5):

- two real clients of ``spade serve --sandbox-all``: A opens the first environment (so
  its session thread starts the sandbox), B plays; A disconnects; B's next steps must
  still be played by B's own worker;
- a flood of unauthenticated ``POST /mcp {"method": "openenv/session/create"}`` must not
  take a session slot: a new WebSocket client still plays; ``WebSocket /mcp`` is refused;
- ``--token``: without it (or with a wrong one) nothing but ``GET /health`` answers; with
  it, over the header or a WebSocket's ``?token=``, everything plays.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="openenv-core is not installed: pip install 'spade-envs[openenv]'")

from openenv.core import GenericEnvClient  # noqa: E402

from spade_envs.gym_env import SpadeEnv  # noqa: E402

SPADE = str(Path(sys.executable).parent / "spade")
TOKEN = "s3cret-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Serve:
    """``spade serve`` in a subprocess."""

    def __init__(self, *args: str, env: dict | None = None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([SPADE, "serve", "--port", str(self.port), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=1).read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise AssertionError(f"spade serve never became healthy: {self.err[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            _, self.err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.err = self.proc.communicate()


def _post(url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body or {}).encode()
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _get(url: str, headers: dict | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _solution(env_id: str, seed: int) -> list[str]:
    env = SpadeEnv(env_id)
    env.reset(seed=seed)
    actions = env.solution_actions()
    env.close()
    return actions


def test_one_client_leaving_does_not_end_another_clients_episode():
    srv = _Serve("--sandbox-all", "--max-sessions", "4", "--idle-timeout", "0")
    try:
        actions = _solution("spade/Env-00021", 4)  # lights out: several moves
        assert len(actions) >= 3

        async def main():
            a = GenericEnvClient(base_url=srv.url)
            first = await a.reset(env_id="spade/Env-00001", seed=1)  # the first env: A's thread starts the sandbox
            assert first.observation["text"] and not first.done
            await a.step({"action": "\\boxed{0}"})
            async with GenericEnvClient(base_url=srv.url) as b:
                await b.reset(env_id="spade/Env-00021", seed=4)
                result = await b.step({"action": actions[0]})
                assert result.observation.get("error") is None
                await a.disconnect()  # A leaves: its session thread ends
                await asyncio.sleep(2.0)
                for action in actions[1:]:
                    result = await b.step({"action": action})
                    assert result.observation.get("error") is None, result.observation
                return result

        result = asyncio.run(main())
        assert result.done and result.reward == 1.0
    finally:
        srv.stop()
    assert "Traceback" not in srv.err


def test_session_create_flood_leaves_every_slot_free():
    srv = _Serve("--max-sessions", "2", "--idle-timeout", "600")
    try:
        for i in range(8):
            status, body = _post(f"{srv.url}/mcp", {"jsonrpc": "2.0", "id": i, "method": "openenv/session/create",
                                                    "params": {}})
            assert status == 200 and body["jsonrpc"] == "2.0" and body["id"] == i
            assert "error" in body and "/ws" in body["error"]["message"]
        status, body = _post(f"{srv.url}/mcp", {})  # what `openenv validate` sends: a JSON-RPC answer
        assert status == 200 and body.get("jsonrpc") == "2.0"

        async def main():
            async with GenericEnvClient(base_url=srv.url) as one, GenericEnvClient(base_url=srv.url) as two:
                got = await asyncio.gather(one.reset(env_id="spade/Env-00001", seed=0),
                                           two.reset(env_id="spade/Env-00001", seed=1))
                return [r.observation["text"] for r in got]

        assert all(asyncio.run(main()))  # both slots were still free

        async def mcp_socket():
            from websockets.asyncio.client import connect

            async with connect(f"ws://127.0.0.1:{srv.port}/mcp") as ws:
                first = json.loads(await ws.recv())
                return first

        refusal = asyncio.run(mcp_socket())
        assert refusal["error"]["message"].startswith("this server does not serve MCP")
    finally:
        srv.stop()
    assert "Traceback" not in srv.err


class _TokenClient(GenericEnvClient):
    """OpenEnv's client with the server's token on its WebSocket URL."""

    def __init__(self, base_url: str, token: str, **kwargs) -> None:
        super().__init__(base_url, **kwargs)
        self._ws_url = f"{self._ws_url}?token={token}"


def test_token_guards_every_route_but_health():
    srv = _Serve("--max-sessions", "2", env={"SPADE_SERVE_TOKEN": TOKEN})
    try:
        url = srv.url
        assert _get(f"{url}/health") == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            assert _get(f"{url}/schema", headers) == 401
            status, body = _post(f"{url}/reset", {"seed": 1}, headers)
            assert status == 401 and body["error"] == "Unauthorized"
            status, _ = _post(f"{url}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}, headers)
            assert status == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert _get(f"{url}/schema", good) == 200
        status, body = _post(f"{url}/reset", {"seed": 1}, good)
        assert status == 200 and body["observation"]["text"]

        async def play(client):
            async with client as env:
                result = await env.reset(env_id="spade/Env-00001", seed=3)
                return result.observation["text"]

        assert asyncio.run(play(_TokenClient(url, TOKEN)))
        for bad in (GenericEnvClient(base_url=url), _TokenClient(url, "wrong")):
            with pytest.raises(ConnectionError):
                asyncio.run(play(bad))
    finally:
        srv.stop()
    assert "Traceback" not in srv.err


def test_a_blank_token_is_refused_in_one_line():
    out = subprocess.run([SPADE, "serve", "--port", str(_free_port()), "--token", " "], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        "spade: error: --token must be a non-empty printable string without surrounding spaces"]
