"""The settings of acceptance: :class:`AcceptanceConfig` (one frozen object per pipeline).

Each stage object names the fields it reads in its ``settings`` (:mod:`.runner`); the
defaults are what ``spade validate`` uses. Parameter sampling (:mod:`.parameters`) runs
the same pipeline under copies of this object that differ in ``env_kwargs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: ``source -> (ok, detail)``: the novelty stage's plug-in (e.g. the designer memory's MinHash)
NoveltyCheck = Callable[[str], "tuple[bool, str]"]


@dataclass(frozen=True)
class AcceptanceConfig:
    """Knobs of the pipeline; the defaults are what ``spade validate`` uses.

    - ``seeds``: smoke, solution replay and leak checks run on each (default 3 seeds);
    - ``determinism_seeds``: how many of ``seeds`` are replayed twice step by step
      (default 1; every seed's first observation and solution are compared anyway);
    - ``variety_seeds``: extra seeds whose ``solution()`` joins the variety check (3);
    - ``min_distinct_solutions``: distinct solutions needed over all those seeds (2);
    - ``max_garbage_probes``: cap on garbage probes, 0 = all (13 to 16; default 0);
    - ``step_deadline_s``: wall-clock limit of one call (default 2 s; the sandbox
      enforces it, in-process runs check it after the fact);
    - ``candidate_deadline_s``: total budget of one candidate (default 60 s);
    - ``win_reward``: reward that counts as a win (1.0);
    - ``max_solution_actions``: longest accepted solution (200 actions);
    - ``leak_min_digits`` / ``leak_min_chars``: the specificity rule of the leak check;
    - ``env_kwargs``: constructor arguments;
    - ``novelty_check``: ``source -> (ok, detail)``, e.g. the designer memory's MinHash;
    - games only: ``games_per_seat`` (scripted-vs-random games per seat, 8),
      ``max_game_steps`` (a game must end within this many steps, 300),
      ``min_scripted_score`` (the baseline's (wins + draws/2) / games in every seat, 0.6),
      ``min_coop_success`` (cooperative scripted self-play success rate, 0.8).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    determinism_seeds: int = 1
    variety_seeds: tuple[int, ...] = (3, 4, 5)
    min_distinct_solutions: int = 2
    max_garbage_probes: int = 0
    step_deadline_s: float = 2.0
    candidate_deadline_s: float = 60.0
    win_reward: float = 1.0
    max_solution_actions: int = 200
    leak_min_digits: int = 3
    leak_min_chars: int = 4
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    novelty_check: NoveltyCheck | None = None
    games_per_seat: int = 8
    max_game_steps: int = 300
    min_scripted_score: float = 0.6
    min_coop_success: float = 0.8
