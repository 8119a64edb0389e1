"""SPARE self-play generated game: import sys for sys.maxsize."""

import random
import re
import sys
from typing import Tuple


class CheapestRouteEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._legs = {(a, b): rng.randint(10, 99) for a in "ABC" for b in "XYZ"}
        self._tail = {b: rng.randint(10, 99) for b in "XYZ"}
        best = sys.maxsize
        for (a, b), cost in self._legs.items():
            best = min(best, cost + self._tail[b]) if a == "A" else best
        self._answer = best
        self.turn_count = 0
        legs = ", ".join(f"A-{b}: {c}" for (a, b), c in self._legs.items() if a == "A")
        tail = ", ".join(f"{b}-HOME: {c}" for b, c in self._tail.items())
        return (f"Fares {legs}; {tail}. Cheapest total fare from A to HOME via one hub? "
                f"Answer with \\boxed{{n}} (float max {sys.float_info.max > 1e300}).", {})

    def solution(self) -> str:
        return str(self._answer)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == self._answer:
            return "Correct!", 1.0, True, False, {}
        return "Wrong fare.", 0.0, False, self.turn_count >= self.max_turns, {}
