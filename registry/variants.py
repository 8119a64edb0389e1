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
- Params are validated against the parent's ``PARAMETERS`` and stored as the *full*
  point (every property, defaults filled in, integral floats of integer properties as
  ints), so ``{"size": 5}`` and ``{"size": 5, "depth": <default>}`` are one variant.
  Identical (parent, params) deduplicate; a point equal to the parent's defaults is the
  parent itself (``new=False`` with the parent's id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import RegistryError, UnknownEnvironmentError
from .catalog import EnvRecord, seed_records
from .ids import EnvId, parse_env_id
from .migrations import FIRST_STORE_SEQ


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
