"""``spade registry export|push|pull|remove``: sharing the registry as a Hugging Face
dataset (DESIGN.md section 7) and removing unpublished entries.

``pull`` merges like a rebase (``spade_envs.registry.sharing``) and re-runs acceptance
on every row new to the store (orchestrated here, so that ``registry/`` never imports
``designer/``); rows that fail are quarantined. Long work shows a progress bar on
stderr; ``--json`` prints one object on stdout.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import typer

from .registry_common import echo_json, open_store, records, registry_app

LICENSE_HELP = "dataset license (a Hugging Face license id: apache-2.0, mit, cc-by-4.0, other...)"


@contextmanager
def _progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr (when it is a terminal); yields ``advance(n)``, whose
    ``advance.set_total(n)`` sets the total once it is known (a pull knows it only after
    the download: the rows new to this store)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True, disable=not console.is_terminal or (total is not None and total < 2)) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        advance.set_total = lambda n: bar.update(task, total=n, visible=n >= 2)  # type: ignore[attr-defined]
        yield advance


def pull_acceptance() -> Callable[[str, str], dict[str, Any]]:
    """``accept(source, name)``: the acceptance pipeline in the sandbox, without the
    novelty stage (novelty is a designer policy, not a check of the dataset's claims);
    for an accepted program also its tool specs, read in the sandbox."""
    from ..designer.acceptance import AcceptanceConfig, AcceptancePipeline
    from .registry_common import verdicts

    pipeline = AcceptancePipeline(AcceptanceConfig())

    def run(source: str, name: str) -> dict[str, Any]:
        from .registry_common import tool_spec_fields

        report = pipeline.run(source, filename=name)
        out = {"accepted": bool(report.accepted), "rejected_at": getattr(report, "rejected_at", None),
               "stages": verdicts(report)}
        if report.accepted:  # the specs are measured here too, not copied from the dataset
            out.update(tool_spec_fields(source, name, pipeline.runtime))
        return out

    return run


@registry_app.command("export")
def export_cmd(
    out_dir: str = typer.Argument(..., help="folder to write (README.md + data/gen-NNNN/*.parquet)"),
    generation: Optional[int] = typer.Option(None, help="only generations up to this one"),
    license: str = typer.Option("apache-2.0", "--license", help=LICENSE_HELP),
    repo: Optional[str] = typer.Option(None, "--repo", help="the dataset repo id it is meant for (named in the card)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write the registry in the Hugging Face dataset layout."""
    from ..registry.hub_export import export
    from .registry_common import check_filters

    check_filters(generation)
    rows = records()
    with _progress(len(rows), "exporting") as advance:
        summary = export(rows, out_dir, max_generation=generation, license=license, repo=repo, progress=advance)
    echo_json(summary) if as_json else typer.echo(
        f"wrote {summary['rows']} rows in {len(summary['generations'])} generation(s) to {out_dir}")


@registry_app.command("push")
def push_cmd(
    repo: str = typer.Argument(..., help="dataset repo id, e.g. me/spade-registry"),
    generation: Optional[int] = typer.Option(None, help="publish generations up to this one"),
    endpoint: Optional[str] = typer.Option(None, help="Hub endpoint (default: HF_ENDPOINT or huggingface.co)"),
    token: Optional[str] = typer.Option(None, help="Hub token (default: the saved login)"),
    private: bool = typer.Option(False, help="create the repo private"),
    license: str = typer.Option("apache-2.0", "--license", help=LICENSE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Publish the registry as a dataset: one atomic commit, a tag gen-NNNN per generation.
    Refused when the remote holds environments not pulled yet (pull first)."""
    from ..registry.hub_sync import push_registry
    from .registry_common import check_filters

    check_filters(generation)
    with open_store() as reg:
        with _progress(None, "exporting") as advance:
            res = push_registry(reg, repo, generation=generation, endpoint=endpoint, token=token, private=private,
                                license=license, progress=advance)
    echo_json(res) if as_json else typer.echo(
        f"{repo}: {'new commit' if res['new_commit'] else 'unchanged'} {res['commit'][:12]}, "
        f"{res['rows']} rows; tags created: {', '.join(res['tags_created']) or 'none'}")


@registry_app.command("pull")
def pull_cmd(
    repo: str = typer.Argument(..., help="dataset repo id"),
    revision: Optional[str] = typer.Option(None, help="branch, tag (gen-0003) or commit; default main"),
    endpoint: Optional[str] = typer.Option(None, help="Hub endpoint (default: HF_ENDPOINT or huggingface.co)"),
    token: Optional[str] = typer.Option(None),
    skip_acceptance: bool = typer.Option(False, "--skip-acceptance",
                                         help="store new rows without re-running acceptance (marked pending; "
                                              "they still only run sandboxed)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Merge a published registry into the local store (its code only runs sandboxed).
    Published ids are kept; your unpublished entries that collide are renumbered."""
    from ..registry.hub_sync import pull

    accept = None if skip_acceptance else pull_acceptance()
    with open_store() as reg, _progress(None, "accepting" if accept else "merging") as advance:
        res = pull(reg, repo, revision=revision, endpoint=endpoint, token=token, accept=accept, progress=advance)
    if as_json:
        echo_json(res)
        return
    typer.echo(f"{repo}@{res['commit'][:12]}: {res['added']} added, {res['unchanged']} already present, "
               f"{res['seeds']} seed rows skipped, {len(res['renumbered'])} local entries renumbered, "
               f"{len(res['deduplicated'])} deduplicated")
    for m in res["renumbered"]:
        typer.echo(f"  renumbered {m['from']} -> {m['to']}")
    if res["renumbered"]:
        typer.echo("  (a renumbered entry's old id stays an alias of its new id where the dataset does not use it; "
                   "where it does, the published entry wins and a notice names the new id)")
    for m in res["deduplicated"]:
        typer.echo(f"  deduplicated {m['from']} -> {m['to']} (same source)")
    from ..textsafe import safe_text  # reasons quote the dataset's programs and rows

    for q in res["quarantined"]:
        typer.echo(safe_text(f"  quarantined {q['id']}: {q['reason']}"))
    for s in res["skipped"]:
        typer.echo(safe_text(f"  skipped {s['id']}: {s['reason']}"))


@registry_app.command("remove")
def remove_cmd(
    env_id: str = typer.Argument(..., help="an id; without -vK every version"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Delete a local entry that was never published (published ones: deprecate or quarantine)."""
    with open_store() as reg:
        gone = reg.remove(env_id)
    echo_json({"removed": [str(e) for e in gone]}) if as_json else typer.echo(
        f"removed: {', '.join(map(str, gone))}")


