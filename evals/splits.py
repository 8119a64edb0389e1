"""Named splits of the registry, by a stable hash of the environment id.

A split never depends on the registry's contents or order, so an environment stays in
its split forever and across machines: ``heldout`` holds the ids whose SHA-256 bucket
(of the base id, version dropped, so every version of an env stays on one side) falls in
the first :data:`HELDOUT_FRACTION` of the range; ``train`` the rest. The self-play
trainer calls :func:`is_heldout` and never samples those ids.
"""

from __future__ import annotations

import hashlib

from spade_envs.registry.ids import EnvId, parse_env_id

HELDOUT_FRACTION = 0.2
SPLITS = ("all", "train", "heldout")
_BUCKETS = 10_000
_SALT = "spade-envs/split/v1:"


def split_bucket(env_id: str | EnvId) -> int:
    """The id's bucket in ``[0, 10000)``."""
    eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
    digest = hashlib.sha256((_SALT + eid.base).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % _BUCKETS


def is_heldout(env_id: str | EnvId) -> bool:
    """True when ``env_id`` (any version) belongs to the held-out evaluation split."""
    return split_bucket(env_id) < int(HELDOUT_FRACTION * _BUCKETS)


def split_of(env_id: str | EnvId) -> str:
    """``"heldout"`` or ``"train"``."""
    return "heldout" if is_heldout(env_id) else "train"


def in_split(env_id: str | EnvId, split: str | None) -> bool:
    """Whether ``env_id`` belongs to the named split (``all``/None: everything)."""
    if split in (None, "all"):
        return True
    if split not in SPLITS:
        from spade_envs.errors import SpadeError

        raise SpadeError(f"unknown split '{split}'; choose one of: {', '.join(SPLITS)}")
    return split_of(env_id) == split
