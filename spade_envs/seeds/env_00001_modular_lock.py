"""A combination lock whose code satisfies a system of modular constraints."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Modular Lock",
    "skill": "mathematical reasoning",
    "description": "Find the smallest positive code that leaves given remainders modulo several pairwise coprime numbers.",
    "tags": ["number-theory", "crt", "single-answer"],
}

PARAMETERS = {
    "type": "object",
    "properties": {
        "difficulty": {
            "type": "integer", "minimum": 0, "maximum": 4, "default": 3,
            "description": "0: one note (the code is its remainder), loose answer format; 1: two tiny moduli; "
                           "2: two or three moduli; 3: three or four moduli, code >= 500 (the original); "
                           "4: six or seven moduli up to 47, a code in the billions",
        },
        "num_moduli": {
            "type": ["integer", "null"], "minimum": 1, "maximum": 7, "default": None,
            "description": "number of notes (pairwise coprime moduli); null: set by difficulty",
        },
        "loose_answer": {
            "type": ["boolean", "null"], "default": None,
            "description": "also accept the last number of a reply without \\boxed{} (null: only at difficulty 0)",
        },
        "max_turns": {"type": "integer", "minimum": 2, "maximum": 20, "default": 3, "description": "answers allowed"},
    },
}

#: difficulty -> (moduli pool, choices of the number of moduli, least product)
LEVELS = {
    0: ([7, 8, 9], [1], 7),
    1: ([3, 4, 5], [2], 12),
    2: ([3, 4, 5, 7, 11], [2, 3], 60),
    3: ([3, 4, 5, 7, 11, 13, 17, 19, 23], [3, 4], 500),
    4: ([5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47], [6, 7], 10**8),
}


class ModularLockEnv:
    """Single-answer puzzle: the Chinese remainder theorem with three or four moduli."""

    MODULI_POOL = [3, 4, 5, 7, 11, 13, 17, 19, 23]

    def __init__(self, max_turns=3, difficulty=3, num_moduli=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        pool, counts, least = LEVELS[difficulty]
        if num_moduli is not None and num_moduli not in counts:
            pool = LEVELS[4][0] if num_moduli > 4 else LEVELS[3][0]
            counts, least = [num_moduli], 1
        self._pool, self._counts, self._least = pool, counts, least
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        while True:
            k = self._rng.choice(self._counts)
            mods = sorted(self._rng.sample(self._pool, k))
            coprime = all(self._gcd(a, b) == 1 for i, a in enumerate(mods) for b in mods[i + 1:])
            if coprime and self._prod(mods) >= self._least:  # a large answer space: guessing cannot win
                break
        product = self._prod(mods)
        # never a tiny, guessable code (never 0 or 1 either, the usual garbage guesses)
        self._answer = self._rng.randrange(max(2, product // 8), product)
        self._moduli = mods
        self._turn = 0
        self._done = False
        lines = [f"  code mod {m} = {self._answer % m}" for m in mods]
        obs = (
            "A vault lock opens with a positive integer code. The engineer left these notes:\n"
            + "\n".join(lines)
            + f"\nThe code is the smallest positive integer satisfying all notes (it is below {product}).\n"
            "Answer with \\boxed{code}."
        )
        return obs, {}

    @staticmethod
    def _prod(values):
        out = 1
        for v in values:
            out *= v
        return out

    @staticmethod
    def _gcd(a, b):
        while b:
            a, b = b, a % b
        return a

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        m = re.search(r"\\boxed\{\s*(-?\d+)\s*\}", str(action))
        if self._loose and not m:
            loose = loose_answer(str(action))
            m = re.match(r"(-?\d+)$", loose) if loose is not None else None
        if m and int(m.group(1)) == self._answer:
            self._done = True
            return "The vault opens.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if not m:
            return "Give your code as \\boxed{number}.", 0.0, False, truncated, {}
        return "The lock stays shut.", 0.0, False, truncated, {}

    def solution(self):
        return str(self._answer)

    def hint(self):
        return (
            "Combine the notes one at a time: start from the largest modulus and step through "
            "its multiples until the next note also holds; the moduli are pairwise coprime."
        )
