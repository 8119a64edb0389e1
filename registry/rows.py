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

Stored rows are data, never trusted to be well-formed (a Hub row, an old store): every
write refuses variant params that name one of ``SpadeEnv``'s own keywords
(:func:`spade_envs.trust.check_params`) and turns a malformed number into one
:class:`~spade_envs.errors.RegistryError`; :func:`coerce_metadata` keeps only
well-typed values of the metadata fields the code reads (others are dropped, so their
defaults apply), on the way in and on the way out.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from ..errors import RegistryError
from ..program import inspect_program, source_sha256
from .catalog import EnvRecord, seed_records
from .ids import EnvId


@dataclass(frozen=True)
class AddResult:
    """Outcome of writing an entry (:meth:`~.store.Registry.add`, a variant, a pull): the
    entry's id (with version) and whether it is new."""

    env_id: EnvId
    new: bool

    def as_json(self) -> dict[str, Any]:
        return {"id": self.env_id.base, "version": self.env_id.version, "new": self.new}

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
    meta.update(_json_object(metadata, "metadata"))
    if tags is not None:
        meta["tags"] = tags
    meta = coerce_metadata(meta)
    parents = _json_value(parent_ids, "parent_ids") if isinstance(parent_ids, str) else parent_ids
    if not isinstance(parents, (list, tuple)) and parents is not None:
        raise RegistryError(f"parent_ids must be a list of ids, got {type(parents).__name__}")
    parents = list(parents or [])
    steps = max_episode_steps if max_episode_steps is not None else meta.get("max_episode_steps")
    return {
        "source": source,
        "sha256": info.sha256,
        "class_name": info.class_name,
        "generation": _number(generation, "generation", int),
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
        "regret": _number(regret, "regret", float),
        "win_rate_hint": _number(win_rate_hint, "win_rate_hint", float),
        "win_rate_plain": _number(win_rate_plain, "win_rate_plain", float),
        "max_episode_steps": _number(steps, "max_episode_steps", int),
        "origin": origin,
        "created_at": created_at,
        "updated_at": updated_at,
        "published": published,
        "parameters": _parameters_json(source),
        **variant_columns(parent, params),
    }


def _number(value: Any, name: str, kind: type) -> Any:
    """``value`` as ``kind`` (None stays None); a malformed one is one RegistryError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise RegistryError(f"{name} must be a number, got {type(value).__name__}")
    try:
        out = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise RegistryError(f"{name} must be a number, got {str(value)[:60]!r}") from None
    if kind is float and out != out:
        raise RegistryError(f"{name} must be a finite number")
    return out


def _json_value(value: str, name: str) -> Any:
    try:
        return json.loads(value) if value else None
    except (ValueError, RecursionError):
        raise RegistryError(f"{name} is not valid JSON: {value[:60]!r}") from None


def _json_object(value: Any, name: str) -> dict[str, Any]:
    """``value`` (a dict, its JSON, or None) as a dict; anything else is a RegistryError."""
    if isinstance(value, str):
        value = _json_value(value, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RegistryError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def _is_int(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _str_list(v: Any) -> list[str] | None:
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple, set, frozenset)) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v):
        return [str(x) for x in v]
    return None


#: metadata fields the code reads, each with its rule: keep (True), convert (a value), or drop (None)
_META_RULES: dict[str, Any] = {
    "solution_form": lambda v: v if _is_int(v, 0) else None,
    "max_episode_steps": lambda v: v if _is_int(v, 1) else None,
    "generation": lambda v: v if _is_int(v, 0) else None,
    "tags": _str_list,
    "lineage": _str_list,
    "parent_ids": _str_list,
    "file": lambda v: v if isinstance(v, str) and 0 < len(v) <= 1024 and v.isprintable() else None,
    **{k: (lambda v: v if isinstance(v, str) else None)
       for k in ("name", "skill", "description", "mode", "class_name", "designer_model", "grounding_ref",
                 "published_in", "published", "status_reason", "origin", "sha256", "renumbered_from",
                 "created_at", "updated_at")},
    **{k: (lambda v: v if isinstance(v, bool) else None)
       for k in ("verified", "tool_specs_vary_by_seed", "acceptance_pending")},
    **{k: (lambda v: v if _is_num(v) else None) for k in ("regret", "win_rate_hint", "win_rate_plain")},
    **{k: (lambda v: v if isinstance(v, list) and all(isinstance(x, dict) for x in v) else None)
       for k in ("tool_specs", "acceptance")},
    "scores": lambda v: v if isinstance(v, dict) else None,
}


def coerce_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with every field the code reads well-typed: a malformed value (a
    ``solution_form`` of ``"last"``, tags that are not strings...) is dropped, so the
    field's default applies; fields the code does not read pass as they are."""
    out = {}
    for key, value in meta.items():
        rule = _META_RULES.get(key)
        if rule is None or value is None:
            out[key] = value
            continue
        kept = rule(value)
        if kept is not None:
            out[key] = kept
    return out


def _parameters_json(source: str) -> str | None:
    from .toolspecs import read_parameters

    if "PARAMETERS" not in source:
        return None
    schema = read_parameters(source)
    return None if schema is None else json.dumps(schema, sort_keys=True)


def canonical_params(params: Any) -> str:
    """The stored form of a variant's kwargs: compact JSON, keys sorted (dedup key).
    Params naming one of ``SpadeEnv``'s own keywords are refused
    (:class:`~spade_envs.parameters.InvalidParametersError`): they reach the program only."""
    if isinstance(params, str):
        params = _json_value(params, "variant params") or {}
    if not isinstance(params, dict):
        raise RegistryError(f"variant params must be a JSON object, got {type(params).__name__}")
    from ..trust import check_params  # lazily: `import spade_envs` reads rows without the runtimes

    check_params(params)
    try:
        return json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"variant params must be plain JSON values ({exc})") from None


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
    try:
        meta = json.loads(row["metadata"] or "{}")
    except (ValueError, RecursionError):
        meta = None
    meta = meta if isinstance(meta, dict) else {}
    meta.update({k: row[k] for k in _SCALARS})
    meta.update({k: json.loads(row[k] or "[]") for k in _JSON})
    if row.get("max_episode_steps") is not None:
        meta["max_episode_steps"] = row["max_episode_steps"]
    parent = row.get("parent")
    params = json.loads(row["params"]) if parent and row.get("params") else {}
    meta["parent"], meta["params"] = parent, params
    if row.get("parameters"):
        meta["parameters"] = json.loads(row["parameters"])
    meta = coerce_metadata(meta)
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
    params = m["parameters"] if "parameters" in m else json.loads(_parameters_json(rec.source) or "null")
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
