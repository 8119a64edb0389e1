"""An OpenEnv client for a ``spade serve --token`` server.

``spade serve`` with a token wants every request authenticated; OpenEnv's own
``GenericEnvClient`` cannot set WebSocket headers, so the server also takes
``?token=<token>`` on the WebSocket URL. :func:`token_client` returns openenv-core's
client with that URL::

    from spade_envs.integrations.openenv_client import token_client

    with token_client("http://127.0.0.1:8766", "change-me").sync() as env:
        env.reset(env_id="spade/Env-00001", seed=0)

Contract: ``token`` defaults to ``$SPADE_SERVE_TOKEN``; a missing token, or an
openenv-core whose client no longer has the WebSocket URL this module sets, is one
:class:`~spade_envs.errors.IntegrationError` (never a silently unauthenticated client).
The token is URL-quoted. Without openenv-core: the error names ``spade-envs[openenv]``.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from ..errors import IntegrationError


def token_client(base_url: str, token: str | None = None, **kwargs: Any) -> Any:
    """openenv-core's ``GenericEnvClient`` for ``base_url`` carrying ``token`` (module docstring)."""
    try:
        from openenv.core import GenericEnvClient
    except ImportError:
        raise IntegrationError("openenv-core is not installed: pip install 'spade-envs[openenv]'") from None
    token = token if token is not None else os.environ.get("SPADE_SERVE_TOKEN")
    if not token:
        raise IntegrationError("no token: pass token= or set SPADE_SERVE_TOKEN (the token `spade serve` was given)")
    client = GenericEnvClient(base_url, **kwargs)
    url = getattr(client, "_ws_url", None)  # openenv-core keeps the WebSocket URL here; it has no public setter
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise IntegrationError("this openenv-core's client has no WebSocket URL to add the token to; "
                               "pass the token as an Authorization header with your own client")
    sep = "&" if "?" in url else "?"
    client._ws_url = f"{url}{sep}token={quote(token, safe='')}"
    return client
