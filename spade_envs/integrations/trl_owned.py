"""TRL with the environment owning the data and the reward: no ``train_dataset``, no
``reward_funcs``.

TRL's ``GRPOTrainer`` accepts ``environment_factory=`` alone (``train_dataset=None``,
``max_steps`` set): it feeds placeholder rows (one empty user message) and appends what
``reset()`` returns to that message; the environment's ``get_reward()`` is the reward
source (weight 1, logged under the class name)::

    factory = environment_factory("spade/Env-00013", seeds=range(64), group=4)
    trainer = GRPOTrainer(model=..., args=GRPOConfig(max_steps=100, num_generations=4, ...),
                          environment_factory=factory, processing_class=tokenizer)

Contract of :func:`environment_factory`:

- it returns ONE picklable factory (an :class:`~.trl_adapter.EnvironmentFactory`) whose
  instances, on ``reset()`` without an ``env_id``, play the next episode of a schedule:
  every (level of ``env_kwargs``, environment, seed) of the selection, in that order,
  cycled; ``group`` consecutive resets play the SAME episode (set it to GRPO's
  ``num_generations``: TRL resets the rollouts of one prompt group one after another, so
  the group compares answers to one task). ``shuffle`` (a seed) shuffles the order once;
- ``reset()`` then returns the environment's own system message, a blank line, and the
  first observation (the placeholder row has no system message);
- a row that names ``env_id`` still plays that row (the factory also serves a dataset);
- the selection must share one class (one tool environment, or text-only environments);
  several tool environments need a dict of factories, and TRL routes a dict only through a
  dataset's ``environment`` column: :func:`~.trl_adapter.build_prompt_dataset` and
  :func:`~.trl_adapter.environment_factories` (one clear error says so).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from typing import Any

from ..errors import IntegrationError
from .trl_adapter import EnvironmentFactory, episode_families


class EpisodeSchedule:
    """The cycled (env id, seed, env kwargs, hint, system prefix) list; ``group`` resets each."""

    def __init__(self, episodes: list[tuple[str, int, dict, bool, str]], group: int = 1) -> None:
        if not episodes:
            raise IntegrationError("the episode schedule is empty")
        if not isinstance(group, int) or isinstance(group, bool) or group < 1:
            raise IntegrationError(f"group must be a positive integer (GRPO's num_generations), got {group!r}")
        self.episodes, self.group, self.calls = list(episodes), group, 0
        self._lock = threading.Lock()

    def next(self) -> tuple[str, int, dict, bool, str]:
        with self._lock:
            i, self.calls = self.calls, self.calls + 1
        return self.episodes[(i // self.group) % len(self.episodes)]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class OwnedDataFactory(EnvironmentFactory):
    """An :class:`EnvironmentFactory` whose instances pick their own episodes."""

    def __init__(self, base: EnvironmentFactory, schedule: EpisodeSchedule) -> None:
        super().__init__(base.name, base.tool_specs, base.env_key)
        self.schedule = schedule

    def __call__(self):
        env = self.env_class()
        env._schedule = self.schedule
        return env

    def __repr__(self) -> str:
        return f"OwnedDataFactory({self.name!r}, {len(self.schedule.episodes)} episodes, group={self.schedule.group})"


def environment_factory(selection: Any, seeds: int | Iterable[int] = 8, *, env_kwargs: Any = None,
                        hint: bool = False, group: int = 1, shuffle: int | None = None) -> OwnedDataFactory:
    """One factory for ``GRPOTrainer(environment_factory=..., train_dataset=None)`` (module docstring)."""
    rows = episode_families(selection, seeds, env_kwargs)
    names = sorted({r[2].name for r in rows})
    if len(names) != 1:
        raise IntegrationError(
            f"the selection makes {len(names)} environment classes ({', '.join(names)}): one factory serves one "
            "class; for several, pass a dataset and a dict of factories (build_prompt_dataset + environment_factories)")
    episodes = [(env_id, seed, dict(kwargs), bool(hint), system + "\n\n") for env_id, seed, _, system, _, kwargs in rows]
    if shuffle is not None:
        random.Random(shuffle).shuffle(episodes)
    return OwnedDataFactory(rows[0][2], EpisodeSchedule(episodes, group))
