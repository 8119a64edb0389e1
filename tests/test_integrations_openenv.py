"""OpenEnv server: openenv-core's own client (GenericEnvClient) plays registry environments
served by `spade serve` / `create_server` on 127.0.0.1: a win, 16 concurrent sessions
without cross-talk (checked against a local replay), the session limit, idle timeouts."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="openenv-core is not installed: pip install 'spade-envs[openenv]'")

from openenv.core import GenericEnvClient  # noqa: E402

import spade_envs  # noqa: E402,F401
from spade_envs.gym_env import SpadeEnv  # noqa: E402
from spade_envs.integrations.openenv_server import create_server  # noqa: E402

SPADE = str(Path(sys.executable).parent / "spade")
#: text games and tool-use environments, single- and multi-step
MIXED_ENVS = ["spade/Env-00001", "spade/Env-00013", "spade/Env-00021", "spade/Env-00016",
              "spade/Env-00007", "spade/Env-00019", "spade/Env-00023", "spade/Env-00004"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(port: int, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"server on port {port} never became healthy")


class _ThreadServer:
    def __init__(self, **options) -> None:
        import uvicorn

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_server(**options), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        _wait_healthy(self.port)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def server16():
    srv = _ThreadServer(max_sessions=16, idle_timeout=None)
    yield srv
    srv.stop()


def _reference(env_id: str, seed: int) -> tuple[str, list[str]]:
    env = SpadeEnv(env_id)
    obs, _ = env.reset(seed=seed)
    actions = env.solution_actions()
    env.close()
    return obs, actions


def _local_replay(env_id: str, seed: int, actions: list[str]) -> list[tuple[str, float, bool]]:
    env = SpadeEnv(env_id)
    obs, _ = env.reset(seed=seed)
    out = [(obs, 0.0, False)]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        out.append((obs, reward, terminated or truncated))
    env.close()
    return out


def test_spade_serve_cli_plays_a_seed_env_to_a_win():
    port = _free_port()
    proc = subprocess.Popen([SPADE, "serve", "--port", str(port), "--max-sessions", "2", "--idle-timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(port)
        first_obs, actions = _reference("spade/Env-00013", 7)
        with GenericEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as env:
            result = env.reset(env_id="spade/Env-00013", seed=7)
            assert result.observation["text"] == first_obs and not result.done
            assert {t["function"]["name"] for t in result.observation["tools"]} >= {"find_customer", "get_balance"}
            for action in actions:
                result = env.step({"action": action})
            assert result.done and result.reward == 1.0
            state = env.state()
            assert state["env_id"] == "spade/Env-00013-v0" and state["episode_return"] == 1.0
            assert state["step_count"] == len(actions) and state["terminated"]
            again = env.step({"action": "\\boxed{1}"})  # after the end: no more reward
            assert again.done and again.reward == 0.0
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err


async def _play(url: str, env_id: str, seed: int, actions: list[str]) -> list[tuple[str, float, bool]]:
    async with GenericEnvClient(base_url=url) as client:
        result = await client.reset(env_id=env_id, seed=seed)
        out = [(result.observation["text"], 0.0, False)]
        for action in actions:
            await asyncio.sleep(0)  # interleave with the other sessions
            result = await client.step({"action": action})
            out.append((result.observation["text"], result.reward, result.done))
        state = await client.state()
        assert state["seed"] == seed and state["env_id"].startswith(env_id)
        return out


def test_sixteen_concurrent_clients_without_cross_talk(server16):
    tasks = []
    for i in range(16):
        env_id, seed = MIXED_ENVS[i % len(MIXED_ENVS)], 100 + i
        _, actions = _reference(env_id, seed)
        actions = ["\\boxed{not it}"] + actions if i % 3 == 0 else actions  # some sessions take a detour
        tasks.append((env_id, seed, actions))

    async def main():
        return await asyncio.gather(*(_play(server16.url, *t) for t in tasks))

    results = asyncio.run(main())
    for (env_id, seed, actions), got in zip(tasks, results):
        want = _local_replay(env_id, seed, actions)
        assert [o for o, _, _ in got] == [o for o, _, _ in want], (env_id, seed)
        assert [d for _, _, d in got] == [d for _, _, d in want]
        assert got[-1][1] == want[-1][1] == 1.0, (env_id, seed)  # every session won its own episode


def test_session_limit_refuses_one_client_too_many():
    srv = _ThreadServer(max_sessions=4, idle_timeout=None)  # its own server: no sessions left over

    async def main():
        clients = [GenericEnvClient(base_url=srv.url) for _ in range(4)]
        try:
            await asyncio.gather(*(c.reset(env_id="spade/Env-00001", seed=i) for i, c in enumerate(clients)))
            extra = GenericEnvClient(base_url=srv.url)
            # the refusal is the answer to the client's first message, however slow it is to ask
            await extra.connect()
            await asyncio.sleep(0.5)  # the server has refused (and would have closed) by now
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                await extra.reset(seed=1)
            await extra.disconnect()
        finally:
            await asyncio.gather(*(c.disconnect() for c in clients))
        deadline = time.monotonic() + 30  # sessions are released on disconnect (slowly on a busy machine)
        while time.monotonic() < deadline:
            late = GenericEnvClient(base_url=srv.url)
            try:
                return await late.reset(env_id="spade/Env-00001", seed=2)
            except RuntimeError:
                await asyncio.sleep(0.2)
            finally:
                await late.disconnect()
        raise AssertionError("sessions were not released within 30 s")

    try:
        assert asyncio.run(main()).observation["text"]
    finally:
        srv.stop()


def test_idle_sessions_are_closed():
    srv = _ThreadServer(max_sessions=1, idle_timeout=0.5)  # OpenEnv's reaper wakes every 5 s
    try:
        async def main():
            async with GenericEnvClient(base_url=srv.url) as client:
                await client.reset(env_id="spade/Env-00001", seed=0)
                await asyncio.sleep(6.5)
                with pytest.raises(RuntimeError, match="closed"):
                    await client.step({"action": "\\boxed{1}"})
            async with GenericEnvClient(base_url=srv.url) as client:  # the slot was freed
                return await client.reset(env_id="spade/Env-00001", seed=0)

        assert asyncio.run(main()).observation["text"]
    finally:
        srv.stop()


def test_unknown_env_is_an_error_not_a_crash(server16):
    with GenericEnvClient(base_url=server16.url).sync() as env:
        with pytest.raises(RuntimeError, match="Env-99999"):
            env.reset(env_id="spade/Env-99999", seed=0)
        assert env.reset(env_id="spade/Env-00001", seed=0).observation["text"]  # the session survives


def test_http_errors_are_4xx_with_a_message_and_no_traceback():
    import json as _json
    import urllib.error

    port = _free_port()
    proc = subprocess.Popen([SPADE, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)

    def post(path: str, body: dict) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=_json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, _json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json.loads(exc.read())

    try:
        _wait_healthy(port)
        status, body = post("/step", {"action": {"action": "\\boxed{1}"}})
        assert status == 409 and "reset() first" in body["detail"] and "/ws" in body["detail"]
        status, body = post("/reset", {"env_id": "spade/Env-99999", "seed": 0})
        assert status == 404 and "Env-99999" in body["detail"]
        status, body = post("/reset", {"env_id": "not an id", "seed": 0})
        assert 400 <= status < 500 and body["detail"]
        status, body = post("/step", {"action": {"action": 42}})
        assert status == 422
        status, body = post("/reset", {"env_id": "spade/Env-00013", "seed": 3})
        assert status == 200
        messages = body["observation"]["messages"]
        env = SpadeEnv("spade/Env-00013")
        env.reset(seed=3)
        assert messages == env.messages()  # the same opening every surface uses
        env.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err and "Exception in ASGI" not in err


def test_serve_without_openenv_prints_one_install_line(tmp_path):
    code = ("import sys; sys.modules['openenv'] = None; sys.modules['openenv.core'] = None\n"
            "from spade_envs.cli.main import main; sys.exit(main(['serve']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SPADE_HOME": str(tmp_path)})
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == ["spade: error: spade serve needs openenv-core: pip install 'spade-envs[openenv]'"]


#: what `openenv validate DIR` asks of an environment *project* that spade-envs, a library,
#: deliberately does not have (issue 30): a uv.lock (the one lock is requirements/constraints.txt),
#: a generic `server` script on the user's PATH, openenv-core in the core dependencies
#: (it is the [openenv] extra). Everything else of the local layout must pass.
LIBRARY_CHOICES = {"Missing uv.lock - run 'uv lock' to generate it", "Missing [project.scripts] server entry point",
                   "Missing required dependency: openenv-core>=0.2.0 (or openenv>=0.2.0)"}


def test_openenv_validate_on_the_repository_layout_and_on_a_running_server(server16):
    import json as _json

    root = Path(__file__).resolve().parents[1]
    local = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", str(root), "--json"],
                           capture_output=True, text=True, timeout=120)
    issues = set(_json.loads(local.stdout)["issues"])
    assert issues <= LIBRARY_CHOICES, issues - LIBRARY_CHOICES  # server/app.py with main(), openenv.yaml: fine
    running = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", "--url", server16.url],
                             capture_output=True, text=True, timeout=120)
    report = _json.loads(running.stdout)
    assert running.returncode == 0 and report["passed"], [c for c in report["criteria"] if not c["passed"]]
