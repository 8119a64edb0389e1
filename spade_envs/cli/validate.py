"""``spade validate FILE.py [--json] [--trust-remote-code]``: run the acceptance pipeline.

Exit status: 0 accepted, 1 rejected, 2 usage error (missing or unreadable file, not a
``.py`` UTF-8 text file, bad flags, or no sandbox available without
``--trust-remote-code``). ``--json`` prints exactly one JSON object on stdout, in the shape
of DESIGN.md section 10: ``{"accepted", "rejected_at", "stages": [{"name", "ok",
"detail"}, ...]}`` plus extra keys. Without it, a table of the stages is printed, with
terminal control characters and rich markup of program-controlled text neutralised.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer


def _read_source(path: Path) -> str:
    from .main import fail

    if path.suffix != ".py":
        raise fail(f"{path}: expected a Python source file (*.py)", 2)
    if not path.exists():
        raise fail(f"{path}: no such file", 2)
    if not path.is_file():
        raise fail(f"{path}: not a regular file", 2)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise fail(f"{path}: cannot read ({exc.strerror or exc})", 2) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fail(f"{path}: not UTF-8 text", 2) from None
    if "\x00" in text:
        raise fail(f"{path}: binary data, not Python source text", 2)
    return text


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate(
        file: Path = typer.Argument(..., help="environment source file (*.py)"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
        trust_remote_code: bool = typer.Option(
            False, "--trust-remote-code", help="run the code in-process, without the sandbox (trusted code only)"
        ),
        novelty: bool = typer.Option(
            True, "--novelty/--no-novelty", help="judge novelty against the seed suite and the local store"
        ),
    ) -> None:
        """Run the acceptance stages on FILE and print a verdict per stage."""
        from ..errors import UntrustedCodeError
        from ..designer.acceptance import AcceptanceConfig, AcceptancePipeline
        from .main import fail

        source = _read_source(file)
        config = AcceptanceConfig(novelty_check=_registry_novelty_check() if novelty else None)
        pipeline = AcceptancePipeline(config, trust_remote_code=trust_remote_code)
        try:
            pipeline.runtime  # noqa: B018 - fail early, before any stage, when there is no sandbox
        except UntrustedCodeError as exc:
            raise fail(f"{exc} (spade validate --trust-remote-code)", 2) from None
        report = pipeline.run(source, filename=str(file))
        if as_json:
            payload = report.to_json()
            jail = _sandbox_layers(pipeline.runtime)
            if jail is not None:
                payload["sandbox"] = jail
            typer.echo(json.dumps(payload))
        else:
            _print_table(report)
        raise typer.Exit(0 if report.accepted else 1)


def _sandbox_layers(runtime) -> dict | None:  # noqa: ANN001 - an EnvRuntime
    """Which confinement layers the sandbox applied (None when the code ran in-process)."""
    from ..errors import SpadeError

    info = getattr(runtime, "info", None)
    if not callable(info):
        return None
    try:
        got = info()
    except SpadeError:
        return None
    return {"network": got.get("network"), "layers": got.get("layers"), "refused": got.get("refused")}


def _registry_novelty_check():  # noqa: ANN202 - a NoveltyCheck
    """Novelty against the seed suite and, when it exists, the local store (read-only)."""
    from ..designer.memory import DesignerMemory
    from ..registry.store import Registry, default_path

    if not default_path().exists():
        return DesignerMemory(None).import_novelty_check()
    with Registry.open(readonly=True) as reg:
        memory = DesignerMemory(reg)
        memory.entries()
        memory.novelty_index()  # load everything while the store is open
    return memory.import_novelty_check()


def _print_table(report) -> None:  # noqa: ANN001 - AcceptanceReport, imported lazily
    """The stages as a table. Every string in it may come from the program: control
    characters are stripped (:func:`~spade_envs.textsafe.safe_text`) and rich markup is
    escaped, so nothing a program prints can redraw the verdict."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ..textsafe import safe_text

    def shown(value: object) -> str:
        return escape(safe_text(value))

    table = Table(title=f"spade validate {shown(report.filename)}")
    table.add_column("stage")
    table.add_column("ok", justify="center")
    table.add_column("ms", justify="right")
    table.add_column("detail", overflow="fold")
    for verdict in report.stages:
        mark = "[green]yes[/green]" if verdict.ok else "[red]NO[/red]"
        table.add_row(shown(verdict.name), mark, f"{1000 * verdict.seconds:.1f}", shown(verdict.detail))
    console = Console()
    console.print(table)
    if report.accepted:
        unverified = "" if getattr(report, "verified", True) else ", [yellow]unverified[/yellow]: no win replayed"
        console.print(f"[green]accepted[/green] ({shown(report.class_name)}, {report.seconds:.2f} s{unverified})")
    else:
        console.print(f"[red]rejected at {shown(report.rejected_at)}[/red]: "
                      f"{shown(report.failure.detail if report.failure else '')}")
