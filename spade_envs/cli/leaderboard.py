"""``spade leaderboard RUN... [--out DIR] [--force]``: several eval runs, one leaderboard per suite.

Each RUN is a ``spade eval --out`` folder (its ``results.json``) or a results JSON file.
Runs are grouped by suite (runs of different suites are never ranked together) and each
row names its run (``spade eval --name``, default the ``--out`` folder's name) and its
creation time, so two runs of one agent stay apart; the same results file given twice
is counted once. Prints the Markdown leaderboard and, with ``--out DIR``, writes
``leaderboard.md`` and ``leaderboard.html`` there; existing files are never replaced
unless ``--force`` is given.
"""

from __future__ import annotations

from pathlib import Path

import typer

OUTPUTS = ("leaderboard.md", "leaderboard.html")


def _load(path: Path) -> dict:
    from spade_envs.evals.results_file import load_results

    return load_results(path)  # one clear error for anything that is not a results file


def register(app: typer.Typer) -> None:
    @app.command("leaderboard")
    def leaderboard_cmd(
        runs: list[Path] = typer.Argument(..., help="eval --out folders or results.json files"),
        out: Path | None = typer.Option(None, "--out", help="write leaderboard.md and leaderboard.html here"),
        force: bool = typer.Option(False, "--force", help="replace leaderboard files already in --out"),
    ) -> None:
        """Put several `spade eval` runs on one leaderboard per suite."""
        from spade_envs.evals.report import leaderboard_page, markdown_table

        from .main import fail

        if out is not None and out.exists() and not out.is_dir():
            raise fail(f"--out {out} is a file, not a folder", 2)
        if out is not None and not force:
            present = [name for name in OUTPUTS if (out / name).exists()]
            if present:
                raise fail(f"--out {out} already holds {', '.join(present)}; pass --force to replace "
                           "it, or choose another folder", 2)
        seen: set[Path] = set()
        results = []
        for p in runs:
            key = (p / "results.json" if p.is_dir() else p).resolve()
            if key not in seen:
                seen.add(key)
                results.append(_load(p))
        md = markdown_table(results)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "leaderboard.md").write_text(md, encoding="utf-8")
            (out / "leaderboard.html").write_text(leaderboard_page(results), encoding="utf-8")
        typer.echo(md, nl=False)  # every name in it passed through textsafe (report.md_cell)
