"""Induce a hidden letter-shuffling cipher from examples and apply it to a new word."""

import random
import re
import string

METADATA = {
    "name": "Glyph Cipher",
    "skill": "pattern recognition",
    "description": "A cipher rearranges letter positions and shifts every letter along the alphabet; infer it from three examples and encode a new word.",
    "tags": ["cipher", "string-transformation", "induction", "single-answer"],
}

ABC = string.ascii_uppercase


class GlyphCipherEnv:
    """Single-answer induction; the hidden rule is a position permutation plus a Caesar shift."""

    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    @staticmethod
    def _position_ops(n, k):
        """Elementary position rearrangements of an n-letter word: name -> source index per slot."""
        half = (n + 1) // 2
        return {
            "reverse": [n - 1 - i for i in range(n)],
            "rotate": [(i + k) % n for i in range(n)],
            "swap_pairs": [i + 1 if i % 2 == 0 and i + 1 < n else i - 1 if i % 2 else i for i in range(n)],
            "evens_then_odds": list(range(0, n, 2)) + list(range(1, n, 2)),
            "riffle": [i // 2 if i % 2 == 0 else half + i // 2 for i in range(n)],
        }

    @staticmethod
    def _apply(perm, shift, word):
        return "".join(ABC[(ABC.index(word[src]) + shift) % 26] for src in perm)

    @staticmethod
    def _consistent(pairs, n):
        """All (perm, shift) pairs that explain every example: perm is a list of source indices."""
        found = []
        for shift in range(26):
            perm = []
            for i in range(n):
                srcs = [j for j in range(n) if all(ABC[(ABC.index(w[j]) + shift) % 26] == out[i] for w, out in pairs)]
                if len(srcs) != 1:
                    break
                perm.append(srcs[0])
            if len(perm) == n:
                found.append((perm, shift))
        return found

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            n = rng.randint(6, 8)
            ops = self._position_ops(n, rng.randint(1, n - 1))
            names = rng.sample(sorted(ops), 2)
            perm = [ops[names[0]][i] for i in ops[names[1]]]  # apply names[0], then names[1]
            shift = rng.randint(1, 25)
            words = ["".join(rng.sample(ABC, n)) for _ in range(4)]
            pairs = [(w, self._apply(perm, shift, w)) for w in words[:3]]
            if perm == list(range(n)) or len(self._consistent(pairs, n)) != 1:
                continue  # the examples must pin the rule down
            query = words[3]
            answer = self._apply(perm, shift, query)
            if answer not in words and all(answer != out for _, out in pairs):
                break
        self._perm, self._shift, self._answer = perm, shift, answer
        self._turn = 0
        self._done = False
        obs = (
            f"A cipher turns {n}-letter words into {n}-letter codes, always by the same rule:\n"
            + "\n".join(f"  {w} -> {out}" for w, out in pairs)
            + f"\nWhat is the code of {query}? Answer with \\boxed{{CODE}} in capital letters."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        guess = re.sub(r"[^A-Z]", "", found[-1].upper()) if found else ""
        if guess == self._answer:
            self._done = True
            return "Correct: the code matches.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if len(guess) != len(self._answer):
            return f"Give a code of {len(self._answer)} capital letters in \\boxed{{}}.", 0.0, False, truncated, {}
        return "That is not the code.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        return (
            f"Each letter is moved {self._shift} places forward in the alphabet (Z wraps to A), and "
            "the letters are rearranged by a fixed shuffle of positions: match each code letter to "
            "the example letter it came from."
        )
