"""Gymnasium registration of the active registry without the quadratic ``gym.register``
loop (each ``gym.register`` scans the whole registry; 20k ids take ~40 s).

``EnvSpec`` objects are built directly — for store entries without running the
dataclass ``__init__``/``__post_init__`` (which re-parses every id with a regex): the
namespace, name and version are known already — and inserted into Gymnasium's registry
dict in one ``dict.update``. With 100k store entries this takes a fraction of a second
(``spade bench registry``).

Registered: the seed suite and every *active* or *deprecated* store entry (quarantined
ones are not). A missing store registers only the seeds; an unusable one (corrupt,
foreign, newer schema, unreadable) warns once and registers only the seeds: the import
of ``spade_envs`` never fails because of the store.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterable

from gymnasium.envs.registration import EnvSpec, registry as gym_registry

from ..errors import SpadeError
from .catalog import EnvRecord, seed_records
from .ids import NAMESPACE, EnvId

ENTRY_POINT = "spade_envs.gym_env:SpadeEnv"
#: Safety net: every episode ends after this many steps even if the program never does.
DEFAULT_MAX_EPISODE_STEPS = 100


def spec_for(record: EnvRecord) -> EnvSpec:
    max_steps = record.metadata.get("max_episode_steps", DEFAULT_MAX_EPISODE_STEPS)
    return EnvSpec(
        id=str(record.env_id),
        entry_point=ENTRY_POINT,
        max_episode_steps=int(max_steps) if max_steps else None,
        # a variant's fixed kwargs ride in the spec: gym.make(variant) needs none
        kwargs={"env_id": record.env_id.base, "version": record.env_id.version, **record.params},
    )


def _fast_spec(seq: int, version: int, max_steps: int | None) -> EnvSpec:
    """An ``EnvSpec`` equal to ``spec_for`` of that entry, built without ``__init__``."""
    name = f"Env-{seq:05d}"
    spec = object.__new__(EnvSpec)
    spec.__dict__.update(
        id=f"{NAMESPACE}/{name}-v{version}", entry_point=ENTRY_POINT, reward_threshold=None,
        nondeterministic=False, max_episode_steps=max_steps or DEFAULT_MAX_EPISODE_STEPS, order_enforce=True,
        disable_env_checker=False, kwargs={"env_id": f"{NAMESPACE}/{name}", "version": version},
        namespace=NAMESPACE, name=name, version=version, additional_wrappers=(), vector_entry_point=None,
    )
    return spec


def register_records(records: Iterable[EnvRecord]) -> int:
    n = 0
    for rec in records:
        if rec.status == "active" or rec.status == "deprecated":
            spec = spec_for(rec)
            gym_registry[spec.id] = spec
            n += 1
    return n


def register_rows(rows: Iterable[tuple[int, int, int | None]]) -> int:
    """Register store entries given as (seq, version, max_episode_steps)."""
    enabled = gc.isenabled()
    gc.disable()  # 100k small objects would trigger many useless collections
    try:
        specs = {s.id: s for s in (_fast_spec(seq, version, steps) for seq, version, steps in rows)}
        gym_registry.update(specs)
    finally:
        if enabled:
            gc.enable()
    return len(specs)


def register_variant_rows(rows: Iterable[tuple[int, int, str | None]]) -> int:
    """Give registered store variants, as (seq, version, params JSON), their fixed kwargs
    in ``spec.kwargs`` (so ``gym.make`` of a variant needs none)."""
    import json

    n = 0
    for seq, version, params in rows:
        spec = gym_registry.get(f"{NAMESPACE}/Env-{seq:05d}-v{version}")
        if spec is not None and params:
            spec.kwargs = {"env_id": f"{NAMESPACE}/Env-{seq:05d}", "version": version, **json.loads(params)}
            n += 1
    return n


def register_store() -> int:
    """Register the loadable entries of the local store (0 when there is none)."""
    from . import shared_store

    try:
        reg = shared_store()
        if reg is None:
            return 0
        n = register_rows(reg.registration_rows())
        register_variant_rows(reg.variant_rows())
        return n
    except (SpadeError, OSError) as exc:
        warnings.warn(f"spade: the local registry store is not used ({exc}); only the seed suite is registered",
                      RuntimeWarning, stacklevel=2)
        return 0
    except Exception as exc:  # sqlite3 errors on a damaged file: never break `import spade_envs`
        warnings.warn(f"spade: the local registry store is unreadable ({type(exc).__name__}: {exc}); "
                      "only the seed suite is registered", RuntimeWarning, stacklevel=2)
        return 0


def unregister(env_ids: Iterable[EnvId]) -> None:
    for eid in env_ids:
        gym_registry.pop(str(eid), None)


def register_all() -> int:
    """Register the seed suite and the local store under ``spade/``; returns the count."""
    return register_records(seed_records()) + register_store()
