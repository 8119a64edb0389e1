"""``spade registry import SRC...``: bring a SPADE-format pool into the local store.

``SRC`` is a folder of SPADE's saved game files (``game_*.py``: a module docstring, then
the program), a JSONL or Parquet pool (code in a ``code``/``source``/``env_code`` field),
or single ``.py`` files (:mod:`spade_envs.registry.importer` reads them). Every candidate
gets one verdict:

- ``added``: accepted and stored (``unverified`` as well when no win was replayed: no
  ``solution()``, or one no reader replays);
- ``duplicate``: the same source (sha256) is already stored, is a seed, or came earlier in
  this import: skipped without running acceptance;
- ``rejected``: acceptance failed (the stage and its detail are given);
- ``unreadable``: the file or row could not be read.

Output: a progress bar on stderr (when it is a terminal), one line per file and a summary
table; with ``--json`` exactly one object on stdout::

    {"files": [{"file", "verdict", "id", "version", "verified", "rejected_at", "detail"}],
     "summary": {"added", "unverified", "duplicate", "rejected", "unreadable", "total",
                 "rejected_by_stage": {stage: n}}}

Exit status 0 when the import ran (rejections are an ordinary outcome of importing a
pool), 2 when no candidate could be found at all.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable, Optional

import typer

VERDICTS = ("added", "duplicate", "rejected", "unreadable")


def _known_shas(reg: Any) -> set[str]:
    from ..program import source_sha256
    from ..registry.catalog import seed_records

    shas = {source_sha256(r.source) for r in seed_records()}
    for rec in reg.list(seeds=False):
        sha = rec.metadata.get("sha256")
        shas.add(sha if isinstance(sha, str) and sha else source_sha256(rec.source))
    return shas


def import_pool(sources: list[str], *, generation: int | None = None,
                accept: Callable[[str, str], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Import ``sources`` into the default store; returns the ``--json`` object."""
    from rich.console import Console
    from rich.progress import track

    from ..errors import SpadeError
    from ..program import source_sha256
    from ..registry.importer import iter_candidates
    from ..registry.write import register_accepted
    from . import registry_common as common

    candidates = list(iter_candidates(sources))
    files: list[dict[str, Any]] = []
    console = Console(stderr=True)
    with common.open_store() as reg:
        known = _known_shas(reg)
        accept = accept or common.acceptance_runner(reg)
        for cand in track(candidates, description="importing", console=console, transient=True,
                          disable=len(candidates) < 2 or not console.is_terminal):
            row: dict[str, Any] = {"file": cand.file, "verdict": "", "id": None, "version": None,
                                   "verified": None, "rejected_at": None, "detail": ""}
            files.append(row)
            if cand.error is not None or cand.source is None:
                row.update(verdict="unreadable", detail=cand.error or "no source")
                continue
            sha = source_sha256(cand.source)
            if sha in known:
                row.update(verdict="duplicate", detail="the same source is already in the registry or this import")
                continue
            known.add(sha)
            verdict = accept(cand.source, cand.file)
            if not verdict["accepted"]:
                failed = next((s for s in verdict["stages"] if not s["ok"]), {"detail": ""})
                row.update(verdict="rejected", rejected_at=verdict.get("rejected_at") or failed.get("name"),
                           detail=failed.get("detail", ""))
                continue
            fields = dict(cand.fields)
            fields["metadata"] = {**(fields.get("metadata") or {}), **common.verdict_metadata(verdict),
                                  "imported_from": cand.file}
            if generation is not None:
                fields["generation"] = generation
            try:  # the one write path: it measures the tool specs (never claimed)
                res = register_accepted(reg, cand.source, filename=cand.file, acceptance=verdict["stages"],
                                        runtime=common.spec_runtime(), **fields)
            except SpadeError as exc:
                row.update(verdict="rejected", rejected_at="store", detail=str(exc))
                continue
            stored = res.as_json()
            row.update(verdict="added" if stored.get("new", True) else "duplicate", id=stored.get("id"),
                       version=stored.get("version"), verified=verdict.get("verified", True) is not False)
    counts = Counter(r["verdict"] for r in files)
    summary = {v: counts.get(v, 0) for v in VERDICTS}
    summary["unverified"] = sum(1 for r in files if r["verdict"] == "added" and r["verified"] is False)
    summary["total"] = len(files)
    summary["rejected_by_stage"] = dict(Counter(r["rejected_at"] for r in files if r["verdict"] == "rejected"))
    return {"files": files, "summary": summary}


def _print_human(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..textsafe import safe_text

    for r in result["files"]:
        if r["verdict"] == "added":
            tail = "" if r["verified"] else " (unverified: no win replayed)"
            typer.echo(f"added {r['id']}-v{r['version']}{tail}: {r['file']}")
        elif r["verdict"] == "rejected":  # details quote the program: control characters stripped
            typer.echo(safe_text(f"rejected at {r['rejected_at']}: {r['file']}: {r['detail']}"))
        else:
            typer.echo(safe_text(f"{r['verdict']}: {r['file']}: {r['detail']}"))
    s = result["summary"]
    table = Table(title="registry import")
    for col in ("total", "added", "unverified", "duplicate", "rejected", "unreadable"):
        table.add_column(col, justify="right")
    table.add_row(*(str(s[c]) for c in ("total", "added", "unverified", "duplicate", "rejected", "unreadable")))
    Console().print(table)
    if s["rejected_by_stage"]:
        typer.echo("rejected by stage: " + ", ".join(f"{k}: {v}" for k, v in sorted(s["rejected_by_stage"].items())))


def register_import(registry_app: typer.Typer) -> None:
    @registry_app.command("import")
    def import_cmd(
        sources: list[str] = typer.Argument(..., help="DIR of SPADE game_*.py files, FILE.jsonl, FILE.parquet or .py files"),
        generation: Optional[int] = typer.Option(None, help="generation of the new entries (default: the newest)"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    ) -> None:
        """Import a SPADE-format pool: acceptance per file, duplicates skipped, a summary."""
        from .main import fail

        result = import_pool(sources, generation=generation)
        if not result["files"]:
            raise fail("no candidate found in " + ", ".join(sources) + " (expected .py, .jsonl or .parquet)", 2)
        if as_json:
            typer.echo(json.dumps(result, default=str))
        else:
            _print_human(result)
