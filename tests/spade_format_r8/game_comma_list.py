"""SPARE self-play generated game: a grid walk whose solution() is a comma list of moves."""

import random
import re
from typing import Tuple

MOVES = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


class BeaconWalkEnv:
    def __init__(self, max_turns=20, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._pos = (rng.randint(0, 2), rng.randint(0, 2))
        self._goal = (rng.randint(3, 5), rng.randint(3, 5))
        self.turn_count = 0
        return self._obs(), {}

    def _obs(self):
        return (f"You stand at {self._pos} on a 6x6 grid; the beacon is at {self._goal}. "
                "Move one cell per turn with \\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}.")

    def solution(self) -> str:
        dx, dy = self._goal[0] - self._pos[0], self._goal[1] - self._pos[1]
        return ", ".join(["right"] * dx + ["down"] * dy)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        m = re.search(r"\\boxed\{(up|down|left|right)\}", action)
        if not m:
            return "Unknown move. " + self._obs(), 0.0, False, truncated, {}
        dx, dy = MOVES[m.group(1)]
        self._pos = (min(5, max(0, self._pos[0] + dx)), min(5, max(0, self._pos[1] + dy)))
        if self._pos == self._goal:
            return "You reached the beacon!", 1.0, True, False, {}
        return self._obs(), 0.0, False, truncated, {}
