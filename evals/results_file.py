"""A ``results.json`` read back (``spade leaderboard``): data someone else may have written.

:func:`load_results` returns the results object of a run folder or file, or raises ONE
:class:`~spade_envs.errors.SpadeError` saying why it is not one: the file is at most
:data:`MAX_BYTES` (checked with ``stat`` before reading), its JSON nests within Python's
parser (deeper is refused, never a ``RecursionError``) and it validates against
:data:`RESULTS`, the shape every figure the leaderboard reads needs (names as strings,
rate blocks with numbers, entries as objects). Everything it prints or renders is still
escaped by the writers (:func:`.report.md_cell`, :mod:`.report_html`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade_envs.errors import SpadeError

#: the largest results file read back
MAX_BYTES = 512 * 1024 * 1024

_NAME = {"type": "string", "maxLength": 1_000}
_RATE = {"type": "object", "required": ["rate", "ci95", "n"], "properties": {
    "rate": {"type": "number", "minimum": 0, "maximum": 1}, "n": {"type": "integer", "minimum": 0},
    "ci95": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number"}}}}
RESULTS = {
    "type": "object", "required": ["suite", "agent", "summary", "entries"],
    "properties": {
        "suite": _NAME, "agent": _NAME, "run": _NAME, "created": _NAME,
        "summary": {"type": "object", "properties": {
            "state_ok": {"anyOf": [_RATE, {"not": {"type": "object"}}]},
            "response_ok": {"anyOf": [_RATE, {"not": {"type": "object"}}]},
            "process_acc": {"type": ["number", "null"]},
            "per_skill": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["success"], "properties": {"success": _RATE}}},
            "per_generation": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["success"], "properties": {"success": _RATE}}},
            "per_category": {"type": "object", "additionalProperties": _RATE}}},
        "entries": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": ["string", "integer"]}, "passed": {"type": ["boolean", "null"]},
            "opponent": {"type": ["string", "null"]}, "outcome": {"type": ["string", "null"]}}}},
    },
}


def load_results(path: Path) -> dict[str, Any]:
    """The results object of a ``spade eval --out`` folder or a results JSON file."""
    import jsonschema

    file = path / "results.json" if path.is_dir() else path
    try:
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise SpadeError(f"{file}: {size} bytes; a results file is at most {MAX_BYTES}")
        data = json.loads(file.read_text(encoding="utf-8"))
    except RecursionError:
        raise SpadeError(f"{file}: not a spade eval results file (its JSON nests too deep)") from None
    except (OSError, ValueError) as exc:
        raise SpadeError(f"{file}: not a spade eval results file ({exc.__class__.__name__})") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(RESULTS).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise SpadeError(f"{file}: not a spade eval results file (at {where[:200]}: {error.message[:200]})")
    data.setdefault("run", path.name if path.is_dir() else file.parent.name)
    return data
