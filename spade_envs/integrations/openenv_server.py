r"""Serve registry environments over OpenEnv's HTTP/WebSocket protocol (``openenv-core``).

The server is OpenEnv's own (``openenv.core.env_server.create_app``); this module only
supplies the environment class and its Pydantic types, so any OpenEnv client drives it:

- ``WebSocket /ws``: one session per connection, with its own environment instance; a
  ``reset`` message takes ``env_id`` (default: the server's default environment), ``seed``
  and ``hint``; ``step`` takes ``{"action": "<text action>"}``; ``state`` returns
  :class:`SpadeState`. At most ``max_sessions`` sessions at once (a further client gets
  OpenEnv's ``CAPACITY_REACHED`` error); sessions idle for ``idle_timeout`` seconds are
  closed by OpenEnv's reaper (it checks every ``max(timeout/4, 5)`` s).
- ``POST /reset``, ``POST /step``: OpenEnv's stateless HTTP endpoints (a fresh instance per
  request: useful for probing, not for playing); ``GET /health``, ``/schema``, ``/metadata``.
- OpenEnv's MCP routes are refused (``POST /mcp`` answers a JSON-RPC error,
  ``WebSocket /mcp`` is closed): ``openenv/session/create`` took a session slot without a
  connection, so anyone could empty the server. With ``token`` (``spade serve --token``)
  every request but ``GET /health`` needs ``Authorization: Bearer <token>`` (a WebSocket
  may pass ``?token=`` instead). See :mod:`.openenv_guards`.
- Errors are answers, not crashes: over HTTP a bad request gets a 4xx JSON body
  ``{"detail": message, "error": class}`` (404 unknown id, 409 ``step`` without an episode
  (HTTP is stateless: play over ``/ws``), 422 a malformed action, 400 any other refusal);
  over the WebSocket an error message. A client refused at capacity reads OpenEnv's
  ``CAPACITY_REACHED`` error as the answer to its first message (openenv-core 0.3.0 sends
  it and closes before the client has asked anything, so clients saw only a closed
  connection; :class:`_DeliverRefusal` holds the refusal until the client's first message).

Observations are :class:`SpadeObservation`: ``text`` (the observation), ``tools`` (OpenAI
specs of the episode), ``messages`` (after ``reset``: the environment's opening
conversation, ``SpadeEnv.messages()``, the same prompt ``spade eval`` and the TRL adapter
use), ``env_id``, ``terminated``/``truncated``, ``info`` (the step's info: ``turn``,
``truncated_by`` ...), plus OpenEnv's ``reward`` and ``done``. Environment code runs as everywhere else: the shipped seed suite in-process,
anything else in the sandbox (``sandbox_all=True`` sandboxes the seeds too); a program that
fails ends its episode with an error observation, it never takes the server down.

Client, with openenv-core only::

    from openenv.core import GenericEnvClient
    with GenericEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(env_id="spade/Env-00001", seed=3)
        result = env.step({"action": "\\boxed{42}"})
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from ..errors import IntegrationError, SpadeError

DEFAULT_ENV = "spade/Env-00001"
INSTALL_HINT = "pip install 'spade-envs[openenv]'"


def _require_openenv() -> None:
    try:
        import openenv.core.env_server  # noqa: F401
    except ImportError:
        raise IntegrationError(f"serving over OpenEnv needs openenv-core: {INSTALL_HINT}") from None


_require_openenv()

from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import (  # noqa: E402
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    State,
)
from pydantic import Field  # noqa: E402


class SpadeAction(Action):
    """One agent action: a ``\\boxed{...}`` answer, ``<tool_call>`` blocks or ``<answer>``."""

    action: str = Field(..., description="the action text, as the environment's step() takes it")


class SpadeObservation(Observation):
    text: str = Field(default="", description="the observation text")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool specs of the episode")
    env_id: str | None = Field(default=None, description="the environment id, with version")
    seed: int | None = Field(default=None, description="the episode seed")
    terminated: bool = False
    truncated: bool = False
    error: str | None = Field(default=None, description="environment failure verdict, if any")
    messages: list[dict[str, str]] = Field(default_factory=list,
                                           description="after reset: the opening messages (system prompt, first observation)")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info (turn, truncated_by, ...)")


class SpadeState(State):
    env_id: str | None = None
    seed: int | None = None
    episode_return: float = 0.0
    terminated: bool = False
    truncated: bool = False


class NoEpisodeError(IntegrationError):
    """``step`` in a session without a running episode."""


def _plain(info: dict[str, Any]) -> dict[str, Any]:
    from ..runtime import jsonable

    out = jsonable({k: v for k, v in info.items() if k not in ("tools", "messages")})
    return out if isinstance(out, dict) else {}


class SpadeOpenEnv(Environment):
    """One session: plays registry environments, one episode at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    #: set by :func:`create_server` on a subclass
    default_env: str = DEFAULT_ENV
    allowed: frozenset[str] | None = None
    sandbox_all: bool = False

    def __init__(self) -> None:
        super().__init__()
        self._envs: dict[str, Any] = {}
        self._env: Any = None
        self._state = SpadeState()
        self._closed = False
        self._lock = threading.Lock()

    def _open(self, env_id: str) -> tuple[Any, str]:
        from ..gym_env import SpadeEnv
        from ..registry.catalog import resolve
        from ..trust import get_runtime

        record = resolve(env_id)
        if self.allowed is not None and record.env_id.base not in self.allowed and str(record.env_id) not in self.allowed:
            raise IntegrationError(f"{env_id} is not served here")
        key = str(record.env_id)
        env = self._envs.get(key)
        if env is None:
            runtime = get_runtime() if self.sandbox_all else None
            env = self._envs[key] = SpadeEnv(record.env_id.base, record.env_id.version, runtime=runtime)
        return env, key

    def reset(self, seed: int | None = None, episode_id: str | None = None, env_id: str | None = None,
              hint: bool = False, **kwargs: Any) -> SpadeObservation:
        with self._lock:
            self._check_open()
            env, key = self._open(env_id or self.default_env)
            seed = int(seed) if seed is not None else random.randrange(2**31 - 1)
            env.use_hint = bool(hint)
            text, info = env.reset(seed=seed)
            self._env = env
            self._state = SpadeState(episode_id=episode_id or str(uuid.uuid4()), step_count=0, env_id=key, seed=seed)
            return SpadeObservation(text=text, tools=list(info.get("tools") or []), env_id=key, seed=seed,
                                    reward=0.0, done=False, messages=list(info.get("messages") or []))

    def step(self, action: SpadeAction, timeout_s: float | None = None, **kwargs: Any) -> SpadeObservation:
        with self._lock:
            self._check_open()
            if self._env is None:
                raise NoEpisodeError("reset() first: no episode is running in this session (the HTTP /step "
                                     "endpoint is stateless: play an episode over the WebSocket /ws)")
            st = self._state
            if st.terminated or st.truncated:
                return SpadeObservation(text="The episode is over; reset() to play again.", env_id=st.env_id,
                                        seed=st.seed, reward=0.0, done=True, terminated=st.terminated,
                                        truncated=st.truncated)
            text, reward, terminated, truncated, info = self._env.step(action.action)
            self._state = st.model_copy(update={
                "step_count": st.step_count + 1, "episode_return": max(-1.0, min(1.0, float(reward))),
                "terminated": bool(terminated), "truncated": bool(truncated)})
            return SpadeObservation(text=text, env_id=st.env_id, seed=st.seed, reward=float(reward),
                                    done=bool(terminated or truncated), terminated=bool(terminated),
                                    truncated=bool(truncated), error=info.get("error"), info=_plain(info),
                                    tools=list(self._env.tools) if not (terminated or truncated) else [])

    @property
    def state(self) -> SpadeState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from .. import __version__

        return EnvironmentMetadata(
            name="spade-envs", version=__version__,
            description="Registry environments of spade-envs (LLM-synthesized, after SPADE); "
                        f"reset(env_id=..., seed=...), default {self.default_env}")

    def _check_open(self) -> None:
        if self._closed:
            raise IntegrationError("this session was closed (idle timeout or shutdown); reconnect")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for env in self._envs.values():
                try:
                    env.close()
                except SpadeError:
                    pass
            self._envs.clear()
            self._env = None


def environment_class(default_env: str = DEFAULT_ENV, envs: Iterable[str] | None = None,
                      sandbox_all: bool = False) -> type[SpadeOpenEnv]:
    """A :class:`SpadeOpenEnv` subclass bound to a default environment and (optionally) a
    set of allowed ids; raises for an unknown id."""
    from ..registry.catalog import resolve

    allowed = None
    if envs:
        allowed = frozenset(resolve(e).env_id.base for e in envs)
    resolve(default_env)
    return type("SpadeOpenEnvServed", (SpadeOpenEnv,),
                {"default_env": default_env, "allowed": allowed, "sandbox_all": sandbox_all})


def create_server(*, default_env: str = DEFAULT_ENV, envs: Iterable[str] | None = None, max_sessions: int = 64,
                  idle_timeout: float | None = 600.0, sandbox_all: bool = False, token: str | None = None) -> Any:
    """The FastAPI app (OpenEnv's ``create_app``) serving the registry; with ``token``,
    every request but ``GET /health`` must carry it (:class:`.openenv_guards.BearerToken`).
    OpenEnv's MCP routes are refused (:class:`.openenv_guards.NoMcpSessions`)."""
    from openenv.core.env_server.http_server import create_app

    from .openenv_guards import BearerToken, NoMcpSessions

    if max_sessions < 1:
        raise IntegrationError("--max-sessions must be at least 1")
    if token is not None and (not token.strip() or token != token.strip() or not token.isprintable()):
        raise IntegrationError("--token must be a non-empty printable string without surrounding spaces")
    if idle_timeout is not None and idle_timeout <= 0:
        idle_timeout = None
    cls = environment_class(default_env, envs, sandbox_all)
    config = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout)
    app = create_app(cls, SpadeAction, SpadeObservation, env_name="spade-envs", concurrency_config=config)
    app.add_exception_handler(SpadeError, _spade_error_response)
    app.add_middleware(_QuietDisconnect)
    app.add_middleware(_DeliverRefusal)
    app.add_middleware(NoMcpSessions)
    if token is not None:
        app.add_middleware(BearerToken, token=token)  # outermost: nothing runs before the check
    return app


def http_status(exc: BaseException) -> int:
    """The HTTP status of a refusal: 404 unknown id, 409 no episode, 422 bad action, else 400."""
    from ..episode import InvalidActionError
    from ..errors import InvalidEnvIdError, UnknownEnvironmentError

    if isinstance(exc, (UnknownEnvironmentError, InvalidEnvIdError)):
        return 404
    if isinstance(exc, NoEpisodeError):
        return 409
    if isinstance(exc, InvalidActionError):
        return 422
    return 400


async def _spade_error_response(request: Any, exc: Exception) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"detail": str(exc), "error": type(exc).__name__}, status_code=http_status(exc))


class _DeliverRefusal:
    """Hold OpenEnv's ``CAPACITY_REACHED`` refusal until the client's first message, so
    the client reads it as the answer (openenv-core 0.3.0 sends it right after the
    handshake and closes; the client's first send then fails on a closed connection)."""

    WAIT_S = 30.0

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "websocket":
            await self.app(scope, receive, send)
            return
        import asyncio

        async def deliver(message: dict) -> None:
            text = message.get("text") if message.get("type") == "websocket.send" else None
            if isinstance(text, str) and '"CAPACITY_REACHED"' in text:
                try:  # the client's first message (or its disconnect) comes before the refusal
                    incoming = await asyncio.wait_for(receive(), timeout=self.WAIT_S)
                except asyncio.TimeoutError:
                    incoming = {}
                if incoming.get("type") == "websocket.disconnect":
                    return
            await send(message)

        await self.app(scope, receive, deliver)


class _QuietDisconnect:
    """openenv-core 0.3.0 closes an already-closed WebSocket after a client's ``close``
    message and logs the resulting ``WebSocketDisconnect`` as an ASGI error on every
    normal disconnect; swallow exactly that."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope.get("type") != "websocket":
                raise


def serve(host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
    """Run the server with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_server(**options), host=host, port=port, log_level="warning")
