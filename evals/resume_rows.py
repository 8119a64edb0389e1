"""The finished rows an interrupted run's file hands ``spade eval --resume`` (DESIGN.md
section 9), judged as data: ``entries.partial.jsonl`` is a file in a folder anyone may
have written, so a row is never taken as it is.

- every row is validated against its suite's schema (:data:`REGISTRY_ROW`,
  :data:`GAMES_ROW`) and must belong to the key it is filed under (its id and seed, for
  a match its opponent and seat too);
- a registry row's results are **recomputed**: its recorded actions are replayed on a
  fresh environment with the same seed and scored exactly as a live episode is
  (:func:`.registry_suite.score_episode`): ``passed``, the return, the state, response
  and process checks and ``why`` are this process's, never the file's; only the
  conversation is kept, as text the report escapes;
- a match row records no moves, so only what follows from it is recomputed
  (``passed`` is ``outcome == "win"``); its outcome must agree with its returns' sign
  where that decides (a win never with a negative return);
- a row that fails is **refused**: it is left out, so its entry is played again, and
  the reason is reported (``refused``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from spade_envs.errors import SpadeError

_STR = {"type": "string", "maxLength": 100_000}
_MESSAGE = {"type": "object", "properties": {"role": {"type": "string", "maxLength": 64}, "content": _STR}}
REGISTRY_ROW = {
    "type": "object", "required": ["id", "seed", "transcript"],
    "properties": {
        "id": {"type": "string", "maxLength": 200}, "seed": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "transcript": {"type": "object", "required": ["actions"], "properties": {
            "messages": {"type": "array", "maxItems": 2_000, "items": _MESSAGE},
            "actions": {"type": "array", "maxItems": 1_000, "items": _STR},
            "terminated": {"type": "boolean"}, "truncated": {"type": "boolean"}}},
    },
}
GAMES_ROW = {
    "type": "object", "required": ["id", "opponent", "seed", "model_seat", "outcome", "returns"],
    "properties": {
        "id": {"type": "string", "maxLength": 200}, "opponent": {"type": "string", "maxLength": 40},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "model_seat": {"type": "integer", "minimum": 0, "maximum": 64},
        "outcome": {"enum": ["win", "draw", "loss", "error"]},
        "returns": {"type": "array", "maxItems": 64, "items": {"type": "number"}},
        "steps": {"type": "integer", "minimum": 0}, "truncated": {"type": "boolean"},
        "error": {"type": ["string", "null"], "maxLength": 2_000},
    },
}


def _schema_problem(schema: dict[str, Any], row: Any) -> str | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(row))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the row"
    return f"{where}: {error.message[:200]}"


def _registry_row(key: str, row: Any, by_id: dict[str, Any]) -> dict[str, Any]:
    from . import registry_suite as rs

    problem = _schema_problem(REGISTRY_ROW, row)
    if problem:
        raise SpadeError(problem)
    if key != f"{row['id']}#{row['seed']}":
        raise SpadeError(f"it is filed under {key[:80]!r} but is the row of {row['id'][:80]}#{row['seed']}")
    record = by_id.get(row["id"])
    if record is None:
        raise SpadeError(f"{row['id'][:80]} is not in this run's selection")
    t = row["transcript"]
    mine = rs.replay_trace(record, row["seed"], list(t["actions"]))
    episode = SimpleNamespace(
        task=SimpleNamespace(seed=row["seed"]), actions=list(mine.actions), won=mine.won,
        episode_return=mine.episode_return, turns=len(mine.actions), final_state=mine.final_state,
        error=None, rewards=list(mine.rewards), messages=list(t.get("messages") or []),
        terminated=mine.won or bool(t.get("terminated")), truncated=bool(t.get("truncated")) and not mine.won)
    return rs.score_episode(record, episode)


def _games_row(key: str, row: Any) -> dict[str, Any]:
    problem = _schema_problem(GAMES_ROW, row)
    if problem:
        raise SpadeError(problem)
    if not all(math.isfinite(r) for r in row["returns"]):
        raise SpadeError("its returns are not finite numbers")
    prefix = f"{row['id']}|{row['opponent']}|{row['seed']}|"
    if not key.startswith(prefix) or key[len(prefix):].split(",")[0] != str(row["model_seat"]):
        raise SpadeError(f"it is filed under {key[:80]!r} but is another match's row")
    seat = row["model_seat"]
    if row["outcome"] == "win" and seat < len(row["returns"]) and row["returns"][seat] < 0:
        raise SpadeError("it claims a win with a negative return")
    return {**row, "passed": row["outcome"] == "win"}


def checked(suite: str, rows: dict[str, Any], *, records: Sequence[Any] = (),
            refused: Callable[[str, str], Any] | None = None) -> dict[str, dict[str, Any]]:
    """The resumed rows this process will use, by key: validated, recomputed where the
    suite allows it (see the module docstring); each refused row is left out and
    ``refused(key, reason)`` is called for it."""
    by_id = {str(r.env_id): r for r in records}
    out: dict[str, dict[str, Any]] = {}
    for key, row in rows.items():
        try:
            out[key] = _registry_row(key, row, by_id) if suite == "registry" else _games_row(key, row)
        except SpadeError as exc:
            if refused is not None:
                refused(key, str(exc))
        except Exception as exc:  # noqa: BLE001 - one row of others' data never ends the run: it is replayed
            if refused is not None:
                refused(key, f"{type(exc).__name__}: {str(exc)[:200]}")
    return out
