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


def store_lookup(eid: "EnvId") -> "EnvRecord | None":
    """Look ``eid`` up in the local store under ``SPADE_HOME`` (None when absent).

    A quarantined entry raises :class:`~spade_envs.errors.UnknownEnvironmentError` naming
    the reason. An id that a pull renumbered resolves to the entry's new id when nothing
    else has it, with a one-time :class:`~.sharing.RenumberedNotice` (also when the id now
    names the published entry that displaced it). Store records are untrusted (they run
    in the sandbox)."""
    from ..errors import UnknownEnvironmentError
    from .sharing import notify

    reg = shared_store()
    if reg is None:
        return None
    target = reg.alias_target(eid)
    try:
        rec = reg.get(eid)
    except UnknownEnvironmentError as exc:
        if "quarantined" in str(exc):
            raise
        if target is None:
            return None
        notify(eid, target, shadowed=False)
        return reg.get(target)
    if target is not None:
        notify(eid, target, shadowed=True)
    return rec
