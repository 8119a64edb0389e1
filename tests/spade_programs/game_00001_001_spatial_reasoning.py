"""SPARE self-play generated game"""

import random
import re
from typing import Tuple


class LanternGridEnv:
    """Walk a lantern-bearer across a grid to the exit, avoiding pits."""

    def __init__(self, max_turns=16, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.pos = (0, 0)
        self.exit = (0, 0)
        self.pits = set()
        self.size = 5
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        if seed is not None:
            random.seed(seed)
        self.turn_count = 0
        self.size = 5
        self.pos = (0, 0)
        self.exit = (random.randint(2, 4), random.randint(2, 4))
        self.pits = set()
        while len(self.pits) < 3:
            p = (random.randint(0, 4), random.randint(0, 4))
            if p not in ((0, 0), self.exit) and p[1] != 0 and p[0] != self.exit[0]:
                self.pits.add(p)
        return self._obs("You stand at the north-west corner."), {}

    def _obs(self, msg):
        return (f"{msg}\nPosition: {self.pos} | Exit: {self.exit} | Pits: {sorted(self.pits)}\n"
                f"Turn {self.turn_count}/{self.max_turns}\n"
                "Actions: \\boxed{go north}, \\boxed{go south}, \\boxed{go east}, \\boxed{go west}")

    def solution(self):
        # south along column 0 (no pits there), then east along the exit's row (none there either)
        moves = ["go south"] * self.exit[0] + ["go east"] * self.exit[1]
        return "\n".join(moves)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        match = re.search(r'\\boxed\{([^}]*)\}', action)
        if not match:
            return ('Use \\boxed{action} format.', 0.0, False, False, {})
        cmd = match.group(1).strip().lower()
        dr, dc = {"go north": (-1, 0), "go south": (1, 0), "go east": (0, 1), "go west": (0, -1)}.get(cmd, (0, 0))
        r, c = self.pos[0] + dr, self.pos[1] + dc
        if 0 <= r < self.size and 0 <= c < self.size:
            self.pos = (r, c)
        truncated = self.turn_count >= self.max_turns
        if self.pos in self.pits:
            return ("You fell into a pit.", 0.0, True, False, {})
        if self.pos == self.exit:
            return ("You reached the exit!", 1.0, True, False, {})
        return (self._obs(f"You {cmd}."), 0.0, False, truncated, {})

    def close(self): pass
