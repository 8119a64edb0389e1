"""Registry: ids, the active catalog (seed suite + local store), Gymnasium registration."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalog import EnvRecord
    from .ids import EnvId


def store_lookup(eid: "EnvId") -> "EnvRecord | None":
    """Look ``eid`` up in the local store under ``SPADE_HOME`` (None when absent)."""
    return None
