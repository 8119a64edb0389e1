"""Registry: ids, the active catalog (seed suite + local store), Gymnasium registration,
the SQLite store (:mod:`.store`) and Hugging Face dataset export/push/pull."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalog import EnvRecord
    from .ids import EnvId
    from .store import Registry

_OPEN: dict[tuple[str, int], "Registry"] = {}


def forget_connections() -> None:
    """Forget this process's store connections (``refresh()`` reopens: SPADE_HOME may
    have changed, or the file been replaced)."""
    for reg in _OPEN.values():
        try:
            reg.close()
        except Exception:  # noqa: BLE001 - a dead connection is dropped all the same
            pass
    _OPEN.clear()


def shared_store() -> "Registry | None":
    """This process's connection to ``$SPADE_HOME/registry.sqlite3`` (None when there is
    no store file). Never creates one. Raises :class:`~spade_envs.errors.RegistryError`
    for an unusable file."""
    from .store import Registry, default_path

    path = default_path()
    key = (str(path), os.getpid())
    reg = _OPEN.get(key)
    if reg is not None:
        return reg
    if not path.exists():
        return None
    _OPEN[key] = reg = Registry.open(path, create=False)
    return reg


def list_envs(*, skill: str | None = None, generation: int | None = None, status: str | None = None,
              tags: "list[str] | None" = None) -> "list[EnvRecord]":
    """Every environment of the active registry (the seed suite, then the store in id
    order), filtered; see :func:`spade_envs.list_envs`."""
    from ..errors import RegistryError
    from .catalog import seed_records
    from .rows import STATUSES

    if status is not None and status not in STATUSES:
        raise RegistryError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
    if generation is not None and (not isinstance(generation, int) or generation < 0):
        raise RegistryError(f"generation must be an integer >= 0, got {generation!r}")
    reg = shared_store()
    if reg is not None:
        return reg.list(skill=skill, generation=generation, status=status, tags=tags, seeds=True)
    want = set(tags or ())
    return [r for r in seed_records() if generation in (None, 0) and skill in (None, r.skill)
            and status in (None, r.status) and (not want or want & set(r.metadata.get("tags") or []))]


def store_lookup(eid: "EnvId") -> "EnvRecord | None":
    """Look ``eid`` up in the local store under ``SPADE_HOME`` (None when absent).

    A quarantined entry raises :class:`~spade_envs.errors.QuarantinedError` naming
    the reason. An id that a pull renumbered resolves to the entry's new id when nothing
    else has it, with a one-time :class:`~.sharing.RenumberedNotice` (also when the id now
    names the published entry that displaced it). Store records are untrusted (they run
    in the sandbox)."""
    from ..errors import QuarantinedError, UnknownEnvironmentError
    from .sharing import notify

    reg = shared_store()
    if reg is None:
        return None
    target = reg.alias_target(eid)
    try:
        rec = reg.get(eid)
    except QuarantinedError:
        raise
    except UnknownEnvironmentError:
        if target is None:
            return None
        notify(eid, target, shadowed=False)
        return reg.get(target)
    if target is not None:
        notify(eid, target, shadowed=True)
    return rec


def _resolve_for_envs(env_id: "str | EnvId", version: int | None = None) -> "EnvRecord":
    """:func:`.catalog.resolve`, as environment code reaches it (:mod:`spade_envs.records`)."""
    from .catalog import resolve

    return resolve(env_id, version)


def _install() -> None:
    from ..records import install_resolver

    install_resolver(_resolve_for_envs)


_install()
