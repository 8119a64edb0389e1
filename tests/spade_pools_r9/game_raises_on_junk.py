"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class CanalLockEnv:
    """Name the water level after a sequence of lock operations; step() raises on text it cannot read."""

    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._level = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        ops = [rng.choice([-3, -2, 2, 4, 5]) for _ in range(rng.randint(3, 6))]
        self._level = 10 + sum(ops)
        return (f"A canal starts at level 10 and the locks change it by {ops}. Final level? "
                "Answer with \\boxed{n}."), {}

    def solution(self) -> str:
        return str(self._level)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        if m is None:
            raise ValueError("no boxed answer in the action")  # SPADE: ("Error: ...", -1.0, True, False, {})
        text = m.group(1).strip()
        if not text.lstrip("-").isdigit():
            return "Give a whole number.", 0.0, False, self.turn_count >= self.max_turns, {}
        if int(text) == self._level:
            return "The barge passes.", 1.0, True, False, {}
        return "Wrong level.", 0.0, False, self.turn_count >= self.max_turns, {}
