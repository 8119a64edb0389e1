"""A combination lock whose code satisfies a system of modular constraints."""

import random
import re

METADATA = {
    "name": "Modular Lock",
    "skill": "mathematical reasoning",
    "description": "Find the smallest positive code that leaves given remainders modulo several pairwise coprime numbers.",
    "tags": ["number-theory", "crt", "single-answer"],
}


class ModularLockEnv:
    """Single-answer puzzle: the Chinese remainder theorem with three or four moduli."""

    MODULI_POOL = [3, 4, 5, 7, 11, 13, 17, 19, 23]

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        while True:
            k = self._rng.choice([3, 4])
            mods = sorted(self._rng.sample(self.MODULI_POOL, k))
            coprime = all(self._gcd(a, b) == 1 for i, a in enumerate(mods) for b in mods[i + 1:])
            if coprime and self._prod(mods) >= 500:  # a large answer space: guessing cannot win
                break
        product = self._prod(mods)
        self._answer = self._rng.randrange(product // 8, product)  # never a tiny, guessable code
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
