"""The held-out rule, in ONE place for the trainer: training never samples held-out ids.

Delegates to :func:`spade_envs.evals.splits.is_heldout` (a stable hash of the base id);
if the evals package is unavailable in a build, the same rule is applied locally so the
split never silently changes meaning.
"""

from __future__ import annotations

import hashlib


def is_heldout(env_id: str) -> bool:
    """True when ``env_id`` belongs to the held-out evaluation split."""
    try:
        from spade_envs.evals.splits import is_heldout as _evals_is_heldout
    except ImportError:  # pragma: no cover - evals always ships with the package
        from spade_envs.registry.ids import parse_env_id

        digest = hashlib.sha256(("spade-envs/split/v1:" + parse_env_id(env_id).base).encode()).digest()
        return int.from_bytes(digest[:8], "big") % 10_000 < 2_000
    return _evals_is_heldout(env_id)
