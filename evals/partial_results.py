"""Finished entries of an eval run, written as they finish (DESIGN.md section 9: an
interrupted run keeps what it finished and ``--resume`` completes it).

``spade eval`` keeps ``<out>/entries.partial.jsonl`` while it runs: a first line with the
run's identity (``{"run": {"suite", "agent", "options"}}``), then one line per finished
entry, ``{"key": str, "row": {...}}``, flushed as soon as the entry is scored. When the
run completes and its report is written, the file is removed.

- :meth:`PartialResults.start` begins a fresh run; it refuses to discard an interrupted
  run's entries unless told to (``force``), so finished work is never lost silently;
- :meth:`PartialResults.resume` reopens one: the identity must match (same suite, agent
  and options), the finished rows come back by key, and new rows are appended;
- a line cut short by an interruption is ignored (that entry is played again).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError

FILENAME = "entries.partial.jsonl"


class PartialResults:
    """The finished-entries file of one run folder."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / FILENAME
        self.rows: dict[str, dict[str, Any]] = {}
        self._file: Any = None

    # -- reading ---------------------------------------------------------------------------
    def read(self) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
        """``(run identity, {key: row})`` of the file (``(None, {})`` when there is none)."""
        if not self.path.exists():
            return None, {}
        header: dict[str, Any] | None = None
        rows: dict[str, dict[str, Any]] = {}
        lines = self.path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            try:
                item = json.loads(line)
            except ValueError:
                if i == 0:
                    raise SpadeError(f"{self.path}: not a spade eval partial-results file; remove it to start over") from None
                continue  # a line cut short by an interruption: that entry is played again
            if i == 0:
                header = item.get("run") if isinstance(item, dict) else None
                if not isinstance(header, dict):
                    raise SpadeError(f"{self.path}: not a spade eval partial-results file")
            elif isinstance(item, dict) and isinstance(item.get("key"), str) and isinstance(item.get("row"), dict):
                rows[item["key"]] = item["row"]
        return header, rows

    # -- writing ---------------------------------------------------------------------------
    def start(self, run: dict[str, Any], *, force: bool = False) -> None:
        """Begin a fresh run (refused when an interrupted run's entries would be lost)."""
        if self.path.exists() and not force:
            _, rows = self.read()
            if rows:
                raise SpadeError(f"{self.path.parent} holds an interrupted run ({len(rows)} entries finished): "
                                 "pass --resume to complete it, or --force to start over")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._write({"run": run})

    def resume(self, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Reopen an interrupted run with this identity; returns its finished rows by key."""
        header, rows = self.read()
        if header is None:
            raise SpadeError(f"nothing to resume in {self.path.parent}: no interrupted run there "
                             f"(no {FILENAME}); run without --resume")
        if header != json.loads(json.dumps(run, default=str)):
            raise SpadeError(f"the interrupted run in {self.path.parent} was {header.get('suite')} / "
                             f"{header.get('agent')} with other options ({json.dumps(header.get('options'))}); "
                             "resume it with the same options, or pass --force to start over")
        self.rows = dict(rows)
        text = self.path.read_text(encoding="utf-8")
        self._file = self.path.open("a", encoding="utf-8")
        if text and not text.endswith("\n"):
            self._file.write("\n")  # a line cut short stays alone on its line
        return dict(rows)

    def add(self, key: str, row: dict[str, Any]) -> None:
        """Record one finished entry (flushed at once)."""
        self.rows[key] = row
        self._write({"key": key, "row": row})

    def _write(self, item: dict[str, Any]) -> None:
        self._file.write(json.dumps(item, default=str, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def finish(self) -> None:
        """The run is complete and its report written: the partial file goes."""
        self.close()
        self.path.unlink(missing_ok=True)
