"""The designer's memory: past environments, their scores, and what a prompt is shown.

The archive IS the registry store (DESIGN.md section 7): every environment's skill, win
rates with and without the hint, regret and status are columns there, written by
:mod:`.scoring` through ``Registry.update_scores``. This module only reads it.

Retrieval for a prompt of skill ``S`` (:meth:`DesignerMemory.retrieve`):

- **positives**: active entries of skill ``S`` whose plain win rate lies in
  ``[BAND_LOW, BAND_HIGH]`` = [0.15, 0.85], ranked by regret (highest first), then by
  closeness of the win rate to 0.5; at most ``k_positive``;
- **negatives**: scored active entries outside the band — *too easy* (plain win rate
  > 0.85) or *too hard* (< 0.15) — of skill ``S`` first, then of other skills; each
  with the reason; at most ``k_negative`` (alternating easy and hard when both exist);
- **format example**: when there is no positive, one unscored entry of the same skill
  or mode (typically a hand-written seed) so the model still sees a valid program;
- **instruction**: make something different from every example and from the names of
  the skill's existing environments.

The ids of every example shown become the new environment's ``parent_ids``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .novelty import NoveltyIndex

BAND_LOW, BAND_HIGH = 0.15, 0.85
#: seed-suite skills that stand for a mode rather than one of the six skills
MODE_SKILLS = {"game": "multi-step game", "tool": "tool use"}


@dataclass(frozen=True)
class MemoryEntry:
    """One archived environment as the designer sees it."""

    env_id: str
    source: str
    skill: str | None = None
    mode: str | None = None
    name: str = ""
    description: str = ""
    status: str = "active"
    generation: int = 0
    regret: float | None = None
    win_rate_hint: float | None = None
    win_rate_plain: float | None = None

    @property
    def scored(self) -> bool:
        return self.win_rate_plain is not None

    @property
    def band(self) -> str:
        """``positive``, ``too_easy``, ``too_hard`` or ``unscored``."""
        if self.win_rate_plain is None:
            return "unscored"
        if self.win_rate_plain > BAND_HIGH:
            return "too_easy"
        if self.win_rate_plain < BAND_LOW:
            return "too_hard"
        return "positive"

    def why(self) -> str:
        """Why this entry is an example of its band, in words the model reads."""
        wr = "?" if self.win_rate_plain is None else f"{self.win_rate_plain:.0%}"
        wh = "?" if self.win_rate_hint is None else f"{self.win_rate_hint:.0%}"
        rg = "?" if self.regret is None else f"{self.regret:.2f}"
        if self.band == "too_easy":
            return f"too easy: the agent won {wr} of its plays without any hint (regret {rg})"
        if self.band == "too_hard":
            return f"too hard: the agent won {wr} without the hint and {wh} with it (regret {rg})"
        if self.band == "positive":
            return f"good: won {wr} without the hint, {wh} with it (regret {rg})"
        return "a valid program of this kind (not yet scored)"

    @classmethod
    def from_record(cls, rec: Any) -> "MemoryEntry":
        """From a registry ``EnvRecord``."""
        m = rec.metadata
        tags = [str(t) for t in (m.get("tags") or [])]
        mode = m.get("mode") or _mode_of(rec.skill, tags, rec.source)
        return cls(
            env_id=rec.env_id.base, source=rec.source, skill=rec.skill, mode=mode,
            name=str(m.get("name") or rec.class_name), description=str(m.get("description") or ""),
            status=rec.status, generation=rec.generation, regret=_f(m.get("regret")),
            win_rate_hint=_f(m.get("win_rate_hint")), win_rate_plain=_f(m.get("win_rate_plain")),
        )


def _mode_of(skill: str | None, tags: list[str], source: str) -> str | None:
    """The mode of an entry without a stored one (the seeds): from skill, tags and source."""
    if skill == "tool use" or "tool-use" in tags or "tool" in tags or "(ToolUseBaseEnv)" in source:
        return "tool"
    if skill == "multi-step game" or "multi-step game" in tags or "game" in tags or "multi-turn" in tags:
        return "game"
    if "single-answer" in tags or "puzzle" in tags:
        return "puzzle"
    return None


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Retrieval:
    """What one prompt is shown from memory."""

    skill: str
    positives: list[MemoryEntry] = field(default_factory=list)
    negatives: list[MemoryEntry] = field(default_factory=list)
    format_example: MemoryEntry | None = None
    existing_names: list[str] = field(default_factory=list)
    instruction: str = ""

    @property
    def parent_ids(self) -> list[str]:
        """Ids of every example shown (the new environment's parents)."""
        shown = [*self.positives, *self.negatives] + ([self.format_example] if self.format_example else [])
        return [e.env_id for e in shown]


class DesignerMemory:
    """Read-side of the archive over a registry store (plus the seed suite).

    ``registry`` is a :class:`spade_envs.registry.store.Registry` or None (seeds only).
    Entries are loaded once (``refresh()`` reloads); :meth:`remember` adds an entry the
    designer just registered, so later candidates of the same run see it.
    """

    def __init__(self, registry: Any = None, *, include_seeds: bool = True) -> None:
        self.registry = registry
        self.include_seeds = include_seeds
        self._entries: list[MemoryEntry] | None = None
        self._novelty: NoveltyIndex | None = None

    def refresh(self) -> None:
        self._entries = None
        self._novelty = None

    def entries(self) -> list[MemoryEntry]:
        """Every non-quarantined entry (seeds first), as loaded."""
        if self._entries is None:
            recs: list[Any] = []
            if self.include_seeds:
                from ..registry.catalog import seed_records

                recs.extend(seed_records())
            if self.registry is not None:
                recs.extend(r for r in self.registry.list() if r.status != "quarantined")
            self._entries = [MemoryEntry.from_record(r) for r in recs]
        return self._entries

    def remember(self, entry: MemoryEntry) -> None:
        """Add a just-registered entry to this memory (and to its novelty index)."""
        self.entries().append(entry)
        if self._novelty is not None:
            self._novelty.add(entry.env_id, entry.source)

    def novelty_index(self) -> NoveltyIndex:
        """A :class:`NoveltyIndex` over every entry, quarantined ones included (a rejected
        idea is no more novel the second time)."""
        if self._novelty is None:
            items = [(e.env_id, e.source) for e in self.entries()]
            if self.registry is not None:
                items += [(r.env_id.base + f"-v{r.env_id.version}", r.source)
                          for r in self.registry.list(status="quarantined")]
            self._novelty = NoveltyIndex.from_sources(items)
        return self._novelty

    def novelty_check(self, source: str) -> tuple[bool, str]:
        """The ``AcceptanceConfig.novelty_check`` hook."""
        return self.novelty_index().check(source)

    def import_novelty_check(self, replaces: str | None = None) -> Callable[[str], tuple[bool, str]]:
        """The novelty hook for importing sources into the registry (``registry add``,
        ``validate``): a source identical to a registered one passes (the store
        deduplicates it), a near-duplicate is rejected, except of the environment it
        ``replaces`` (a new version is expected to resemble the old one)."""
        from ..program import source_sha256
        from ..registry.ids import parse_env_id

        known = {source_sha256(e.source): e.env_id for e in self.entries()}
        skip = []
        if replaces:
            base = parse_env_id(replaces).base
            skip = [e.env_id for e in self.entries() if e.env_id == base or e.env_id.startswith(base + "-v")]

        def check(source: str) -> tuple[bool, str]:
            same = known.get(source_sha256(source))
            if same is not None:
                return True, f"identical to {same} (already registered)"
            return self.novelty_index().check(source, exclude=skip)

        return check

    # -- retrieval -------------------------------------------------------------------
    def retrieve(self, skill: str, *, mode: str | None = None, k_positive: int = 2, k_negative: int = 2,
                 seed: int = 0) -> Retrieval:
        """The examples for a prompt of ``skill`` (see the module docstring)."""
        active = [e for e in self.entries() if e.status == "active"]
        same = [e for e in active if e.skill == skill and (mode is None or e.mode in (None, mode))]
        positives = sorted((e for e in same if e.band == "positive"),
                           key=lambda e: (-(e.regret or 0.0), abs((e.win_rate_plain or 0.5) - 0.5), e.env_id))
        positives = positives[:k_positive]
        negatives = _pick_negatives(same, [e for e in active if e.skill != skill], k_negative)
        format_example = None
        if not positives:
            unscored = [e for e in active if e.band == "unscored"]
            pool: list[MemoryEntry] = []
            for rule in (lambda e: e.skill == skill and e.mode == mode,
                         lambda e: e.skill == MODE_SKILLS.get(mode or "") and e.mode == mode,
                         lambda e: e.mode == mode,
                         lambda e: e.skill == skill):
                pool = [e for e in unscored if rule(e)]
                if pool:
                    break
            if pool:
                format_example = random.Random(seed).choice(sorted(pool, key=lambda e: e.env_id))
        names = sorted({e.name for e in active if e.skill == skill and e.name})
        instruction = (
            "Design a NEW environment that is clearly different from every example above and from the "
            "existing environments of this skill" + (f" ({', '.join(names[:12])})" if names else "") +
            ": a different task and different mechanics, not a renamed or re-numbered copy. Aim for a task "
            "the agent solves about half of the time without help, and that a good hint makes solvable."
        )
        return Retrieval(skill=skill, positives=positives, negatives=negatives, format_example=format_example,
                         existing_names=names, instruction=instruction)


def _pick_negatives(same: Iterable[MemoryEntry], other: Iterable[MemoryEntry], k: int) -> list[MemoryEntry]:
    out: list[MemoryEntry] = []
    for pool in (list(same), list(other)):
        easy = sorted((e for e in pool if e.band == "too_easy"), key=lambda e: (-(e.win_rate_plain or 0), e.env_id))
        hard = sorted((e for e in pool if e.band == "too_hard"), key=lambda e: ((e.win_rate_plain or 0), e.env_id))
        while (easy or hard) and len(out) < k:
            for bucket in (easy, hard):
                if bucket and len(out) < k:
                    out.append(bucket.pop(0))
        if len(out) >= k:
            break
    return out
