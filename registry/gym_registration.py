"""Gymnasium registration of the active registry without the quadratic ``gym.register``
loop: ``EnvSpec`` objects are built directly and inserted into Gymnasium's registry dict.
"""

from __future__ import annotations

from gymnasium.envs.registration import EnvSpec, registry as gym_registry

from .catalog import EnvRecord, seed_records

ENTRY_POINT = "spade_envs.gym_env:SpadeEnv"
#: Safety net: every episode ends after this many steps even if the program never does.
DEFAULT_MAX_EPISODE_STEPS = 100


def spec_for(record: EnvRecord) -> EnvSpec:
    max_steps = record.metadata.get("max_episode_steps", DEFAULT_MAX_EPISODE_STEPS)
    return EnvSpec(
        id=str(record.env_id),
        entry_point=ENTRY_POINT,
        max_episode_steps=int(max_steps) if max_steps else None,
        kwargs={"env_id": record.env_id.base, "version": record.env_id.version},
    )


def register_records(records) -> int:
    n = 0
    for rec in records:
        if rec.status == "active" or rec.status == "deprecated":
            spec = spec_for(rec)
            gym_registry[spec.id] = spec
            n += 1
    return n


def register_all() -> int:
    """Register the seed suite (and the local store) under ``spade/``; returns the count."""
    return register_records(seed_records())
