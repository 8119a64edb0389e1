"""SPARE self-play generated game: who did it, among five listed suspects."""

import random
import re
from typing import Tuple

NAMES = ["Colonel Mustard", "Mrs. Plum", "Dr. Green", "Miss Scarlet", "Mr. Peacock", "Lady Ash",
         "Professor Vale", "Chef Moreau"]
ROOMS = ["library", "kitchen", "conservatory", "study", "ballroom"]


class ManorMysteryEnv:
    def __init__(self, max_turns=6, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._suspects = rng.sample(NAMES, 5)
        rooms = rng.sample(ROOMS, 5)
        self._where = dict(zip(self._suspects, rooms))
        self._culprit = rng.choice(self._suspects)
        self._crime_room = self._where[self._culprit]
        self.turn_count = 0
        alibis = [f"{s} was in the {r}." for s, r in self._where.items()]
        rng.shuffle(alibis)
        return (f"The vase was broken in the {self._crime_room}. Suspects: {', '.join(self._suspects)}. "
                f"Witness statements: {' '.join(alibis)} Who did it? Answer with \\boxed{{name}}.", {})

    def solution(self) -> str:
        return self._culprit

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]+)\}", action)
        if m and m.group(1).strip().lower() == self._culprit.lower():
            return "Solved: the culprit confesses.", 1.0, True, False, {}
        return "That suspect has an alibi. Check the witness statements.", 0.0, False, self.turn_count >= self.max_turns, {}
