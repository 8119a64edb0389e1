"""SPARE self-play generated game: hint(self, level) needs an argument (SPADE never calls it)."""

import random
import re
from typing import Tuple


class ModularLockEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._base, self._exp, self._mod = rng.randint(3, 9), rng.randint(5, 12), rng.randint(1000, 9000)
        self._answer = pow(self._base, self._exp, self._mod)
        self.turn_count = 0
        return (f"The lock opens with {self._base}^{self._exp} mod {self._mod}. "
                "Answer with \\boxed{n}.", {})

    def hint(self, level):
        return "Square and multiply." if level > 1 else "Reduce after every multiplication."

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._answer:
            return "Click! The lock opens.", 1.0, True, False, {}
        return "The lock stays shut.", 0.0, False, self.turn_count >= self.max_turns, {}
