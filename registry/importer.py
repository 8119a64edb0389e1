"""Reading environment candidates from files: SPADE-format ``.py`` programs and JSONL
pools (one environment per row, its code in a field). Pure reading: acceptance and
storing are the caller's job (the CLI runs the acceptance pipeline, then
:meth:`~.store.Registry.add`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: row fields that may hold the program text, first match wins
CODE_FIELDS = ("code", "source", "env_code", "program", "environment", "env_source")

#: row fields passed on to ``Registry.add`` as they are
PASSTHROUGH = ("skill", "description", "generation", "designer_model", "grounding_ref", "parent_ids", "tool_specs",
               "regret", "win_rate_hint", "win_rate_plain", "tags", "max_episode_steps")

POOL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass
class Candidate:
    """One environment read from a file; ``error`` set when it could not be read."""

    file: str  # "env.py" or "pool.jsonl:12" (1-based line)
    source: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _row_fields(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row[k] for k in PASSTHROUGH if row.get(k) is not None}
    meta = row.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = meta
    if "grounding_ref" not in out:
        for key in ("doc_id", "grounding_doc", "document_id"):
            if row.get(key) is not None:
                out["grounding_ref"] = str(row[key])
                break
    return out


def read_pool(path: Path) -> Iterator[Candidate]:
    """Candidates of a JSONL pool: one JSON object per line; blank lines are skipped."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        yield Candidate(str(path), None, error=f"cannot read: {exc.strerror}")
        return
    with fh:
        for lineno, line in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                yield Candidate(where, None, error=f"not valid JSON ({exc})")
                continue
            if not isinstance(row, dict):
                yield Candidate(where, None, error="row is not a JSON object")
                continue
            code = next((row[k] for k in CODE_FIELDS if isinstance(row.get(k), str) and row[k].strip()), None)
            if code is None:
                yield Candidate(where, None, error=f"no code field (expected one of: {', '.join(CODE_FIELDS)})")
                continue
            yield Candidate(where, code, _row_fields(row))


def read_program(path: Path) -> Candidate:
    try:
        return Candidate(str(path), path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return Candidate(str(path), None, error="not UTF-8 text")
    except OSError as exc:
        return Candidate(str(path), None, error=f"cannot read: {exc.strerror}")


def iter_candidates(paths: Iterable[str | Path]) -> Iterator[Candidate]:
    """Candidates from ``.py`` files, JSONL pools and folders holding them (sorted)."""
    for p in map(Path, paths):
        if p.is_dir():
            inner = sorted(q for q in p.iterdir() if q.suffix == ".py" or q.suffix in POOL_SUFFIXES)
            yield from iter_candidates(inner)
        elif p.suffix in POOL_SUFFIXES:
            yield from read_pool(p)
        elif not p.exists():
            yield Candidate(str(p), None, error="no such file")
        else:
            yield read_program(p)
