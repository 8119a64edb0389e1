"""Gymnasium registration of the active registry without the quadratic ``gym.register``
loop (each ``gym.register`` scans the whole registry; 20k ids take ~40 s).

``EnvSpec`` objects are built directly — for store entries without running the
dataclass ``__init__``/``__post_init__`` (which re-parses every id with a regex): the
namespace, name and version are known already — and inserted into Gymnasium's registry
dict in one ``dict.update``. With 100k store entries this takes a fraction of a second
(``spade bench registry``). Stores larger than ``gym_lazy.EAGER_MAX`` are registered
lazily instead (:mod:`.gym_lazy`): an id is read from the store when first looked up.

Registered: the seed suite and every *active* or *deprecated* store entry (quarantined
ones are not). A variant's fixed params ride in its spec as ``env_kwargs`` only (they
reach the program's constructor, never ``SpadeEnv``'s own keywords); a stored variant
whose params are not a JSON object or name one of ``SpadeEnv``'s keywords
(:func:`spade_envs.trust.reserved_keywords`) is not registered (a warning says why). A missing store registers only the seeds; an unusable one (corrupt,
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
from typing import Any

from gymnasium.envs.registration import EnvSpec

from ..errors import SpadeError
from .catalog import EnvRecord, seed_files, seed_records
from .gym_lazy import EAGER_MAX, active, install
from .ids import NAMESPACE, EnvId, env_name, format_env_id, seq_of_name

ENTRY_POINT = "spade_envs.gym_env:SpadeEnv"
#: Safety net: every episode ends after this many steps even if the program never does.
DEFAULT_MAX_EPISODE_STEPS = 100


def gym_registry() -> dict:
    """Gymnasium's registry as it is now (the lazy one once installed, see :mod:`.gym_lazy`)."""
    import gymnasium.envs.registration as registration

    return registration.registry


def variant_kwargs(base: str, version: int, params: Any) -> dict[str, Any] | None:
    """``spec.kwargs`` of an entry: its id and version, plus a variant's fixed params as
    ``env_kwargs`` (the program's constructor only). None when ``params`` (a dict or its
    JSON) is unusable: not an object, or naming one of ``SpadeEnv``'s own keywords."""
    kwargs: dict[str, Any] = {"env_id": base, "version": version}
    if not params:
        return kwargs
    from ..trust import check_params  # only for variants: `import spade_envs` stays light

    try:
        found = json.loads(params) if isinstance(params, str) else params
        kwargs["env_kwargs"] = check_params(found, f"{base}-v{version}: stored variant params")
    except (ValueError, SpadeError) as exc:  # InvalidParametersError is both
        _refused(str(exc))
        return None
    return kwargs


def _refused(message: str) -> None:
    warnings.warn_explicit(f"spade: not registered: {message}", RuntimeWarning, filename="spade_envs", lineno=0,
                           module="spade_envs")


def spec_for(record: EnvRecord) -> EnvSpec | None:
    """The ``EnvSpec`` of a record (None for a variant whose stored params are unusable)."""
    max_steps = record.metadata.get("max_episode_steps", DEFAULT_MAX_EPISODE_STEPS)
    kwargs = variant_kwargs(record.env_id.base, record.env_id.version or 0, record.params)
    if kwargs is None:
        return None
    return EnvSpec(
        id=str(record.env_id),
        entry_point=ENTRY_POINT,
        max_episode_steps=max_steps if isinstance(max_steps, int) and max_steps > 0 else DEFAULT_MAX_EPISODE_STEPS,
        # a variant's fixed kwargs ride in the spec (for the program): gym.make(variant) needs none
        kwargs=kwargs,
    )


def _fast_spec(seq: int, version: int, max_steps: int | None) -> EnvSpec:
    """An ``EnvSpec`` equal to ``spec_for`` of that entry, built without ``__init__``."""
    name = env_name(seq)
    spec = object.__new__(EnvSpec)
    spec.__dict__.update(
        id=format_env_id(seq, version), entry_point=ENTRY_POINT, reward_threshold=None,
        nondeterministic=False, max_episode_steps=max_steps or DEFAULT_MAX_EPISODE_STEPS, order_enforce=True,
        disable_env_checker=False, kwargs={"env_id": format_env_id(seq), "version": version},
        namespace=NAMESPACE, name=name, version=version, additional_wrappers=(), vector_entry_point=None,
    )
    return spec


def register_seeds() -> int:
    """Register the seed suite without parsing it: a seed's spec needs only its sequence
    number and, when its METADATA sets one, ``max_episode_steps`` (only then is it parsed)."""
    rows = []
    for seq, _, source in seed_files():
        steps = None
        if "max_episode_steps" in source:
            steps = next(r for r in seed_records() if r.env_id.seq == seq).metadata.get("max_episode_steps")
        rows.append((seq, 0, steps))
    return register_rows(rows)


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
    in ``spec.kwargs["env_kwargs"]`` (so ``gym.make`` of a variant needs none); a variant
    whose params are unusable is unregistered (see :func:`variant_kwargs`)."""
    n = 0
    for seq, version, params in rows:
        key = format_env_id(seq, version)
        spec = gym_registry().get(key)
        if spec is not None and params:
            kwargs = variant_kwargs(format_env_id(seq), version, params)
            if kwargs is None:
                gym_registry().pop(key, None)
                continue
            spec.kwargs = kwargs
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
        params = {format_env_id(s, v): p for s, v, p in reg.variant_rows(seq)}
        out = []
        for spec in specs:
            if params.get(spec.id):
                kwargs = variant_kwargs(spec.kwargs["env_id"], spec.version, params[spec.id])
                if kwargs is None:
                    continue
                spec.kwargs = kwargs
            out.append(spec)
        return out
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
    if len(seqs) > 1000:  # a bulk write (a pull): one scan of the covering index beats many lookups
        rows = [r for r in reg.registration_rows() + reg.alias_rows() if r[0] in seqs]  # type: ignore[attr-defined]
    else:
        rows = reg.registration_rows_of(*seqs)  # type: ignore[attr-defined]
    register_rows(rows)
    register_variant_rows(reg.variant_rows(*seqs))  # type: ignore[attr-defined]


def refresh() -> int:
    """Bring this process's Gymnasium registry in step with the store as it is now:
    entries added (by this or another process) since the import are registered, removed
    or quarantined ones unregistered. Returns the number of store ids registered."""
    from . import forget_connections

    lazy = active()
    if lazy is not None:
        lazy.forget()
    registry = gym_registry()
    for key in store_registrations():
        registry.pop(key, None)
    forget_connections()
    return register_store()


def store_registrations() -> list[str]:
    """The Gymnasium ids this process registered from a store (not the packaged suite's)."""
    from .migrations import FIRST_STORE_SEQ

    return [k for k, s in gym_registry().items()
            if getattr(s, "namespace", None) == NAMESPACE and s.entry_point == ENTRY_POINT
            and (s.kwargs or {}).get("env_id") and _seq_of(s) >= FIRST_STORE_SEQ]


def _seq_of(spec: EnvSpec) -> int:
    seq = seq_of_name(getattr(spec, "name", None))
    return -1 if seq is None else seq


#: seconds the last :func:`register_all` spent on the store (for ``spade bench registry``)
LAST_REGISTRATION_S = 0.0


def register_all() -> int:
    """Register the seed suite and the local store under ``spade/``; returns the count."""
    import time

    global LAST_REGISTRATION_S
    n = register_seeds()
    t0 = time.perf_counter()
    n += register_store()
    LAST_REGISTRATION_S = time.perf_counter() - t0
    return n
