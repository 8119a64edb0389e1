"""``spade leaderboard RUN...``: several eval runs on one leaderboard.

Each RUN is a ``spade eval --out`` folder (its ``results.json``) or a results JSON file.
Prints the Markdown leaderboard (best first) and, with ``--out DIR``, writes
``leaderboard.md`` and ``leaderboard.html`` there.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer


def _load(path: Path) -> dict:
    from spade_envs.errors import SpadeError

    file = path / "results.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpadeError(f"{file}: not a spade eval results file ({exc.__class__.__name__})") from None
    if not isinstance(data, dict) or not {"suite", "agent", "summary", "entries"} <= set(data):
        raise SpadeError(f"{file}: not a spade eval results file (needs suite, agent, summary, entries)")
    return data


def register(app: typer.Typer) -> None:
    @app.command("leaderboard")
    def leaderboard_cmd(
        runs: list[Path] = typer.Argument(..., help="eval --out folders or results.json files"),
        out: Path | None = typer.Option(None, "--out", help="write leaderboard.md and leaderboard.html here"),
    ) -> None:
        """Put several `spade eval` runs on one leaderboard."""
        from spade_envs.evals.report import leaderboard_page, markdown_table

        from .main import fail

        if out is not None and out.exists() and not out.is_dir():
            raise fail(f"--out {out} is a file, not a folder", 2)
        results = [_load(p) for p in runs]
        md = markdown_table(results)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "leaderboard.md").write_text(md, encoding="utf-8")
            (out / "leaderboard.html").write_text(leaderboard_page(results), encoding="utf-8")
        typer.echo(md, nl=False)
