"""SPARE self-play generated game"""

import random
import re
from typing import Any, Optional, Tuple, Dict, List
from math_verify import parse, verify


def verify_answer(player_answer, solution):
    """Check if answer is correct: string match first, then math equivalence."""
    if str(player_answer).strip() == str(solution).strip():
        return True
    try:
        return verify(parse(player_answer), parse(solution))
    except:
        return False


class LedgerDriftEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._solution = None
        self._task = ""
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        start = rng.randint(200, 900)
        moves = [rng.randint(-90, 90) for _ in range(5)]
        rate = rng.choice([2, 3, 4])
        total = start
        for m in moves:
            total += m
        self._solution = str(total * rate)
        self._task = (f"A ledger opens at {start}. Entries: {', '.join(map(str, moves))}. "
                      f"The closing balance is then multiplied by {rate}. What is the result?")
        return (f"Welcome to Ledger Drift.\n{self._task}\nAnswer with \\boxed{{answer}}.", {})

    def solution(self) -> str:
        return self._solution

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        truncated = self.turn_count >= self.max_turns
        match = re.search(r'\\boxed\{([^}]+)\}', action)
        if match and verify_answer(match.group(1), self.solution()):
            return ("Correct! The ledger balances.", 1.0, True, False, {})
        elif truncated:
            return (f"Time's up. The answer was {self.solution()}. {self._task}", 0.0, False, True, {})
        else:
            return ("Wrong. Recompute each entry in order, then multiply. Try again. " + self._task, 0.0, False, False, {})

    def close(self): pass
