"""``spade bench NAME [--json]``: benchmarks that print ratios against their baselines.

Each benchmark is a function ``run(**options) -> dict`` in the module named below; the
dict holds named figures with their unit in the name (``_us``, ``_s``, ``_bytes``,
``_per_s``, ``ratio_...``). ``--json`` prints exactly that object (plus ``"bench"``).
"""

from __future__ import annotations

import importlib
import json

import typer

BENCHMARKS = {
    "sandbox": "spade_envs.benches.sandbox",
    "registry": "spade_envs.benches.registry",
    "rollout": "spade_envs.benches.rollout",
    "prefix-sliding": "spade_envs.benches.prefix_sliding",
    "sampling": "spade_envs.benches.sampling",
    "acceptance": "spade_envs.designer.bench_acceptance",
    "learning": "spade_envs.selfplay.learning_bench",
    "designer": "spade_envs.selfplay.designer_bench",
    "designer-checkpoint": "spade_envs.selfplay.designer_checkpoint",
}


def register(app: typer.Typer) -> None:
    @app.command("bench")
    def bench(
        name: str = typer.Argument(..., help=f"one of: {', '.join(BENCHMARKS)}"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON object on stdout"),
        quick: bool = typer.Option(False, "--quick", help="fewer repetitions (for smoke tests)"),
    ) -> None:
        """Run a benchmark and report its figures and ratios."""
        from .main import fail

        if name not in BENCHMARKS:
            raise fail(f"unknown benchmark '{name}'; choose one of: {', '.join(BENCHMARKS)}", 2)
        try:
            module = importlib.import_module(BENCHMARKS[name])
        except ModuleNotFoundError:
            raise fail(f"benchmark '{name}' is not available in this build", 2) from None
        figures = {"bench": name, **module.run(quick=quick)}
        if as_json:
            typer.echo(json.dumps(figures))
        else:
            from rich.console import Console
            from rich.table import Table

            table = Table(title=f"spade bench {name}")
            table.add_column("figure")
            table.add_column("value", justify="right")
            for key, value in figures.items():
                if key != "bench":
                    table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
            Console().print(table)
