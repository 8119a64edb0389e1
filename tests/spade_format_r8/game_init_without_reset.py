"""SPARE self-play generated game: __init__ stores settings only; reset() comes first."""

import random
import re
from typing import Tuple


class PrimeGapEnv:
    def __init__(self, max_turns=10, **kwargs):
        # no self.reset() here: every runtime resets before the first step
        self.max_turns = max_turns

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._n = rng.randint(1000, 9000)
        p = self._n + 1
        while any(p % d == 0 for d in range(2, int(p ** 0.5) + 1)):
            p += 1
        self._answer = p
        self.turn_count = 0
        return f"What is the smallest prime greater than {self._n}? Answer with \\boxed{{p}}.", {}

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1  # fails before reset(): turn_count does not exist yet
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._answer:
            return "Correct!", 1.0, True, False, {}
        hint = "too small" if m and int(m.group(1)) < self._answer else "not it"
        return f"Wrong ({hint}). Try again.", 0.0, False, self.turn_count >= self.max_turns, {}
