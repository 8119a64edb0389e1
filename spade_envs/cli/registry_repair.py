"""``spade registry repair [--path FILE] [--json]``: make a damaged store usable again.

What every registry error about a damaged store points to (:mod:`spade_envs.registry.store`):

- no file: nothing to do (exit 0);
- an empty file (0 bytes) or an older schema: initialised or upgraded in place (exit 0);
- a healthy store: ``PRAGMA integrity_check`` says ``ok``, nothing changes (exit 0);
- a corrupt one (a bad header, truncated, malformed pages): moved aside with its
  ``-wal``/``-shm`` files to ``<name>.corrupt-<UTC time>`` (nothing is deleted) and an
  empty store started in its place (exit 0);
- another application's SQLite file, or a store of a newer spade-envs: left untouched,
  one error line (exit 1).

``--json`` prints ``{"path", "action": "none"|"initialised"|"healthy"|"moved", "moved_to",
"entries"}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer


def repair(path: Path) -> dict[str, Any]:
    """Repair the store at ``path`` (module docstring); raises ``RegistryError`` for a
    file that must not be touched or cannot be written."""
    from ..errors import RegistryFormatError
    from ..registry.store import Registry, move_aside

    out: dict[str, Any] = {"path": str(path), "action": "none", "moved_to": None, "entries": 0}
    if not path.exists():
        return out
    empty = path.stat().st_size == 0
    try:
        with Registry.open(path, create=False) as reg:
            verdict = reg.integrity_check()
            if verdict == "ok":
                out["action"] = "initialised" if empty else "healthy"
                out["entries"] = reg.stats()["versions"]
                return out
    except RegistryFormatError as exc:
        if exc.kind != "corrupt":
            raise
    out["moved_to"] = str(move_aside(path))
    out["action"] = "moved"
    Registry.open(path).close()
    return out


def register_repair(registry_app: typer.Typer) -> None:
    @registry_app.command("repair")
    def repair_cmd(
        path: Optional[Path] = typer.Option(None, "--path",
                                            help="the store file (default: $SPADE_HOME/registry.sqlite3)"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
    ) -> None:
        """Repair the store: initialise an empty file, move a corrupt one aside (kept) and start anew."""
        from ..errors import RegistryError
        from ..registry.store import default_path
        from .main import fail

        target = (path or default_path()).expanduser()
        try:
            out = repair(target)
        except RegistryError as exc:
            raise fail(str(exc)) from None
        if as_json:
            typer.echo(json.dumps(out))
            return
        typer.echo({
            "none": f"no store at {target}: nothing to repair",
            "initialised": f"{target} was empty: initialised as an empty store",
            "healthy": f"{target} is healthy ({out['entries']} stored versions): nothing changed",
            "moved": f"{target} was corrupt: moved to {out['moved_to']}; an empty store was started in its place",
        }[out["action"]])
