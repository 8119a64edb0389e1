"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class EchoWellEnv:
    """Shout into the well until it answers; never truncates itself (SPADE's loop stops at 25 turns)."""

    def __init__(self, **kwargs):
        self.calls = 0
        self.needed = 30

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.calls = 0
        self.needed = random.Random(seed).randint(27, 33)
        return f"Shout \\boxed{{echo}} into the well {self.needed} times.", {}

    def solution(self) -> str:
        return "\n".join(["\\boxed{echo}"] * self.needed)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        if re.search(r"\\boxed\{echo\}", action):
            self.calls += 1
        if self.calls >= self.needed:
            return "The well answers.", 1.0, True, False, {}
        return f"Echo {self.calls}.", 0.0, False, False, {}
