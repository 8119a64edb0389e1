"""``spade serve``: registry environments over OpenEnv's HTTP/WebSocket protocol.

Needs the optional ``openenv-core`` dependency (``pip install 'spade-envs[openenv]'``);
without it the command prints that one line and exits 1. ``--token`` (or
``SPADE_SERVE_TOKEN``, which keeps it out of the process list) makes every request but
``GET /health`` need ``Authorization: Bearer <token>``. See docs/serve_openenv.md.
"""

from __future__ import annotations

import errno
import socket

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: str = typer.Option("127.0.0.1", help="address to bind (use 0.0.0.0 to accept remote clients)"),
        port: int = typer.Option(8000, min=1, max=65535, help="TCP port"),
        max_sessions: int = typer.Option(64, "--max-sessions", min=1, help="concurrent WebSocket sessions"),
        idle_timeout: float = typer.Option(600.0, "--idle-timeout", help="close sessions idle this many seconds (0: never)"),
        default_env: str = typer.Option("spade/Env-00001", "--default-env", help="environment of a reset without env_id"),
        env: list[str] = typer.Option(None, "--env", help="serve only these ids (repeatable; default: the whole registry)"),
        sandbox_all: bool = typer.Option(False, "--sandbox-all", help="run the shipped seed suite sandboxed too"),
        token: str = typer.Option(None, "--token", envvar="SPADE_SERVE_TOKEN", show_envvar=True,
                                  help="require this bearer token on every request but GET /health "
                                       "(WebSocket clients may pass ?token=)"),
    ) -> None:
        """Serve the registry over OpenEnv (one environment session per WebSocket client)."""
        from .main import fail

        from ..errors import IntegrationError

        try:
            from ..integrations import openenv_server
        except (ImportError, IntegrationError):
            raise fail("spade serve needs openenv-core: pip install 'spade-envs[openenv]'") from None

        try:
            app_ = openenv_server.create_server(default_env=default_env, envs=env or None, max_sessions=max_sessions,
                                                idle_timeout=idle_timeout or None, sandbox_all=sandbox_all,
                                                token=token)
        except IntegrationError as exc:
            raise fail(str(exc)) from None
        sock = bind(host, port)  # bind first: a busy port is one line, before any announcement
        import uvicorn

        typer.echo(f"spade: serving OpenEnv on http://{host}:{port} (ws://{host}:{port}/ws), "
                   f"max {max_sessions} sessions" + (", bearer token required" if token else ""), err=True)
        server = uvicorn.Server(uvicorn.Config(app_, log_level="warning"))
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()


def bind(host: str, port: int) -> "socket.socket":
    """A listening TCP socket on ``host:port``; a busy or forbidden address is one error line."""
    from .main import fail

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "the port is already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise fail(f"cannot listen on {host}:{port}: {reason} (pick another with --port)") from None
    sock.set_inheritable(True)
    return sock


def main() -> None:
    """``server`` console script (OpenEnv's ``uv run server``): ``spade serve`` with its options."""
    import sys

    from .main import main as spade_main

    sys.exit(spade_main(["serve", *sys.argv[1:]]))
