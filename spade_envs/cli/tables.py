"""Tables of the ``spade`` CLI that never cut an id.

On a terminal: a rich table whose id columns are never wrapped or shortened (their width
is that of the longest id; the other columns fold to make room), so
``spade/Env-00022-v0`` stays whole at 80 columns. Piped or redirected: plain text, one
row per line, columns separated by two spaces, nothing truncated, no box drawing, so
``spade registry list | grep Env-01`` and ``awk '{print $1}'`` see whole ids.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

#: column names whose cells are ids: kept whole
ID_COLUMNS = frozenset({"id", "env_id"})


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                stream: TextIO | None = None) -> None:
    """Print ``rows`` (plain strings, already made safe to show) under ``columns``."""
    from rich.console import Console

    console = Console(file=stream or sys.stdout)
    if not console.is_terminal:
        _plain(columns, rows, console.file)
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title))
    for i, col in enumerate(columns):
        if col in ID_COLUMNS:
            widest = max([len(col), *(len(r[i]) for r in rows)])
            table.add_column(col, no_wrap=True, min_width=widest)
        else:
            table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)


def _plain(columns: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max([len(col), *(len(r[i]) for r in rows)]) for i, col in enumerate(columns)]
    for line in [list(columns), *map(list, rows)]:
        cells = [cell.replace("\n", " ").replace("\t", " ") for cell in line]
        out.write("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() + "\n")
