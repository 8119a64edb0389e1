"""SPARE self-play generated game: a sum puzzle whose solution() is a prose strategy."""

import random
import re
from typing import Tuple


class LedgerTotalEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._entries = [rng.randint(100, 999) for _ in range(4)]
        self._answer = sum(self._entries)
        listing = ", ".join(str(e) for e in self._entries)
        return (f"A ledger lists these deposits: {listing}. What is the total? "
                "Answer with \\boxed{total}.", {})

    def solution(self) -> str:
        # a strategy description, as SPADE's interactive spec allows ("goal description")
        return "Add up every deposit in the ledger and report the total inside the box."

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]+)\}", action)
        if m and m.group(1).strip() == str(self._answer):
            return "Correct! The ledger balances.", 1.0, True, False, {}
        truncated = self.turn_count >= self.max_turns
        return "Wrong total. Add the deposits again.", 0.0, False, truncated, {}

    def close(self):
        pass
