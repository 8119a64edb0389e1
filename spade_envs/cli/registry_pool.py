"""``spade registry import-pool`` and ``spade registry export-pool``: SPADE's pool layout.

``import-pool PATH|OWNER/NAME[@REVISION]`` (:mod:`.pool_import`): checksums verified
first, every ``games/game_*.py`` judged in the sandbox on all cores, accepted programs
registered as one new generation with provenance, duplicates skipped, resumable. Exit 0
when the import ran (rejections are ordinary), 1 when the pool was refused (a checksum
that does not verify, a listed file missing: nothing is registered), 130 when
interrupted (run it again to resume). ``--json`` prints one object::

    {"pool", "revision", "checksums": "verified"|"absent", "files", "generation", "jobs",
     "judged", "judged_earlier", "accepted", "unverified", "registered", "duplicates",
     "rejected", "pending", "rejected_by_stage": {stage: n}, "ids": [id-vK, ...],
     "interrupted", "seconds"}

Counts describe the whole pool after this run; ``judged`` counts the verdicts computed
by this run (``judged_earlier``: taken from the journal of an earlier, interrupted run).

``export-pool DIR`` writes store entries (``--generation``, ``--status``; variants, which
have no program of their own, are left out) in the same layout: each game file is SPADE's
header line and the stored source, named by its pool provenance when it came from a pool,
else ``game_<generation:05d>_<index:03d>_<skill slug>.py``; ``manifest.jsonl`` and
``validation_manifest.jsonl`` rows are the imported ones verbatim, else generated;
``checksums.sha256`` covers every file. ``import-pool DIR`` into a fresh ``SPADE_HOME``
gives back the same sources.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Optional

import typer

from ..registry.pool_layout import ExportGame, parse_game_name, skill_slug, write_pool

_README = """# SPADE-format game pool

Exported by spade-envs {version} on {date}: {n} games in SPADE's pool layout
(`games/game_<rollout>_<index>_<skill>.py`, `manifest.jsonl`, `validation_manifest.jsonl`,
`validation_summary.json`, `snapshot_summary.json`, `checksums.sha256`).

Verify with `sha256sum -c checksums.sha256`; import into a registry with
`spade registry import-pool <this folder>` (every program is judged again in the sandbox).
"""


def _export_games(records: list[Any]) -> list[ExportGame]:
    from ..registry.pool_layout import file_text

    used: set[str] = set()
    counters: dict[int, int] = {}
    out: list[ExportGame] = []
    for rec in records:
        prov = rec.metadata.get("pool") if isinstance(rec.metadata.get("pool"), dict) else {}
        name = prov.get("file") if isinstance(prov.get("file"), str) else None
        if not name or name in used or parse_game_name(name) is None or "/" in name:
            while True:
                i = counters.get(rec.generation, 0)
                counters[rec.generation] = i + 1
                name = f"game_{rec.generation:05d}_{i:03d}_{skill_slug(rec.skill)}.py"
                if name not in used:
                    break
        used.add(name)
        env = f"{rec.env_id.base}-v{rec.env_id.version}"
        manifest = prov.get("manifest") if isinstance(prov.get("manifest"), dict) else {
            "file": f"games/{name}", "env_id": env, "skill": rec.skill, "generation": rec.generation,
            "class_name": rec.class_name, "sha256": hashlib.sha256(file_text(rec.source).encode()).hexdigest()}
        validation = prov.get("validation") if isinstance(prov.get("validation"), dict) else {
            "file": f"games/{name}", "env_id": env, "accepted": True,
            "verified": rec.metadata.get("verified", True) is not False,
            "stages": [{k: s.get(k) for k in ("name", "ok", "detail")} for s in rec.metadata.get("acceptance") or []
                       if isinstance(s, dict)]}
        out.append(ExportGame(name, rec.source, manifest, validation))
    return out


def export_pool(folder: str, *, generation: int | None = None, status: str | None = "active") -> dict[str, Any]:
    """Write the store's entries into ``folder``; returns the ``--json`` object."""
    from .. import __version__
    from ..errors import RegistryError
    from .registry_common import open_store

    reg = open_store(create=False)
    if reg is None:
        raise RegistryError("the registry store is empty (no SPADE_HOME store yet): nothing to export")
    with reg:
        records = [r for r in reg.list(generation=generation, status=status) if not r.is_variant]
        variants = sum(1 for r in reg.list(generation=generation, status=status) if r.is_variant)
    if not records:
        raise RegistryError("no stored entries match; nothing to export")
    games = _export_games(records)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    summary = {"exported_by": f"spade-envs {__version__}", "exported_at": date,
               "generations": sorted({r.generation for r in records}), "ids": [f"{r.env_id.base}-v{r.env_id.version}"
                                                                             for r in records]}
    counts = write_pool(folder, games, summary=summary,
                        readme=_README.format(version=__version__, date=date, n=len(games)))
    return {"folder": str(folder), "games": counts["games"], "files": counts["files"], "variants_skipped": variants}


def register_pool_commands(registry_app: typer.Typer) -> None:
    """Add ``import-pool`` and ``export-pool`` to ``spade registry``."""

    @registry_app.command("import-pool")
    def import_pool_cmd(
        source: str = typer.Argument(..., help="a pool folder, or a Hub dataset OWNER/NAME[@REVISION]"),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="judging processes (default: one per core)"),
        generation: Optional[int] = typer.Option(
            None, help="generation of the new entries (default: a new one; a resumed import keeps its first run's)"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    ) -> None:
        """Import SPADE's released pool: checksums verified, every game judged in the
        sandbox in parallel, accepted ones registered as one generation; resumable."""
        from .main import fail
        from .pool_import import import_pool

        if jobs is not None and jobs < 1:
            raise fail(f"--jobs must be 1 or more, got {jobs}", 2)
        if generation is not None and generation < 1:
            raise fail(f"--generation must be 1 or more (0 is the shipped seed suite), got {generation}", 2)
        result = import_pool(source, jobs=jobs, generation=generation)
        if as_json:
            typer.echo(json.dumps(result, default=str))
        else:
            _print_import(result)
        if result["interrupted"]:
            typer.echo("spade: interrupted; run the same command again to resume (judged files are not judged again)",
                       err=True)
            raise typer.Exit(130)

    @registry_app.command("export-pool")
    def export_pool_cmd(
        folder: str = typer.Argument(..., help="a new (or empty) folder"),
        generation: Optional[int] = typer.Option(None, help="only this generation"),
        status: str = typer.Option("active", help="active | deprecated | quarantined"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
    ) -> None:
        """Write store entries in SPADE's pool layout (games/, manifests, checksums.sha256)."""
        from .registry_common import check_filters

        check_filters(generation, status)
        result = export_pool(folder, generation=generation, status=status)
        if as_json:
            typer.echo(json.dumps(result))
        else:
            typer.echo(f"wrote {result['games']} games ({result['files']} files) to {result['folder']}")


def _print_import(r: dict[str, Any]) -> None:
    rev = f"@{r['revision']}" if r.get("revision") else ""
    typer.echo(f"pool {r['pool']}{rev}: {r['files']} files, checksums {r['checksums']}, generation {r['generation']}")
    typer.echo(f"judged {r['judged']} now ({r.get('judged_earlier', 0)} earlier) on {r.get('jobs', '?')} processes "
               f"in {r['seconds']:.1f} s")
    typer.echo(f"accepted {r['accepted']} ({r['unverified']} unverified), registered {r['registered']}, "
               f"duplicates {r['duplicates']}, rejected {r['rejected']}"
               + (f", not yet judged {r['pending']}" if r.get("pending") else ""))
    if r["rejected_by_stage"]:
        typer.echo("rejected by stage: " + ", ".join(f"{k}: {v}" for k, v in r["rejected_by_stage"].items()))
