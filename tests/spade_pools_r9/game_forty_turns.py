"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class StairClimbEnv:
    """Climb a staircase one step per turn; the game declares 40 turns (SPADE gives it 25)."""

    def __init__(self, max_turns=40, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._height = 0
        self._at = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._at = 0
        self._height = rng.randint(28, 32)
        return (f"Turn {self.turn_count}/{self.max_turns}. Climb {self._height} stairs: say \\boxed{{up}} "
                "for each stair."), {}

    def solution(self) -> str:
        return "\n".join(["\\boxed{up}"] * self._height)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        if re.search(r"\\boxed\{up\}", action):
            self._at += 1
        if self._at >= self._height:
            return "You reached the top!", 1.0, True, False, {}
        return (f"Turn {self.turn_count}/{self.max_turns}. Stair {self._at}.", 0.0, False,
                self.turn_count >= self.max_turns, {})
