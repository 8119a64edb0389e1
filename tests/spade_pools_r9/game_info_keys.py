"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class DiceHistogramEnv:
    """Name the most frequent face; info holds a histogram keyed by int faces (SPADE keeps numbers, drops the rest)."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._rolls = []

    def _info(self):
        hist = {face: self._rolls.count(face) for face in range(1, 7)}
        return {**hist, "label": "histogram", (1, 2): 3, "ratio": 0.5, "faces": [1, 2, 3], None: 1}

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._rolls = [rng.randint(1, 6) for _ in range(15)]
        return f"Rolls: {self._rolls}. Which face came up most (smallest on a tie)? \\boxed{{face}}", self._info()

    def solution(self) -> str:
        return str(max(range(1, 7), key=lambda f: (self._rolls.count(f), -f)))

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d)\}", action)
        if m and m.group(1) == self.solution():
            return "Right face.", 1.0, True, False, self._info()
        return "Roll again.", 0.0, False, self.turn_count >= self.max_turns, self._info()
