r"""Single-answer spade environments as reasoning-gym-style datasets.

For single-turn GRPO without an environment loop, in reasoning-gym's shape::

    import spade_envs
    ds = spade_envs.create_dataset("spade/Env-00001", size=100, seed=42, difficulty=3)
    entry = ds[0]            # {"question": str, "answer": str, "metadata": {...}}
    reward = spade_envs.score_answer(model_answer, entry)   # float in [0, 1]
    reward = ds.score_answer(model_answer, entry)           # the same

Contract (reasoning-gym's ``ProceduralDataset`` conventions carry over):

- ``name`` is the id of a **single-answer** environment: one whose reference solution is
  ONE action and which offers no tools (the text puzzles of the seed suite, e.g.
  ``spade/Env-00001`` ... ``-00012``); anything else raises
  :class:`~spade_envs.errors.IntegrationError` naming the interfaces that fit
  (``gym.make``, the verifiers and TRL integrations);
- ``size`` entries (default 500), indexable and iterable, deterministic: entry ``i`` is
  the episode of seed ``seed + i`` (``seed`` default: random, as in reasoning-gym);
- ``**config`` are the program's parameters (its ``PARAMETERS``, e.g. ``difficulty``),
  checked when the dataset is made;
- an entry's ``question`` is the episode's first observation (its own answer format
  included), ``answer`` the reference answer without the ``\boxed{}`` wrapper, and
  ``metadata`` holds ``source_dataset`` (the name), ``source_index``, ``env_id`` (with
  version), ``seed``, ``env_kwargs`` (the config) and ``difficulty`` (the same config);
- ``score_answer(answer, entry)`` replays the entry's episode with ``answer`` as its one
  action (wrapped in ``\boxed{}`` unless it already is) and returns 1.0 for a win, else
  the reward clipped to [0, 1]; ``None`` or an empty answer scores 0.0. The environment
  judges, never a string comparison; untrusted programs run in the sandbox. The entry's
  metadata is the only input besides the answer, and it only selects which registry
  entry to replay: a program never comes from the entry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from random import Random
from typing import TYPE_CHECKING, Any

from ..actions import extract_boxed
from ..errors import IntegrationError, SpadeError

if TYPE_CHECKING:
    from ..gym_env import SpadeEnv

_LOCK = threading.Lock()
_SCORERS: dict[tuple[str, str], "SpadeEnv"] = {}  #: open scoring envs, most recently used last
MAX_SCORERS = 16


def _key(env_id: str, env_kwargs: dict[str, Any]) -> tuple[str, str]:
    import json

    return env_id, json.dumps(env_kwargs, sort_keys=True, default=str)


def _open(env_id: str, env_kwargs: dict[str, Any]) -> "SpadeEnv":
    from ..gym_env import SpadeEnv
    from ..registry.ids import parse_env_id

    eid = parse_env_id(env_id)
    return SpadeEnv(eid.base, eid.version, env_kwargs=dict(env_kwargs))


class SpadeAnswerDataset:
    """A reasoning-gym-style dataset over one single-answer environment (module docstring)."""

    def __init__(self, name: str, *, size: int = 500, seed: int | None = None, **config: Any) -> None:
        from ..registry.catalog import resolve

        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise IntegrationError(f"size must be a positive integer, got {size!r}")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise IntegrationError(f"seed must be an integer or None, got {seed!r}")
        record = resolve(str(name))
        self.name, self.size, self.config = str(name), size, dict(config)
        self.seed = seed if seed is not None else Random().randint(0, 2**32)
        self.env_id = str(record.env_id)
        self._env = _open(self.env_id, self.config)
        self._lock = threading.Lock()
        try:
            self._check_single_answer()
        except Exception:
            self._env.close()
            raise

    def _check_single_answer(self) -> None:
        if self._env.is_game:
            raise IntegrationError(f"{self.name} is a multi-player game, not a single-answer environment: "
                                   "use spade_envs.make_aec / make_parallel")
        _, info = self._env.reset(seed=self.seed)
        actions = self._env.solution_actions()
        if info["tools"] or len(actions) != 1:
            why = "offers tools" if info["tools"] else f"takes {len(actions)} actions to win"
            raise IntegrationError(f"{self.name} {why}: it is not a single-answer environment; play it with "
                                   "gym.make, or the verifiers or TRL integrations (spade_envs.integrations)")

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self.size))

    def __getitem__(self, idx: int) -> dict[str, Any]:
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise TypeError(f"dataset indices are integers, got {type(idx).__name__}")
        if idx < 0:
            idx += self.size
        if not 0 <= idx < self.size:
            raise IndexError(f"index {idx} out of range for a dataset of size {self.size}")
        seed = self.seed + idx
        with self._lock:
            question, _ = self._env.reset(seed=seed)
            actions = self._env.solution_actions()
        if len(actions) != 1:
            raise IntegrationError(f"{self.name} seed {seed} takes {len(actions)} actions: not a single-answer episode")
        action = actions[0]
        answer = extract_boxed(action)
        return {
            "question": question,
            "answer": answer if answer is not None else action,
            "metadata": {"source_dataset": self.name, "source_index": idx, "env_id": self.env_id, "seed": seed,
                         "env_kwargs": dict(self.config), "difficulty": dict(self.config)},
        }

    def score_answer(self, answer: str | None, entry: dict[str, Any]) -> float:
        """Reward in [0, 1] of ``answer`` for ``entry`` (see :func:`score_answer`)."""
        return score_answer(answer, entry)

    def close(self) -> None:
        self._env.close()

    def __repr__(self) -> str:
        return f"SpadeAnswerDataset({self.name!r}, size={self.size}, seed={self.seed}, config={self.config})"


def create_dataset(name: str, *, size: int = 500, seed: int | None = None, **config: Any) -> SpadeAnswerDataset:
    """reasoning-gym's ``create_dataset(name, size=, seed=, **config)`` for a spade
    single-answer environment (see the module docstring)."""
    return SpadeAnswerDataset(name, size=size, seed=seed, **config)


def score_answer(answer: str | None, entry: dict[str, Any]) -> float:
    """reasoning-gym's ``score_answer(answer, entry)``: the environment replays the
    entry's episode with ``answer`` as its one action; 1.0 for a win, else the reward
    clipped to [0, 1] (0.0 for ``None`` or an empty answer)."""
    meta = entry.get("metadata") if isinstance(entry, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("env_id"), str) or not isinstance(meta.get("seed"), int):
        raise IntegrationError("score_answer needs an entry made by spade_envs.create_dataset "
                               "(metadata with env_id and seed)")
    if not isinstance(answer, str) or not answer.strip():
        return 0.0
    env_kwargs = meta.get("env_kwargs") or {}
    if not isinstance(env_kwargs, dict):
        raise IntegrationError("the entry's metadata.env_kwargs must be a dict")
    action = answer if "\\boxed{" in answer else f"\\boxed{{{answer.strip()}}}"
    key = _key(meta["env_id"], env_kwargs)
    with _LOCK:
        env = _SCORERS.pop(key, None)
        if env is None:
            try:
                env = _open(meta["env_id"], env_kwargs)
            except SpadeError as exc:
                raise IntegrationError(f"cannot score this entry of {meta['env_id']}: {exc}") from None
            while len(_SCORERS) >= MAX_SCORERS:
                _SCORERS.pop(next(iter(_SCORERS))).close()
        _SCORERS[key] = env
        try:
            env.reset(seed=meta["seed"])
            _, reward, _, _, _ = env.step(action)
        except SpadeError as exc:
            raise IntegrationError(f"cannot score this entry of {meta['env_id']}: {exc}") from None
    return 1.0 if reward >= 1.0 else max(0.0, min(1.0, float(reward)))
