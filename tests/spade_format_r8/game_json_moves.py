"""SPARE self-play generated game: a sorting game whose solution() is a JSON list of moves."""

import json
import random
import re
from typing import Tuple


class SwapSortEnv:
    def __init__(self, max_turns=30, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._row = rng.sample(range(1, 6), 5)
        while sum(a > b for i, a in enumerate(self._row) for b in self._row[i + 1:]) < 2:
            rng.shuffle(self._row)
        self.turn_count = 0
        return self._obs(), {}

    def _obs(self):
        return (f"Row: {self._row}. Sort it ascending by swapping neighbours: send \\boxed{{i}} to swap "
                "positions i and i+1 (0-based).")

    def solution(self) -> str:
        row, moves = list(self._row), []
        for end in range(len(row) - 1, 0, -1):
            for i in range(end):
                if row[i] > row[i + 1]:
                    row[i], row[i + 1] = row[i + 1], row[i]
                    moves.append(i)
        return json.dumps(moves)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        m = re.search(r"\\boxed\{(\d)\}", action)
        if not m or int(m.group(1)) > 3:
            return "Send an index 0-3. " + self._obs(), 0.0, False, truncated, {}
        i = int(m.group(1))
        self._row[i], self._row[i + 1] = self._row[i + 1], self._row[i]
        if self._row == sorted(self._row):
            return "Sorted!", 1.0, True, False, {}
        return self._obs(), 0.0, False, truncated, {}
