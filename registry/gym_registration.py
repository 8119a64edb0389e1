"""Gymnasium registration of the active registry without the quadratic ``gym.register``
loop (each ``gym.register`` scans the whole registry; 20k ids take ~40 s).

``EnvSpec`` objects are built directly — for store entries without running the
dataclass ``__init__``/``__post_init__`` (which re-parses every id with a regex): the
namespace, name and version are known already — and inserted into Gymnasium's registry
dict in one ``dict.update``. With 100k store entries this takes a fraction of a second
(``spade bench registry``). Stores larger than ``gym_lazy.EAGER_MAX`` are registered
lazily instead (:mod:`.gym_lazy`): an id is read from the store when first looked up.

Registered: the seed suite and every *active* or *deprecated* store entry (quarantined
ones are not). A missing store registers only the seeds; an unusable one (corrupt,
foreign, newer schema, unreadable) warns once and registers only the seeds: the import
of ``spade_envs`` never fails because of the store.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings
from collections.abc import Iterable

from gymnasium.envs.registration import EnvSpec

from ..errors import SpadeError
from .catalog import EnvRecord, seed_records
from .gym_lazy import EAGER_MAX, active, install
from .ids import NAMESPACE, EnvId

ENTRY_POINT = "spade_envs.gym_env:SpadeEnv"
#: Safety net: every episode ends after this many steps even if the program never does.
DEFAULT_MAX_EPISODE_STEPS = 100


def gym_registry() -> dict:
    """Gymnasium's registry as it is now (the lazy one once installed, see :mod:`.gym_lazy`)."""
    import gymnasium.envs.registration as registration

    return registration.registry


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
            gym_registry()[spec.id] = spec
            n += 1
    return n


def register_rows(rows: Iterable[tuple[int, int, int | None]]) -> int:
    """Register store entries given as (seq, version, max_episode_steps)."""
    enabled = gc.isenabled()
    gc.disable()  # 100k small objects would trigger many useless collections
    try:
        specs = {s.id: s for s in (_fast_spec(seq, version, steps) for seq, version, steps in rows)}
        gym_registry().update(specs)
    finally:
        if enabled:
            gc.enable()
    return len(specs)


#: why the store was left out at the last registration (None when it was used or absent)
STORE_PROBLEM: str | None = None


def _report(message: str) -> None:
    """One line on stderr through ``warnings`` (no source line); silent inside the ``spade``
    CLI, which reports an unusable store itself as a one-line error where it matters."""
    global STORE_PROBLEM
    STORE_PROBLEM = message
    if os.path.basename(sys.argv[0] if sys.argv else "") == "spade":
        return
    warnings.warn_explicit(message, RuntimeWarning, filename="spade_envs", lineno=0, module="spade_envs")


def register_variant_rows(rows: Iterable[tuple[int, int, str | None]]) -> int:
    """Give registered store variants, as (seq, version, params JSON), their fixed kwargs
    in ``spec.kwargs`` (so ``gym.make`` of a variant needs none)."""
    n = 0
    for seq, version, params in rows:
        spec = gym_registry().get(f"{NAMESPACE}/Env-{seq:05d}-v{version}")
        if spec is not None and params:
            spec.kwargs = {"env_id": f"{NAMESPACE}/Env-{seq:05d}", "version": version, **json.loads(params)}
            n += 1
    return n


def register_store() -> int:
    """Register the loadable entries of the local store (0 when there is none)."""
    from . import shared_store

    global STORE_PROBLEM
    STORE_PROBLEM = None
    try:
        reg = shared_store()
        if reg is None:
            return 0
        if reg.size_hint() > EAGER_MAX:
            install(_load_seq)
            return 0
        n = register_rows(reg.registration_rows()) + register_rows(reg.alias_rows())
        register_variant_rows(reg.variant_rows())
        return n
    except (SpadeError, OSError) as exc:
        _report(f"spade: the local registry store is not used ({exc}); only the seed suite is registered")
        return 0
    except Exception as exc:  # sqlite3 errors on a damaged file: never break `import spade_envs`
        _report(f"spade: the local registry store is unreadable ({type(exc).__name__}: {exc}); "
                "only the seed suite is registered")
        return 0


def _load_seq(seq: int) -> list[EnvSpec]:
    """Specs of every loadable version (and free alias) of ``seq``: the lazy registry's loader."""
    from . import shared_store

    try:
        reg = shared_store()
        if reg is None:
            return []
        specs = [_fast_spec(*row) for row in reg.registration_rows_of(seq)]
        params = {f"{NAMESPACE}/Env-{s:05d}-v{v}": p for s, v, p in reg.variant_rows(seq)}
        for spec in specs:
            if params.get(spec.id):
                spec.kwargs = {**spec.kwargs, **json.loads(params[spec.id])}
        return specs
    except Exception:  # noqa: BLE001 - a lookup must never raise out of gym.make's dict access
        return []


def unregister(env_ids: Iterable[EnvId]) -> None:
    registry = gym_registry()
    for eid in env_ids:
        registry.pop(str(eid), None)


def sync(reg: object, env_ids: list[EnvId]) -> None:
    """After a write to the default store: re-register exactly these ids (lazily: forget
    their sequence numbers, the next lookup reads them again)."""
    lazy = active()
    if lazy is not None:
        lazy.forget({e.seq for e in env_ids})
        return
    unregister(env_ids)
    seqs = {e.seq for e in env_ids}
    register_rows(reg.registration_rows_of(*seqs))  # type: ignore[attr-defined]
    register_variant_rows(reg.variant_rows(*seqs))  # type: ignore[attr-defined]


def refresh() -> int:
    """Bring this process's Gymnasium registry in step with the store as it is now:
    entries added (by this or another process) since the import are registered, removed
    or quarantined ones unregistered. Returns the number of store ids registered."""
    from . import forget_connections
    from .migrations import FIRST_STORE_SEQ

    lazy = active()
    if lazy is not None:
        lazy.forget()
    registry = gym_registry()
    stale = [k for k, s in registry.items()
             if getattr(s, "namespace", None) == NAMESPACE and s.entry_point == ENTRY_POINT
             and (s.kwargs or {}).get("env_id") and _seq_of(s) >= FIRST_STORE_SEQ]
    for key in stale:
        registry.pop(key, None)
    forget_connections()
    return register_store()


def _seq_of(spec: EnvSpec) -> int:
    try:
        return int(spec.name.split("-", 1)[1])
    except (AttributeError, IndexError, ValueError):
        return -1


#: seconds the last :func:`register_all` spent on the store (for ``spade bench registry``)
LAST_REGISTRATION_S = 0.0


def register_all() -> int:
    """Register the seed suite and the local store under ``spade/``; returns the count."""
    import time

    global LAST_REGISTRATION_S
    n = register_records(seed_records())
    t0 = time.perf_counter()
    n += register_store()
    LAST_REGISTRATION_S = time.perf_counter() - t0
    return n
