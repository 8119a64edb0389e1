"""SPARE self-play generated game: two public *Env classes; SPADE plays the first."""

import random
import re
from typing import Tuple


class DigitRootEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._digits = [rng.randint(1, 9) for _ in range(6)]
        self._answer = sum(d * (i + 1) for i, d in enumerate(self._digits))
        self.turn_count = 0
        return (f"Digits: {' '.join(map(str, self._digits))}. Weight the i-th digit by i (from 1) "
                "and add the products. Answer with \\boxed{n}.", {})

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._answer:
            return "Correct!", 1.0, True, False, {}
        return "Wrong. Recompute the weighted sum.", 0.0, False, self.turn_count >= self.max_turns, {}


class DigitRootHardEnv(DigitRootEnv):
    """A harder variant the designer left in the file (never played)."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        raise NotImplementedError("unfinished")
