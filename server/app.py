"""OpenEnv deployment entry point of this repository (``openenv.yaml``: ``server.app:app``).

OpenEnv's tools (``openenv validate``, ``openenv build``) expect an environment directory
with ``server/app.py`` holding the FastAPI ``app`` and a ``main()``. spade-envs is a
library, so it installs no ``server`` script (``uv run server``): run one of the lines below.
Both are the package's own server (:func:`spade_envs.integrations.openenv_server.create_server`,
the same one ``spade serve`` runs); ``main`` is ``spade serve`` with the given options.

    uvicorn server.app:app --host 0.0.0.0 --port 8000     # all registry environments
    python -m server.app --port 8000                      # = spade serve --port 8000

``SPADE_SERVE_TOKEN`` set in the environment makes every request but ``GET /health`` need
``Authorization: Bearer <token>`` (as ``spade serve --token``).
"""

from __future__ import annotations

import os

from spade_envs.cli import serve as _serve
from spade_envs.integrations.openenv_server import create_server

app = create_server(token=os.environ.get("SPADE_SERVE_TOKEN") or None)


def main() -> None:
    """``spade serve`` with the command line's options (``--host``, ``--port``, ...)."""
    _serve.main()


__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
