"""Where the registry lives on disk: ``$SPADE_HOME`` (default ``~/.cache/spade``) and its
store file (DESIGN.md section 7). The lowest module of the registry package: the store,
its damage handling and the CLI all ask here."""

from __future__ import annotations

import os
from pathlib import Path

#: the store's file name under ``$SPADE_HOME``
DB_NAME = "registry.sqlite3"


def spade_home() -> Path:
    """``$SPADE_HOME`` or ``~/.cache/spade``."""
    return Path(os.environ.get("SPADE_HOME") or Path.home() / ".cache" / "spade").expanduser()


def default_path() -> Path:
    """The store file of this process's ``$SPADE_HOME``."""
    return spade_home() / DB_NAME
