"""The active registry: the installed seed suite (generation 0) plus the local store.

``resolve(id)`` is how the Gymnasium wrapper, agents and evals find an environment's
source. Seeds ship inside the package and are therefore trusted (run in-process);
everything else is untrusted and runs in the sandbox.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ..errors import UnknownEnvironmentError
from ..program import inspect_program
from .ids import EnvId, parse_env_id


@dataclass(frozen=True)
class EnvRecord:
    """One (environment, version) of the active registry."""

    env_id: EnvId  # always with a version
    source: str
    class_name: str
    trusted: bool = False
    generation: int = 0
    status: str = "active"
    metadata: dict[str, Any] = field(default_factory=dict)
    #: a variant's parent program, as the full id ``spade/Env-NNNNN-vK`` (None: not a variant)
    parent: str | None = None
    #: a variant's fixed constructor kwargs (``{}`` for ordinary entries)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def is_variant(self) -> bool:
        return self.parent is not None

    @property
    def skill(self) -> str | None:
        return self.metadata.get("skill")


@functools.lru_cache(maxsize=1)
def seed_records() -> tuple[EnvRecord, ...]:
    """The seed suite: ``spade_envs/seeds/env_NNNNN_<slug>.py``, version 0, generation 0."""
    out = []
    folder = resources.files("spade_envs.seeds")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        name = entry.name
        if not (name.startswith("env_") and name.endswith(".py")):
            continue
        seq = int(name.split("_")[1])
        source = entry.read_text(encoding="utf-8")
        info = inspect_program(source, filename=name)
        out.append(
            EnvRecord(
                env_id=EnvId(seq, 0),
                source=source,
                class_name=info.class_name,
                trusted=True,
                generation=0,
                metadata={**info.metadata, "class_name": info.class_name, "file": name},
            )
        )
    return tuple(out)


def resolve(env_id: str | EnvId, version: int | None = None) -> EnvRecord:
    """The record for ``env_id`` (latest version unless the id or ``version`` names one)."""
    eid = parse_env_id(env_id) if isinstance(env_id, str) else env_id
    if version is not None:
        eid = eid.with_version(version)
    for rec in seed_records():
        if rec.env_id.seq == eid.seq and (eid.version is None or rec.env_id.version == eid.version):
            return rec
    from . import store_lookup  # the local store (registry issue) plugs in here

    rec = store_lookup(eid)
    if rec is None:
        raise UnknownEnvironmentError(
            f"no environment {eid} in the active registry; `spade registry list` shows what exists"
        )
    return rec
