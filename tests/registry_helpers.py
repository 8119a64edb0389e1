"""Shared helpers of the registry tests (tests/test_registry_*.py)."""

from __future__ import annotations

import pytest


def synthetic_source(i: int, skill: str = "counting", tags: tuple[str, ...] = ("synthetic",)) -> str:
    """A tiny, valid, deterministic program; distinct for every ``i``."""
    return (
        f"METADATA = {{'name': 'Echo {i}', 'skill': {skill!r}, 'tags': {list(tags)!r}}}\n\n"
        "import random\n\n"
        f"class Echo{i}Env:\n"
        "    def __init__(self, max_turns=3, **kwargs):\n"
        "        self.max_turns = max_turns\n"
        "        self.reset()\n\n"
        "    def reset(self, seed=None):\n"
        "        rng = random.Random(seed)\n"
        f"        self._n = rng.randrange(1000) + {i}\n"
        "        self._turn = 0\n"
        "        return f'Repeat the number {self._n} in \\\\boxed{{}}.', {}\n\n"
        "    def step(self, action):\n"
        "        self._turn += 1\n"
        "        won = action.strip() == f'\\\\boxed{{{self._n}}}'\n"
        "        done = won or self._turn >= self.max_turns\n"
        "        return ('correct' if won else 'wrong'), (1.0 if won else 0.0), done, False, {}\n\n"
        "    def solution(self):\n"
        "        return str(self._n)\n"
    )


@pytest.fixture
def spade_home(tmp_path, monkeypatch):
    """A fresh SPADE_HOME. Store ids registered in Gymnasium before it (another home's) are
    set aside for the test and put back afterwards; those the test registers are removed."""
    from gymnasium.envs.registration import registry as gym_registry

    from spade_envs.registry.gym_registration import store_registrations

    monkeypatch.setenv("SPADE_HOME", str(tmp_path / "home"))
    aside = {key: gym_registry.pop(key) for key in store_registrations()}
    before = set(gym_registry)
    yield tmp_path / "home"
    for key in set(gym_registry) - before:
        gym_registry.pop(key, None)
    gym_registry.update(aside)


def playable_source(i: int, skill: str = "arithmetic") -> str:
    """A small program that passes the real acceptance pipeline (no answer leak, the
    solution wins, garbage does not); distinct for every ``i``."""
    return (
        "import random\n\n"
        f"METADATA = {{'name': 'Relay {i}', 'skill': {skill!r}, 'tags': ['relay']}}\n\n\n"
        f"class Relay{i}Env:\n"
        "    def __init__(self, max_turns=2, **kwargs):\n"
        "        self.max_turns = max_turns\n"
        "        self.reset()\n\n"
        "    def reset(self, seed=None):\n"
        f"        rng = random.Random((seed or 0) * 7919 + {i})\n"
        "        self._a, self._b, self._turn = rng.randint(10, 99), rng.randint(10, 99), 0\n"
        f"        return f'Runner {i} carries {{self._a}} letters, the next one {{self._b}}. Total? Use \\\\boxed{{{{}}}}.', {{}}\n\n"
        "    def step(self, action):\n"
        "        self._turn += 1\n"
        "        if f'\\\\boxed{{{self._a + self._b}}}' in action:\n"
        "            return 'Delivered!', 1.0, True, False, {}\n"
        "        return 'Wrong count.', 0.0, False, self._turn >= self.max_turns, {}\n\n"
        "    def solution(self):\n"
        "        return str(self._a + self._b)\n"
    )
