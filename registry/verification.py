"""Verified and unverified entries: which registry entries have a replayed win.

A program without ``solution()`` is accepted (SPADE requires only ``reset`` and ``step``)
but nothing replayed a win, so its solvability is unverified; so is a program whose
``solution()`` no reader replays to a win (SPADE never replays it). Acceptance says so with
the ``verified`` flag of its report and of its ``solution_replay`` verdict (entries stored
before the flag: detail :data:`STORED_NO_REFERENCE`) and the registry CLI stores
``metadata["verified"] = False``; no schema column is involved. Self-play and evals call
:func:`verified_only` to skip unverified entries unless asked to include them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import Stage

#: the solution_replay detail that acceptance (``spade_envs.designer.acceptance.NO_REFERENCE``)
#: stores for a program without solution(); entries stored before the flag are read by it
STORED_NO_REFERENCE = "no reference solution: solvability unverified"


def is_verified(record: Any) -> bool:
    """False when the entry's metadata or stored acceptance verdicts mark it unverified."""
    meta = getattr(record, "metadata", None)
    meta = meta if isinstance(meta, dict) else (record if isinstance(record, dict) else {})
    if meta.get("verified") is False:
        return False
    for stage in meta.get("acceptance") or []:
        if isinstance(stage, dict) and stage.get("name") == Stage.SOLUTION_REPLAY and (
                stage.get("verified") is False or stage.get("detail") == STORED_NO_REFERENCE):  # the flag; the text for old entries
            return False
    return True


def verified_only(records: Iterable[Any], include_unverified: bool = False) -> list[Any]:
    """``records`` without the unverified ones (all of them when ``include_unverified``)."""
    records = list(records)
    return records if include_unverified else [r for r in records if is_verified(r)]
