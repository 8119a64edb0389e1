"""``spade design --mode params``: propose, accept, register and score variants.

:class:`ParamsDesigner` runs :func:`~.params_mode.propose_variants` for ``config.n``
prompts, registers the accepted variants as ONE new generation
(``registry.next_generation()``) with ``Registry.add_variant``, then scores them (hinted
and plain plays at each variant's point) and stores the scores with them
(``Registry.update_scores``, as :func:`.scoring.store_scores` does for programs).
:class:`ParamsRun` summarises the run with the same keys as the code mode's
``DesignRun.summary`` (plus ``mode`` and ``constrained``). A backend failure becomes
the verdict ``propose`` of every proposal; the loop never raises because of what the
model wrote.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Callable

from ..errors import SpadeError
from .lazy_deps import LazyDesignerDeps
from .params_mode import MODE, NoParentsError, VariantMemory, propose_variants, register_variants, score_variants
from .proposal import Proposal

ProgressFn = Callable[[str, int, int], None]
STAGES = ("propose", "accept", "register", "score")


@dataclass
class ParamsConfig:
    """Knobs of a params-mode run (the CLI's options)."""

    n: int = 1
    model: str = "transformers:default"
    agent: str | None = None  #: None: the designer's own model plays
    parents: list[str] | None = None  #: restrict the parents offered
    parents_per_prompt: int = 1
    group_size: int = 1
    seed: int = 0
    max_new_tokens: int = 192
    temperature: float = 0.8
    score: bool = True
    hint_plays: int = 2  #: hinted plays per accepted environment (regret; scoring.PlayBudget)
    plain_plays: int = 4  #: plain plays per accepted environment
    max_turns: int = 6
    agent_max_new_tokens: int = 256
    reward_mode: str = "regret"

    def __post_init__(self) -> None:
        from .regret import RewardMode

        if self.n < 1 or self.group_size < 1 or self.parents_per_prompt < 1:
            raise ValueError("n, group_size and parents_per_prompt must be at least 1")
        RewardMode(self.reward_mode)


@dataclass
class ParamsRun:
    generation: int | None
    proposals: list[Proposal]
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        rejected: dict[str, int] = {}
        for p in self.proposals:
            if not p.valid:
                rejected[p.rejected_at or "incomplete"] = rejected.get(p.rejected_at or "incomplete", 0) + 1
        scored = [p.estimate for p in self.proposals if p.estimate is not None]
        mean = (lambda xs: fmean(xs) if xs else None)
        return {
            "mode": MODE, "generation": self.generation, "proposed": len(self.proposals),
            "attempts": len(self.proposals), "accepted": sum(p.valid for p in self.proposals),
            "registered": sum(bool(p.new) for p in self.proposals), "rejected": rejected,
            "rejected_attempts": dict(rejected), "scored": len(scored),
            "constrained": any(p.constrained for p in self.proposals),
            "mean_regret": mean([e.regret for e in scored]),
            "mean_win_rate_hint": mean([e.win_rate_hint for e in scored]),
            "mean_win_rate_plain": mean([e.win_rate_plain for e in scored]),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            **({"error": self.error} if self.error else {}),
        }

    def to_json(self) -> dict[str, Any]:
        return {**self.summary(), "candidates": [p.to_json() for p in self.proposals]}


class ParamsDesigner(LazyDesignerDeps):
    """The params-mode loop; ``backend``, ``agent``, ``registry`` and ``runtime`` can be
    injected (tests pass fakes), as for :class:`~.designer.EnvironmentDesigner`."""

    def __init__(self, config: ParamsConfig | None = None, *, backend: Any = None, agent: Any = None,
                 registry: Any = None, runtime: Any = None, progress: ProgressFn | None = None) -> None:
        self.config = config or ParamsConfig()
        self._backend, self._agent, self._registry = backend, agent, registry
        self.runtime = runtime
        self.progress = progress or (lambda stage, done, total: None)




    def run(self) -> ParamsRun:
        cfg = self.config
        seconds = dict.fromkeys(STAGES, 0.0)
        t = time.perf_counter()
        backend = self.backend  # a bad model spec fails here, before any work
        memory = VariantMemory(self.registry)
        try:
            props = propose_variants(
                backend, self.registry, cfg.n, memory, random.Random(cfg.seed), group_size=cfg.group_size,
                parents=cfg.parents, parents_per_prompt=cfg.parents_per_prompt,
                max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, runtime=self.runtime)
        except NoParentsError:
            raise
        except SpadeError as exc:
            return ParamsRun(None, [], {k: round(v, 3) for k, v in seconds.items()}, error=f"the designer model failed: {exc}")
        seconds["propose"] = time.perf_counter() - t  # generation and acceptance together
        self.progress("propose", len(props), len(props))
        self.progress("accept", len(props), len(props))
        valid = [p for p in props if p.valid]
        generation = None
        if valid:
            t = time.perf_counter()
            generation = self.registry.next_generation()
            register_variants(self.registry, valid, generation=generation, designer_model=cfg.model,
                              reward_mode=cfg.reward_mode, memory=memory)
            seconds["register"] = time.perf_counter() - t
            self.progress("register", len(valid), len(valid))
            if cfg.score:
                t = time.perf_counter()
                self._score([p for p in valid if p.env_id])
                seconds["score"] = time.perf_counter() - t
        return ParamsRun(generation, props, seconds)

    def _score(self, registered: list[Proposal]) -> None:
        from .scoring import PlayBudget, store_scores

        cfg = self.config
        sc = PlayBudget(hint_plays=cfg.hint_plays, plain_plays=cfg.plain_plays, max_turns=cfg.max_turns)
        try:
            scored = score_variants(self.agent, registered, sc, registry=self.registry, backend=self._backend,
                                    runtime=self.runtime, seed=cfg.seed)
        except (SpadeError, ValueError) as exc:
            for p in registered:
                p.notes.append(f"scoring failed: {exc}")
            return
        name = getattr(self.agent, "name", None)
        for i, p in enumerate(scored):
            store_scores(self.registry, p.env_id, p.estimate, cfg.reward_mode, agent_name=name)
            self.progress("score", i + 1, len(scored))
