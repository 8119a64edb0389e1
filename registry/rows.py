"""Conversion between the store's rows and :class:`~.catalog.EnvRecord` (one place).

The columns (DESIGN.md section 7) are: source (in ``sources``, by sha256), sha256,
class_name, generation, status and status_reason, skill, description, designer_model,
grounding_ref, parent_ids (JSON list of ids), tool_specs (JSON), metadata (JSON: the
program's ``METADATA`` merged with caller metadata), acceptance (JSON list of stage
verdicts), regret, win_rate_hint, win_rate_plain, max_episode_steps, origin
(``local`` or ``hub:REPO@COMMIT``), created_at, updated_at; published (``REPO@COMMIT``
where the entry was first pushed or pulled from; NULL = never published: a pull may
renumber it) and parameters (the ``PARAMETERS`` JSON Schema, read statically); for a
*variant* also parent (the full id of the program it fixes kwargs of) and params
(canonical JSON object of those kwargs; NULL for ordinary entries).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ..errors import RegistryError
from ..program import inspect_program, source_sha256
from .catalog import EnvRecord, seed_records
from .ids import EnvId

STATUSES = ("active", "deprecated", "quarantined")

#: scalar columns copied into ``EnvRecord.metadata`` as they are
_SCALARS = ("class_name", "generation", "skill", "description", "designer_model", "grounding_ref", "regret",
            "win_rate_hint", "win_rate_plain", "sha256", "status_reason", "origin", "created_at", "updated_at",
            "published")
_JSON = ("parent_ids", "tool_specs", "acceptance")


@functools.lru_cache(maxsize=1)
def _seed_shas() -> dict[str, EnvRecord]:
    return {source_sha256(r.source): r for r in seed_records()}


def seed_by_sha(sha: str) -> EnvRecord | None:
    """The seed whose source has this sha256 (None if none)."""
    return _seed_shas().get(sha)


def _as_json(value: Any, default: Any) -> str:
    if value is None:
        value = default
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            raise RegistryError(f"expected JSON, got {value[:60]!r}") from None
        return value
    return json.dumps(value, sort_keys=True)


def row_values(*, source: str, filename: str = "<env>", generation: int | None = None, status: str = "active",
               status_reason: str | None = None, skill: str | None = None, description: str | None = None,
               designer_model: str | None = None, grounding_ref: str | None = None, parent_ids: Any = None,
               tool_specs: Any = None, metadata: Any = None, acceptance: Any = None, regret: float | None = None,
               win_rate_hint: float | None = None, win_rate_plain: float | None = None,
               max_episode_steps: int | None = None, origin: str = "local", created_at: str | None = None,
               updated_at: str | None = None, tags: Any = None, published: str | None = None,
               parent: str | None = None, params: Any = None,
               **_ignored: Any) -> dict[str, Any]:
    """Column values for one entry. Parses ``source`` (raising
    :class:`~spade_envs.errors.EnvProgramError` when it is not a program) for its class
    name and ``METADATA``; explicit arguments win over ``METADATA``."""
    info = inspect_program(source, filename=filename)
    if status not in STATUSES:
        raise RegistryError(f"status must be one of {', '.join(STATUSES)}, got '{status}'")
    meta = dict(info.metadata)
    if isinstance(metadata, str):
        metadata = json.loads(metadata) if metadata else {}
    meta.update(metadata or {})
    if tags is not None:
        meta["tags"] = [str(t) for t in tags]
    parents = json.loads(parent_ids) if isinstance(parent_ids, str) else list(parent_ids or [])
    steps = max_episode_steps if max_episode_steps is not None else meta.get("max_episode_steps")
    return {
        "source": source,
        "sha256": info.sha256,
        "class_name": info.class_name,
        "generation": None if generation is None else int(generation),
        "status": status,
        "status_reason": status_reason,
        "skill": skill if skill is not None else meta.get("skill"),
        "description": description if description is not None else meta.get("description"),
        "designer_model": designer_model,
        "grounding_ref": grounding_ref,
        "parent_ids": json.dumps([str(p) for p in parents]),
        "tool_specs": _as_json(tool_specs, []),
        "metadata": json.dumps(meta, sort_keys=True, default=str),
        "acceptance": _as_json(acceptance, []),
        "regret": None if regret is None else float(regret),
        "win_rate_hint": None if win_rate_hint is None else float(win_rate_hint),
        "win_rate_plain": None if win_rate_plain is None else float(win_rate_plain),
        "max_episode_steps": None if steps is None else int(steps),
        "origin": origin,
        "created_at": created_at,
        "updated_at": updated_at,
        "published": published,
        "parameters": _parameters_json(source),
        **variant_columns(parent, params),
    }


def _parameters_json(source: str) -> str | None:
    from .toolspecs import read_parameters

    if "PARAMETERS" not in source:
        return None
    schema = read_parameters(source)
    return None if schema is None else json.dumps(schema, sort_keys=True)


def canonical_params(params: Any) -> str:
    """The stored form of a variant's kwargs: compact JSON, keys sorted (dedup key)."""
    if isinstance(params, str):
        params = json.loads(params) if params else {}
    if not isinstance(params, dict):
        raise RegistryError(f"variant params must be a JSON object, got {type(params).__name__}")
    return json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_key(sha256: str, parent: str | None = None, params: Any = None) -> str:
    """What makes two entries the same: the source for an ordinary entry; the source,
    parent and params for a variant (variants share their parent's source)."""
    if not parent:
        return sha256
    return f"{sha256}|{parent}|{canonical_params(params)}"


def variant_columns(parent: str | None, params: Any) -> dict[str, Any]:
    """``parent``/``params`` column values: both NULL for an ordinary entry."""
    if not parent:
        return {"parent": None, "params": None}
    return {"parent": str(parent), "params": canonical_params(params)}


def record_from_row(row: dict[str, Any]) -> EnvRecord:
    """An untrusted :class:`EnvRecord` from a joined ``envs``/``sources`` row."""
    meta = json.loads(row["metadata"] or "{}")
    meta.update({k: row[k] for k in _SCALARS})
    meta.update({k: json.loads(row[k] or "[]") for k in _JSON})
    if row.get("max_episode_steps") is not None:
        meta["max_episode_steps"] = row["max_episode_steps"]
    parent = row.get("parent")
    params = json.loads(row["params"]) if parent and row.get("params") else {}
    meta["parent"], meta["params"] = parent, params
    if row.get("parameters"):
        meta["parameters"] = json.loads(row["parameters"])
    return EnvRecord(
        env_id=EnvId(row["seq"], row["version"]),
        source=row["source"],
        class_name=row["class_name"],
        trusted=False,
        generation=row["generation"],
        status=row["status"],
        metadata=meta,
        parent=parent,
        params=params,
    )


def _specs_of(rec: EnvRecord) -> tuple[list[Any], bool]:
    m = rec.metadata
    if rec.trusted and rec.generation == 0:  # a shipped seed: its specs are computed, never stored
        from .toolspecs import seed_tool_specs

        return seed_tool_specs(rec.env_id.seq)
    return list(m.get("tool_specs") or []), bool(m.get("tool_specs_vary_by_seed"))


def _published_repo(rec: EnvRecord) -> str | None:
    pub = rec.metadata.get("published_in") or rec.metadata.get("published")
    return str(pub).split("@", 1)[0] if pub else None


def export_row(rec: EnvRecord, *, repo: str | None = None) -> dict[str, Any]:
    """The flat, Parquet-friendly form of a record (also how seeds are exported).
    ``repo``: the dataset being pushed to; ``published_in`` names the repo an entry was
    first published in (kept as it is for entries published before)."""
    m = rec.metadata
    skip = set(_SCALARS) | set(_JSON) | {"max_episode_steps", "file", "tags", "parameters", "tool_specs_vary_by_seed",
                                         "published_in", "acceptance_pending", "renumbered_from",
                                         "parent", "params"}
    specs, vary = _specs_of(rec)
    params = m.get("parameters")
    return {
        "id": rec.env_id.base,
        "env_id": str(rec.env_id),
        "seq": rec.env_id.seq,
        "version": rec.env_id.version,
        "generation": rec.generation,
        "status": rec.status,
        "status_reason": m.get("status_reason"),
        "class_name": rec.class_name,
        "skill": rec.skill,
        "description": m.get("description"),
        "tags": [str(t) for t in (m.get("tags") or [])],
        "source": rec.source,
        "sha256": source_sha256(rec.source),
        "tool_specs": json.dumps(specs, sort_keys=True),
        "tool_specs_vary_by_seed": vary,
        "parameters": None if params is None else json.dumps(params, sort_keys=True),
        "metadata": json.dumps({k: v for k, v in m.items() if k not in skip}, sort_keys=True, default=str),
        "designer_model": m.get("designer_model"),
        "grounding_ref": m.get("grounding_ref"),
        "parent_ids": [str(p) for p in (m.get("parent_ids") or [])],
        "regret": m.get("regret"),
        "win_rate_hint": m.get("win_rate_hint"),
        "win_rate_plain": m.get("win_rate_plain"),
        "acceptance": json.dumps(m.get("acceptance") or [], sort_keys=True),
        "max_episode_steps": m.get("max_episode_steps"),
        "created_at": m.get("created_at"),
        "updated_at": m.get("updated_at"),
        "published_in": "spade-envs (seed suite)" if rec.trusted else (_published_repo(rec) or repo),
        # variants: the parent program's full id and the fixed kwargs (JSON object); null otherwise
        "parent": rec.parent,
        "params": canonical_params(rec.params) if rec.parent else None,
    }
