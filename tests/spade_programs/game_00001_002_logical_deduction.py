"""SPARE self-play generated game"""

import random
import re
from typing import Tuple


class VaultDialsEnv:
    """Multi-turn: set three dials to a hidden code using feedback. No solution() (SPADE's
    multi-turn template has none)."""

    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.code = [0, 0, 0]
        self.dials = [0, 0, 0]
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        if seed is not None:
            random.seed(seed)
        self.turn_count = 0
        self.code = [random.randint(0, 9) for _ in range(3)]
        self.dials = [0, 0, 0]
        return ("Three dials guard a vault. Set dial K to value V with \\boxed{set K V}; "
                "\\boxed{try} tests the code and tells how many dials are right. "
                f"Dials: {self.dials}"), {}

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        match = re.search(r'\\boxed\{([^}]*)\}', action)
        if not match:
            return ('Use \\boxed{action} format.', 0.0, False, False, {})
        cmd = match.group(1).strip().lower()
        truncated = self.turn_count >= self.max_turns
        parts = cmd.split()
        if len(parts) == 3 and parts[0] == "set" and parts[1].isdigit() and parts[2].isdigit():
            k, v = int(parts[1]), int(parts[2])
            if 0 <= k < 3 and 0 <= v <= 9:
                self.dials[k] = v
                return (f"Dial {k} set. Dials: {self.dials}", 0.0, False, truncated, {})
            return ("No such dial or value.", 0.0, False, truncated, {})
        if cmd == "try":
            right = sum(a == b for a, b in zip(self.dials, self.code))
            if right == 3:
                return ("The vault opens!", 1.0, True, False, {})
            return (f"{right} dial(s) right. Dials: {self.dials}", 0.0, False, truncated, {})
        return ("Unknown action. Use \\boxed{set K V} or \\boxed{try}.", 0.0, False, truncated, {})

    def close(self): pass
