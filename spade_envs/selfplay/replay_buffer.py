"""Replay buffer of environments, prioritized by recent regret, persisted as JSON.

Each entry is one environment the agent may play again: a registry id (``env_id``) or,
for an accepted candidate not yet registered, its ``source``. Its priority is the mean
of its last ``recent`` regrets (unscored entries count as ``min_priority``), floored at
``min_priority``; sampling draws without replacement with probability proportional to
``priority ** (1 / temperature)`` (``temperature=0``: uniform). The caller's
``random.Random`` is the only randomness, so sampling is reproducible from a checkpoint.
Held-out ids (:func:`spade_envs.selfplay.splits.is_heldout`) are never admitted.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .splits import is_heldout

if TYPE_CHECKING:
    from .config import SelfPlayConfig

PROGRAM_KEY_PREFIX = "src:"  #: the key of an accepted program before registration: see :func:`program_key`


def program_key(source: str) -> str:
    """The replay key of an accepted program not registered yet: ``"src:"`` and the first
    16 hex digits of its source's SHA-256 (the one place this key is derived)."""
    return PROGRAM_KEY_PREFIX + hashlib.sha256(source.encode()).hexdigest()[:16]


def is_program_key(key: str) -> bool:
    """True for a :func:`program_key` (an environment with no registry id yet)."""
    return key.startswith(PROGRAM_KEY_PREFIX)


@dataclass
class ReplayEntry:
    key: str  #: stable key: the env id, or :func:`program_key` of its source before registration
    env_id: str | None = None
    source: str | None = None
    skill: str | None = None
    regrets: list[float] = field(default_factory=list)
    plays: int = 0
    added_round: int = 0
    hint_usable: bool = True  #: False: the environment has no usable hint, its regret is 0
    kwargs: dict = field(default_factory=dict)  #: environment parameters it is played with (a seed level)


class ReplayBuffer:
    """Environments to replay; see the module docstring."""

    def __init__(self, capacity: int = 256, recent: int = 4, temperature: float = 0.5,
                 min_priority: float = 0.05) -> None:
        self.capacity, self.recent = int(capacity), int(recent)
        self.temperature, self.min_priority = float(temperature), float(min_priority)
        self.entries: dict[str, ReplayEntry] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def add(self, entry: ReplayEntry, protected: set[str] | None = None) -> bool:
        """Admit ``entry`` (False for a held-out id). When full, evicts the lowest priority,
        the OLDEST among equals, never ``entry`` itself nor a ``protected`` key (candidates
        whose designer group still waits for plays); False when everything is protected."""
        if entry.env_id is not None and is_heldout(entry.env_id):
            return False
        if entry.key in self.entries:
            return True
        if len(self.entries) >= self.capacity:
            keep = protected or set()
            victims = [e for e in self.entries.values() if e.key not in keep]
            if not victims:
                return False
            worst = min(victims, key=lambda e: (self.priority(e), e.added_round, e.key))
            del self.entries[worst.key]
        self.entries[entry.key] = entry
        return True

    def rekey(self, old: str, env_id: str) -> None:
        """A candidate got its registry id: replay it by id from now on (dropped if held out)."""
        entry = self.entries.pop(old, None)
        if entry is None or is_heldout(env_id):
            return
        entry.key, entry.env_id, entry.source = env_id, env_id, None
        self.entries[env_id] = entry

    def record(self, key: str, regret: float) -> None:
        entry = self.entries.get(key)
        if entry is None:
            return
        entry.regrets = (entry.regrets + [float(regret)])[-self.recent:]
        entry.plays += 1

    def priority(self, entry: ReplayEntry) -> float:
        if not entry.regrets:
            return self.min_priority
        return max(self.min_priority, sum(entry.regrets) / len(entry.regrets))

    def sample(self, k: int, rng: random.Random, exclude: set[str] | None = None) -> list[ReplayEntry]:
        """Up to ``k`` distinct entries, weighted by priority (see the module docstring)."""
        pool = sorted((e for e in self.entries.values() if e.key not in (exclude or set())), key=lambda e: e.key)
        chosen: list[ReplayEntry] = []
        while pool and len(chosen) < k:
            if self.temperature <= 0:
                weights = [1.0] * len(pool)
            else:
                weights = [self.priority(e) ** (1.0 / self.temperature) for e in pool]
            pick = rng.choices(range(len(pool)), weights=weights, k=1)[0]
            chosen.append(pool.pop(pick))
        return chosen

    def mean_priority(self) -> float:
        return sum(self.priority(e) for e in self.entries.values()) / len(self.entries) if self.entries else 0.0

    # -- persistence ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "recent": self.recent, "temperature": self.temperature,
                "min_priority": self.min_priority, "entries": [asdict(e) for e in self.entries.values()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ReplayBuffer":
        buf = cls(data["capacity"], data["recent"], data["temperature"], data["min_priority"])
        for e in data.get("entries", []):
            buf.entries[e["key"]] = ReplayEntry(**e)
        return buf

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "ReplayBuffer":
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def train_seed_entries(config: "SelfPlayConfig") -> list[ReplayEntry]:
    """The replay entries the seed suite gives a run: the train split, without the games
    unless ``seed_games``, of ``seed_skills`` only when set, at ``seed_levels``."""
    from ..registry.catalog import seed_records
    from .levels import levels_of

    out = []
    for rec in seed_records():
        eid = str(rec.env_id)
        if is_heldout(eid) or (not config.seed_games and "multi-agent" in (rec.skill or "")):
            continue
        if config.seed_skills is not None and rec.skill not in config.seed_skills:
            continue
        levels = levels_of(rec.source)
        for kw in {"default": [{}], "easiest": levels[:1], "ladder": levels}[config.seed_levels]:
            key = eid if not kw else f"{eid}@" + ",".join(f"{k}={v}" for k, v in sorted(kw.items()))
            out.append(ReplayEntry(key=key, env_id=eid, skill=rec.skill, kwargs=dict(kw)))
    return out
