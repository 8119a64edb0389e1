"""``spade registry list|show|add|stats|deprecate|quarantine|activate`` (``export``,
``push``, ``pull`` and ``remove``: :mod:`.registry_sharing`; ``import``:
:mod:`.registry_import`).

The store is ``$SPADE_HOME/registry.sqlite3`` (:mod:`spade_envs.registry.store`).
``add`` runs every candidate (``.py`` files, JSONL pools, folders of them) through the
acceptance pipeline (``spade_envs.designer.acceptance``) before storing it; this module
does that orchestration, so that ``registry/`` never imports ``designer/``. JSON shapes:
DESIGN.md section 10.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable, Optional

import typer

from . import registry_common as common
from .registry_common import check_filters, echo_json, open_store, records, registry_app

def add_files(files: list[str], *, generation: int | None = None, replaces: str | None = None,
              accept: Callable[[str, str], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Read candidates, run acceptance, store the accepted ones. Returns the
    ``registry add --json`` object."""
    from rich.console import Console
    from rich.progress import track

    from ..errors import SpadeError
    from ..registry.importer import iter_candidates
    from ..registry.write import register_accepted

    candidates = list(iter_candidates(files))
    added: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    console = Console(stderr=True)
    with open_store() as reg:
        accept = accept or common.acceptance_runner(reg, replaces)
        for cand in track(candidates, description="accepting", console=console, transient=True,
                          disable=len(candidates) < 2 or not console.is_terminal):
            if cand.error is not None:
                rejected.append({"file": cand.file, "rejected_at": "read", "detail": cand.error})
                continue
            verdict = accept(cand.source, cand.file)
            if not verdict["accepted"]:
                failed = next((s for s in verdict["stages"] if not s["ok"]), {"detail": ""})
                rejected.append({"file": cand.file, "rejected_at": verdict["rejected_at"] or failed.get("name", "?"),
                                 "detail": failed["detail"]})
                continue
            fields = dict(cand.fields)
            fields["metadata"] = {**(fields.get("metadata") or {}), **common.verdict_metadata(verdict)}
            if generation is not None:
                fields["generation"] = generation
            try:  # the one write path: it measures the tool specs (never claimed)
                res = register_accepted(reg, cand.source, filename=cand.file, replaces=replaces,
                                        acceptance=verdict["stages"], runtime=common.spec_runtime(), **fields)
            except SpadeError as exc:
                rejected.append({"file": cand.file, "rejected_at": "store", "detail": str(exc)})
                continue
            added.append(res.as_json())
    return {"added": added, "rejected": rejected}


# -- commands ---------------------------------------------------------------------------
@registry_app.command("list")
def list_cmd(
    generation: Optional[int] = typer.Option(None, help="only this generation (0 = seed suite)"),
    skill: Optional[str] = typer.Option(None, help="only this skill"),
    status: Optional[str] = typer.Option(None, help="active | deprecated | quarantined"),
    tag: Optional[list[str]] = typer.Option(None, "--tag", help="only entries with this tag (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
) -> None:
    """List the active registry: the seed suite and the local store."""
    check_filters(generation, status)
    recs = records(generation=generation, skill=skill, status=status, tags=tag)
    envs = [{"id": r.env_id.base, "version": r.env_id.version, "generation": r.generation, "status": r.status,
             "skill": r.skill, "parent": r.parent} for r in recs]
    if as_json:
        echo_json({"envs": envs})
        return
    from ..textsafe import safe_text  # skill and class name come from programs
    from .tables import print_table

    rows = [(e["id"], str(e["version"]), str(e["generation"]), e["status"], safe_text(e["skill"] or ""),
             safe_text(r.class_name)) for e, r in zip(envs, recs)]
    print_table(f"spade registry ({len(envs)} entries)", ("id", "version", "generation", "status", "skill", "class"),
                rows)


@registry_app.command("show")
def show_cmd(
    env_id: str = typer.Argument(..., help="spade/Env-01000 (latest) or spade/Env-01000-v1"),
    source: bool = typer.Option(False, "--source", help="print the program source"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one entry: metadata, status, lineage, scores (and the source)."""
    from ..registry.catalog import resolve

    rec = resolve(env_id)
    info = {"id": rec.env_id.base, "version": rec.env_id.version, "generation": rec.generation, "status": rec.status,
            "class_name": rec.class_name, "skill": rec.skill, "trusted": rec.trusted,
            "parent": rec.parent, "params": rec.params,
            "metadata": {k: v for k, v in rec.metadata.items() if k != "acceptance"},
            "acceptance": rec.metadata.get("acceptance", [])}
    if source or as_json:
        info["source"] = rec.source
    if as_json:
        echo_json(info)
        return
    from ..textsafe import safe_text  # everything shown comes from the program or the row

    for key, value in info.items():
        if key != "source":
            typer.echo(safe_text(f"{key}: {json.dumps(value, default=str) if isinstance(value, (dict, list)) else value}"))
    if source:
        typer.echo("\n" + safe_text(rec.source))


@registry_app.command("add")
def add_cmd(
    files: list[str] = typer.Argument(..., help=".py programs, JSONL pools (code in a 'code'/'source'/'env_code' field), folders"),
    generation: Optional[int] = typer.Option(None, help="generation of the new entries (default: the newest, 1 at first)"),
    replaces: Optional[str] = typer.Option(None, help="store the (changed) source as a new version of this id"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run candidates through acceptance and store the accepted ones. Exit 1 when any
    candidate was rejected."""
    from .main import fail

    if replaces is not None and len(files) != 1:
        raise fail("--replaces takes exactly one FILE", 2)
    if generation is not None and generation < 1:
        raise fail(f"--generation of a new entry must be 1 or more (0 is the shipped seed suite), got {generation}", 2)
    result = add_files(files, generation=generation, replaces=replaces)
    if as_json:
        echo_json(result)
    else:
        for a in result["added"]:
            typer.echo(f"{'added' if a['new'] else 'already stored'}: {a['id']}-v{a['version']}")
        from ..textsafe import safe_text  # verdict details quote the program

        for r in result["rejected"]:
            typer.echo(safe_text(f"rejected at {r['rejected_at']}: {r['file']}: {r['detail']}"),
                       err=r["rejected_at"] == "read")
        by_stage = Counter(r["rejected_at"] for r in result["rejected"])
        summary = ", ".join(f"{n} at {s}" for s, n in by_stage.most_common())
        typer.echo(f"{sum(a['new'] for a in result['added'])} new, {len(result['added'])} accepted, "
                   f"{len(result['rejected'])} rejected" + (f" ({summary})" if summary else ""))
    if result["rejected"]:
        raise typer.Exit(1)


@registry_app.command("stats")
def stats_cmd(as_json: bool = typer.Option(False, "--json")) -> None:
    """Counts by status, generation and skill."""
    from ..registry.catalog import seed_records

    reg = open_store(create=False)
    if reg is None:
        stats: dict[str, Any] = {"path": None, "seeds": len(seed_records()), "versions": 0, "environments": 0}
    else:
        with reg:
            stats = reg.stats()
    if as_json:
        echo_json(stats)
    else:
        for key, value in stats.items():
            typer.echo(f"{key}: {value}")


def _status_command(name: str, status: str, doc: str) -> None:
    @registry_app.command(name, help=doc)
    def cmd(env_id: str = typer.Argument(..., help="an id; without -vK every version"),
            reason: str = typer.Option("", help="why (stored with the status)")) -> None:
        with open_store() as reg:
            hits = reg.set_status(env_id, status, reason or None)
        typer.echo(f"{status}: {', '.join(map(str, hits))}")


_status_command("deprecate", "deprecated", "Mark an entry deprecated (still loadable by explicit version).")
_status_command("quarantine", "quarantined", "Quarantine an entry: never resolved or registered.")
_status_command("activate", "active", "Mark an entry active again.")


def register(app: typer.Typer) -> None:
    from . import registry_sharing  # noqa: F401 - adds export, push, pull, remove to registry_app
    from .registry_import import register_import

    register_import(registry_app)
    from .registry_pool import register_pool_commands  # import-pool, export-pool

    register_pool_commands(registry_app)
    from .registry_repair import register_repair  # repair (issue 27)

    register_repair(registry_app)
    app.add_typer(registry_app, name="registry")
