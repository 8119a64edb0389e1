"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class TollBridgeEnv:
    """Pay the toll; step() raises on a non-numeric boxed answer (SPADE's loader refuses this game)."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._toll = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._toll = rng.randint(2, 9) * rng.randint(2, 9)
        return f"The toll is {self._toll // 3} coins times 3 plus {self._toll % 3}. Pay it: \\boxed{{n}}.", {}

    def solution(self) -> str:
        return str(self._toll)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        paid = int(m.group(1)) if m else -1  # int("test") raises
        if paid == self._toll:
            return "Crossed.", 1.0, True, False, {}
        return "Wrong toll.", 0.0, False, self.turn_count >= self.max_turns, {}
