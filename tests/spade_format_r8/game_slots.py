"""SPARE self-play generated game: a class with __slots__."""

import random
import re
from typing import Tuple


class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class TaxiDistanceEnv:
    __slots__ = ("max_turns", "turn_count", "_a", "_b")

    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._a = Point(rng.randint(-500, 500), rng.randint(-500, 500))
        self._b = Point(rng.randint(-500, 500), rng.randint(-500, 500))
        self.turn_count = 0
        return (f"Taxi distance from ({self._a.x}, {self._a.y}) to ({self._b.x}, {self._b.y})? "
                "Answer with \\boxed{d}.", {})

    def solution(self) -> str:
        return str(abs(self._a.x - self._b.x) + abs(self._a.y - self._b.y))

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(-?\d+)\}", action)
        if m and m.group(1) == self.solution():
            return "Correct!", 1.0, True, False, {}
        return "Wrong. Add the horizontal and vertical gaps.", 0.0, False, self.turn_count >= self.max_turns, {}
