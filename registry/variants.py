"""Registry variants: a parent program (id + version) plus fixed constructor kwargs.

Contract (DESIGN.md sections 3 and 7):

- A variant is an entry of its own (its own ``spade/Env-NNNNN`` id, version 0) whose
  source is its parent's, made with fixed kwargs: ``gym.make`` of it needs none (its
  ``EnvSpec`` carries them) and every other entry point (``SpadeEnv(env_id=...)``, agents,
  evals) applies them from the record (``EnvRecord.params``).
- The parent is a *program*: a seed or an ordinary store entry that declares
  ``PARAMETERS`` (:mod:`spade_envs.parameters`). Asking for a variant of a variant
  fixes kwargs on top of that variant's: the stored parent is the program, the stored
  params the merged point, and ``metadata["lineage"]`` lists the way there
  (immediate parent first).
- Params never name one of ``SpadeEnv``'s own keywords (``trust_remote_code``, ``env_id``,
  ``hint``...: :func:`spade_envs.trust.check_params`), whatever the parent's schema
  allows: they reach the program's constructor only.
- Params are validated against the parent's ``PARAMETERS`` and stored as the *full*
  point (every property, defaults filled in, integral floats of integer properties as
  ints), so ``{"size": 5}`` and ``{"size": 5, "depth": <default>}`` are one variant.
  Identical (parent, params) deduplicate; a point equal to the parent's defaults is the
  parent itself (``new=False`` with the parent's id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import RegistryError, UnknownEnvironmentError
from ..trust import check_params
from .catalog import EnvRecord, seed_records
from .ids import EnvId, parse_env_id
from .migrations import FIRST_STORE_SEQ
from .rows import AddResult, canonical_params, row_values

if TYPE_CHECKING:
    from .store import Registry


class VariantError(RegistryError):
    """A variant cannot be made: unknown parent, no ``PARAMETERS``, or invalid kwargs."""


@dataclass(frozen=True)
class VariantPlan:
    """What :meth:`Registry.add_variant` stores: the root program and the full point."""

    root: EnvRecord
    params: dict[str, Any]
    lineage: list[str] = field(default_factory=list)  #: immediate parent first, root last
    is_defaults: bool = False  #: the point is the root's defaults (no new entry)

    @property
    def parent(self) -> str:
        return str(self.root.env_id)


def _lookup(registry: Any, env_id: str | EnvId) -> EnvRecord:
    eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
    if eid.seq < FIRST_STORE_SEQ:
        for rec in seed_records():
            if rec.env_id.seq == eid.seq and (eid.version is None or rec.env_id.version == eid.version):
                return rec
        raise UnknownEnvironmentError(f"no seed environment {eid}; `spade registry list` shows what exists")
    return registry.get(eid)


def _normalise(schema: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    out = {}
    for key, value in point.items():
        kind = (props.get(key) or {}).get("type")
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    return out


def plan_variant(registry: Any, parent: str | EnvId, params: dict[str, Any]) -> VariantPlan:
    """Resolve ``parent`` (latest version unless given; a seed or a store entry) and
    check ``params`` against its ``PARAMETERS``. Raises :class:`VariantError` or
    :class:`~spade_envs.parameters.InvalidParametersError` (naming the argument)."""
    from ..parameters import defaults, schema_of, validate_kwargs

    if not isinstance(params, dict):
        raise VariantError(f"variant params must be a dict of keyword arguments, got {type(params).__name__}")
    check_params(params)  # SpadeEnv's own keywords are the caller's, never a variant's
    rec = _lookup(registry, parent)
    lineage = [str(rec.env_id)]
    merged: dict[str, Any] = {}
    seen = set()
    while rec.parent is not None:  # a variant of a variant: fix kwargs on top of its point
        if rec.parent in seen:
            raise VariantError(f"variant lineage of {lineage[0]} loops at {rec.parent}")
        seen.add(rec.parent)
        merged = {**rec.params, **merged}
        rec = _lookup(registry, rec.parent)
        lineage.append(str(rec.env_id))
    schema = schema_of(rec.source, rec.metadata.get("file", "<env>"))
    if schema is None:
        raise VariantError(
            f"{rec.env_id} declares no PARAMETERS, so it has no kwargs a variant could fix; "
            "pick a parent whose program declares PARAMETERS")
    point = {**defaults(schema), **merged, **params}
    point = _normalise(schema, point)
    validate_kwargs(schema, point, filename=str(rec.env_id))
    return VariantPlan(root=rec, params=point, lineage=lineage, is_defaults=point == defaults(schema))


def _stored(conn: Any, plan: VariantPlan) -> EnvId | None:
    hit = conn.execute("SELECT seq, version FROM envs WHERE parent = ? AND params = ?",
                       (plan.parent, canonical_params(plan.params))).fetchone()
    return None if hit is None else EnvId(hit[0], hit[1])


def find_variant(registry: "Registry", parent: str | EnvId, params: dict[str, Any]) -> EnvId | None:
    """The id :func:`add_variant` would return for (``parent``, ``params``) without adding
    anything: an existing variant, the parent for its defaults, else None."""
    plan = plan_variant(registry, parent, params)
    return plan.root.env_id if plan.is_defaults else _stored(registry._conn, plan)


def add_variant(registry: "Registry", parent: str | EnvId, params: dict[str, Any], *, generation: int | None = None,
                metadata: dict[str, Any] | None = None, acceptance: list | None = None, regret: float | None = None,
                win_rate_hint: float | None = None, win_rate_plain: float | None = None,
                designer_model: str | None = None) -> "AddResult":
    """Store a variant (``Registry.add_variant``): ``parent`` (a seed or store entry that
    declares ``PARAMETERS``; latest version unless the id names one) with ``params``
    fixed, as a new entry (version 0) of ``generation`` (default: the store's newest,
    at least 1) that inherits the parent's skill, description, tags, tool specs and step
    limit. The same (parent, full point) as an existing variant returns that one with
    ``new=False``; the parent's default point returns the parent. Raises
    :class:`VariantError` or :class:`~spade_envs.parameters.InvalidParametersError`."""
    plan = plan_variant(registry, parent, params)
    if plan.is_defaults:
        return AddResult(plan.root.env_id, False)
    root = plan.root
    meta = {k: v for k, v in root.metadata.items() if k in ("name", "skill", "description", "tags", "mode")}
    meta.update(metadata or {})
    meta["lineage"] = plan.lineage
    values = row_values(
        source=root.source, filename=root.metadata.get("file", "<env>"), generation=generation,
        skill=root.skill, description=root.metadata.get("description"), designer_model=designer_model,
        parent_ids=[plan.lineage[0]], tool_specs=root.metadata.get("tool_specs"), metadata=meta,
        acceptance=acceptance, regret=regret, win_rate_hint=win_rate_hint, win_rate_plain=win_rate_plain,
        max_episode_steps=root.metadata.get("max_episode_steps"), parent=plan.parent, params=plan.params,
    )
    with registry.transaction() as conn:
        hit = _stored(conn, plan)
        if hit is not None:
            return AddResult(hit, False)
        top = conn.execute("SELECT max(seq) FROM envs").fetchone()[0]
        seq = max(FIRST_STORE_SEQ, (top or 0) + 1)
        if values["generation"] is None:
            values["generation"] = max(1, conn.execute("SELECT max(generation) FROM envs").fetchone()[0] or 1)
        registry._insert(conn, seq, 0, values)
    result = AddResult(EnvId(seq, 0), True)
    registry._sync_gym([result.env_id])
    return result
