"""Reading environment candidates from files: SPADE-format ``.py`` programs, JSONL pools
and Parquet pools (one environment per row, its code in a field). Pure reading:
acceptance and storing are the caller's job (the CLI runs the acceptance pipeline, then
:meth:`~.store.Registry.add`).

SPADE's saved game files (``game_<rollout>_<index>_<skill_slug>.py``: a module docstring,
then the program) come in as they are; the skill is read from the file name when the row
or program names none. SPADE's own rejects (``reject_*.py``) are reported, not read.
Parquet needs ``pyarrow`` (imported only when a Parquet file is read) and is read in
record batches, so a large pool is never held in memory at once.

Files found inside a folder are others' data: a symbolic link there is reported, not
followed; a file's size is checked with ``fstat`` before it is read (a program over
:data:`MAX_PROGRAM_BYTES` is refused unread, a JSONL line over :data:`MAX_LINE_BYTES` is
skipped with a reason); JSON rows are parsed with a depth bound. A path the caller names
itself is read as named.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .safe_read import UnsafePath, loads_bounded, read_inside

#: row fields that may hold the program text, first match wins
CODE_FIELDS = ("code", "source", "env_code", "program", "environment", "env_source")

#: row fields passed on to ``Registry.add`` as they are
PASSTHROUGH = ("skill", "description", "generation", "designer_model", "grounding_ref", "parent_ids", "tool_specs",
               "regret", "win_rate_hint", "win_rate_plain", "tags", "max_episode_steps")

POOL_SUFFIXES = (".jsonl", ".ndjson")
MAX_PROGRAM_BYTES = 1 << 20
MAX_LINE_BYTES = 8 << 20
PARQUET_SUFFIXES = (".parquet", ".pq")

#: SPADE's saved game file names: game_{rollout:05d}_{index:03d}_{skill slug}.py
_SPADE_GAME = re.compile(r"^game_\d+_\d+_([a-z0-9_]+)\.py$")
#: row fields that may hold the file name (for the skill slug)
NAME_FIELDS = ("filename", "file", "path", "name", "game_file")


def spade_skill(filename: str) -> str | None:
    """The skill of a SPADE saved game file name (``game_00012_003_logical_deduction.py``
    -> ``logical deduction``), or None."""
    m = _SPADE_GAME.match(Path(filename).name)
    return m.group(1).replace("_", " ") if m else None


@dataclass
class ImportedFile:
    """One environment read from a file; ``error`` set when it could not be read."""

    file: str  # "env.py" or "pool.jsonl:12" (1-based line)
    source: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _row_fields(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row[k] for k in PASSTHROUGH if row.get(k) is not None}
    if "skill" not in out:
        name = next((row[k] for k in NAME_FIELDS if isinstance(row.get(k), str)), None)
        skill = spade_skill(name) if name else None
        if skill:
            out["skill"] = skill
    meta = row.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = meta
    if "grounding_ref" not in out:
        for key in ("doc_id", "grounding_doc", "document_id"):
            if row.get(key) is not None:
                out["grounding_ref"] = str(row[key])
                break
    return out


def read_pool(path: Path) -> Iterator[ImportedFile]:
    """Candidates of a JSONL pool: one JSON object per line; blank lines are skipped."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        yield ImportedFile(str(path), None, error=f"cannot read: {exc.strerror}")
        return
    with fh:
        for lineno, line in enumerate(_bounded_lines(fh), 1):
            where = f"{path}:{lineno}"
            if line is None:
                yield ImportedFile(where, None, error=f"line longer than {MAX_LINE_BYTES} bytes; skipped unread")
                continue
            if not line.strip():
                continue
            try:
                row = loads_bounded(line)
            except ValueError as exc:
                yield ImportedFile(where, None, error=f"not valid JSON ({exc})")
                continue
            if not isinstance(row, dict):
                yield ImportedFile(where, None, error="row is not a JSON object")
                continue
            yield _row_candidate(where, row)


def _bounded_lines(fh: Any) -> Iterator[str | None]:
    """The lines of ``fh``, None for one over :data:`MAX_LINE_BYTES` (consumed in chunks,
    never held whole)."""
    while True:
        line = fh.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith("\n"):
            while line and not line.endswith("\n"):
                line = fh.readline(1 << 20)
            yield None
            continue
        yield line


def _row_candidate(where: str, row: dict[str, Any]) -> ImportedFile:
    code = next((row[k] for k in CODE_FIELDS if isinstance(row.get(k), str) and row[k].strip()), None)
    if code is None:
        return ImportedFile(where, None, error=f"no code field (expected one of: {', '.join(CODE_FIELDS)})")
    return ImportedFile(where, code, _row_fields(row))


def read_parquet(path: Path, batch_rows: int = 256) -> Iterator[ImportedFile]:
    """Candidates of a Parquet pool, row by row (``file.parquet:N``, 1-based)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        yield ImportedFile(str(path), None, error="reading Parquet needs pyarrow (pip install pyarrow)")
        return
    try:
        pf = pq.ParquetFile(path)
        batches = pf.iter_batches(batch_size=batch_rows)
        n = 0
        for batch in batches:
            for row in batch.to_pylist():
                n += 1
                yield _row_candidate(f"{path}:{n}", row) if isinstance(row, dict) else ImportedFile(f"{path}:{n}", None, error="row is not a record")
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        yield ImportedFile(str(path), None, error=f"not a readable Parquet file ({str(exc)[:200]})")


def read_program(path: Path, *, named: bool = True) -> ImportedFile:
    """One program file (``named``: the caller named this path itself, so a link is followed)."""
    if path.name.startswith("reject_"):
        return ImportedFile(str(path), None, error="a game SPADE itself rejected (reject_*.py); not imported")
    fields = {"skill": spade_skill(path.name)} if spade_skill(path.name) else {}
    try:
        target = path.resolve() if named else path  # a path the caller named is read as named
        data = read_inside(target.parent, target.name, MAX_PROGRAM_BYTES)
        return ImportedFile(str(path), data.decode("utf-8"), fields)
    except UnicodeDecodeError:
        return ImportedFile(str(path), None, error="not UTF-8 text")
    except UnsafePath as exc:
        return ImportedFile(str(path), None, error=str(exc))


def iter_candidates(paths: Iterable[str | Path], *, named: bool = True) -> Iterator[ImportedFile]:
    """Candidates from ``.py`` files, JSONL and Parquet pools and folders holding them
    (sorted; SPADE's ``*.reason.txt`` companions and other files are ignored; a link
    inside a folder is reported, not followed)."""
    for p in map(Path, paths):
        if not named and p.is_symlink():
            yield ImportedFile(str(p), None, error="a symbolic link inside the folder; links are not followed")
        elif not named and not (p.is_file() or p.is_dir()):
            yield ImportedFile(str(p), None, error="not a regular file; not read")
        elif p.is_dir():
            inner = sorted(q for q in p.iterdir()
                           if q.suffix == ".py" or q.suffix in POOL_SUFFIXES or q.suffix in PARQUET_SUFFIXES)
            yield from iter_candidates(inner, named=False)
        elif p.suffix in POOL_SUFFIXES:
            yield from read_pool(p)
        elif p.suffix in PARQUET_SUFFIXES and p.exists():
            yield from read_parquet(p)
        elif not p.exists():
            yield ImportedFile(str(p), None, error="no such file")
        else:
            yield read_program(p, named=named)
