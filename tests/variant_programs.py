"""Programs with ``PARAMETERS`` for the variant and params-mode tests (not seeds)."""

from __future__ import annotations

#: a sum puzzle whose size and number range are knobs; passes acceptance at every valid point
SUM_SOURCE = '''
METADATA = {"name": "Knob Sum", "skill": "arithmetic", "description": "add a few numbers", "tags": ["puzzle"]}

PARAMETERS = {
    "type": "object",
    "properties": {
        "n_terms": {"type": "integer", "minimum": 2, "maximum": 6, "default": 3,
                    "description": "how many numbers to add (difficulty)"},
        "max_value": {"type": "integer", "minimum": 20, "maximum": 999, "default": 50,
                      "description": "largest number that appears"},
        "max_turns": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2,
                      "description": "answers allowed"},
    },
}

import random


class KnobSumEnv:
    def __init__(self, n_terms=3, max_value=50, max_turns=2, **kwargs):
        self.n_terms = n_terms
        self.max_value = max_value
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._terms = [rng.randint(10, self.max_value) for _ in range(self.n_terms)]
        self._turn = 0
        text = " + ".join(str(t) for t in self._terms)
        return f"Add these {self.n_terms} numbers: {text}. Answer as \\\\boxed{{N}}.", {"n_terms": self.n_terms}

    def step(self, action):
        self._turn += 1
        won = action.replace(" ", "").strip() == "\\\\boxed{" + str(sum(self._terms)) + "}"
        done = won or self._turn >= self.max_turns
        return ("correct" if won else "wrong"), (1.0 if won else 0.0), done, False, {}

    def solution(self):
        return "\\\\boxed{" + str(sum(self._terms)) + "}"

    def hint(self):
        return "Add the numbers from left to right, keeping a running total."
'''
