"""Who may use a ``spade serve`` server, and which of OpenEnv's routes it serves.

Two ASGI middlewares around openenv-core's app (:func:`.openenv_server.create_server`):

- :class:`BearerToken` (``--token`` / ``SPADE_SERVE_TOKEN``): every request needs the
  token, as ``Authorization: Bearer <token>`` or, on a WebSocket (whose browser and
  OpenEnv clients cannot set headers), as the ``token`` query parameter of the URL.
  ``GET /health`` stays open (liveness probes). A missing or wrong token gets HTTP 401
  (a WebSocket is refused at the handshake, HTTP 403); tokens are compared in constant
  time.
- :class:`NoMcpSessions`: OpenEnv's MCP routes are not served. ``POST /mcp`` with
  ``openenv/session/create`` reserves a session slot that no connection holds (it lives
  until the idle reaper, 600 s by default), so a few unauthenticated requests emptied
  every ``max_sessions`` slot; spade environments implement no MCP tools anyway. Every
  ``POST /mcp`` gets a JSON-RPC error naming the way to play (``WebSocket /ws``, where a
  session lives exactly as long as its connection), and ``WebSocket /mcp`` is closed with
  the same message.
"""

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import parse_qs

#: what a client that asks for MCP reads
MCP_REFUSAL = ("this server does not serve MCP (spade environments define no MCP tools, and "
               "openenv/session/create would hold a session without a connection): play over "
               "WebSocket /ws, one session per connection")
#: JSON-RPC "method not found"
_METHOD_NOT_FOUND = -32601
_MAX_PEEK = 64 * 1024


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def presented_token(scope: dict) -> str | None:
    """The token a request carries: its bearer header, or (WebSocket) ``?token=``."""
    auth = _header(scope, b"authorization")
    if auth is not None:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None
    if scope.get("type") == "websocket":
        values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        return values[0] if values else None
    return None


async def _send_json(send: Any, status: int, body: dict, headers: list | None = None) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": payload})


class BearerToken:
    """Refuse every request without ``token`` (module docstring)."""

    OPEN_PATHS = frozenset({"/health"})

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def allowed(self, scope: dict) -> bool:
        given = presented_token(scope)
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket") or self.allowed(scope) or (
                kind == "http" and scope.get("path") in self.OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
            return
        await _send_json(send, 401, {"detail": "this server needs a token: send 'Authorization: Bearer <token>'",
                                     "error": "Unauthorized"}, [(b"www-authenticate", b"Bearer")])


class NoMcpSessions:
    """Answer every ``/mcp`` request with a refusal, never reaching OpenEnv's handler."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("path") != "/mcp" or scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            message = await receive()
            if message.get("type") == "websocket.connect":
                await send({"type": "websocket.accept"})
                await send({"type": "websocket.send", "text": json.dumps(_refusal(None))})
                await send({"type": "websocket.close", "code": 1008})
            return
        await _send_json(send, 200, _refusal(await _request_id(receive)))


def _refusal(request_id: Any) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": _METHOD_NOT_FOUND, "message": MCP_REFUSAL}}


async def _request_id(receive: Any) -> Any:
    """The JSON-RPC ``id`` of a request body (read up to 64 KiB), or None."""
    body = b""
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > _MAX_PEEK or not message.get("more_body"):
            break
    try:
        value = json.loads(body) if len(body) <= _MAX_PEEK else None
    except (ValueError, RecursionError):
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
