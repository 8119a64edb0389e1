"""SPARE self-play generated game: three chained sums with a time-shaped reward (0.64 at best)."""

import random
import re
from typing import Tuple


class ChainedSumsEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._pairs = [(rng.randint(100, 499), rng.randint(100, 499)) for _ in range(3)]
        self._stage = 0
        self.turn_count = 0
        return self._obs(), {}

    def _obs(self):
        a, b = self._pairs[self._stage]
        return (f"Stage {self._stage + 1} of 3: compute {a} + {b}. Answer with \\boxed{{n}}. "
                "Each turn costs 0.12 of the final reward.")

    def solution(self) -> str:
        return "\n".join(f"\\boxed{{{a + b}}}" for a, b in self._pairs)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        m = re.search(r"\\boxed\{(\d+)\}", action)
        a, b = self._pairs[self._stage]
        if not m or int(m.group(1)) != a + b:
            return "Not quite. " + self._obs(), 0.0, False, truncated, {}
        self._stage += 1
        if self._stage == 3:
            return "All three stages done!", round(1.0 - 0.12 * self.turn_count, 2), True, False, {}
        return "Right. " + self._obs(), 0.0, False, truncated, {}
