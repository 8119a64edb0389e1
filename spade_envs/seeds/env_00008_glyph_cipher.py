"""Induce a hidden letter-shuffling cipher from examples and apply it to a new word."""

import random
import re
import string
from spade_answers import loose_answer

METADATA = {
    "name": "Glyph Cipher",
    "skill": "pattern recognition",
    "description": "A cipher rearranges letter positions and shifts every letter along the alphabet; infer it from three examples and encode a new word.",
    "tags": ["cipher", "string-transformation", "induction", "single-answer"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: single letters shifted forward, the shift stated: restate the shift (a number, '
                                              'loose answer format); 1: three-letter words, a shift only; 2: '
                                              'four or five letters, one rearrangement and a shift; 3: six '
                                              'to eight letters, two rearrangements and a shift (the '
                                              'original); 4: ten to twelve letters, three rearrangements and '
                                              'a shift'},
                'word_length': {'type': ['integer', 'null'],
                                'minimum': 3,
                                'maximum': 12,
                                'default': None,
                                'description': 'letters per word (difficulty >= 1); null: set by difficulty'},
                'num_rearrangements': {'type': ['integer', 'null'],
                                       'minimum': 0,
                                       'maximum': 3,
                                       'default': None,
                                       'description': 'position rearrangements composed (difficulty >= 1); '
                                                      'null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> (word lengths, rearrangements composed); 0: the shift warm-up
LEVELS = {0: ((1, 1), 0), 1: ((3, 3), 0), 2: ((4, 5), 1), 3: ((6, 8), 2), 4: ((10, 12), 3)}


ABC = string.ascii_uppercase


class GlyphCipherEnv:
    """Single-answer induction; the hidden rule is a position permutation plus a Caesar shift."""

    def __init__(self, max_turns=2, difficulty=3, word_length=None, num_rearrangements=None, loose_answer=None,
                 **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        lengths, ops = LEVELS[difficulty]
        self._lengths = lengths if word_length is None else (word_length, word_length)
        self._n_ops = ops if num_rearrangements is None else num_rearrangements
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
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
        if self.difficulty == 0:
            return self._reset_shift(rng)
        while True:
            n = rng.randint(*self._lengths)
            ops = self._position_ops(n, rng.randint(1, n - 1))
            names = rng.sample(sorted(ops), self._n_ops)
            perm = list(ops[names[0]]) if names else list(range(n))
            for name in names[1:]:
                perm = [perm[i] for i in ops[name]]  # apply names[0], then names[1], ...
            shift = rng.randint(1, 25)
            words = ["".join(rng.sample(ABC, n)) for _ in range(4)]
            pairs = [(w, self._apply(perm, shift, w)) for w in words[:3]]
            if (perm == list(range(n)) and self._n_ops) or len(self._consistent(pairs, n)) != 1:
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

    def _reset_shift(self, rng):
        """Difficulty 0: two single-letter examples of a shift; the answer is the shift."""
        shift = rng.randint(2, 9)
        letters = rng.sample(ABC[:16], 2)
        self._perm, self._shift, self._answer = [0], shift, str(shift)
        self._turn, self._done = 0, False
        examples = "\n".join(f"  {a} -> {ABC[ABC.index(a) + shift]}" for a in letters)
        obs = (f"A cipher moves every letter the same number of places forward in the alphabet, {shift} places:\n"
               f"{examples}\nBy how many places does it move each letter? Answer with \\boxed{{number}}.")
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        if self.difficulty == 0:
            got = loose_answer(str(action)) if self._loose else (found[-1].strip() if len(found) == 1 else None)
            won = got is not None and got.strip() == self._answer
            truncated = not won and self._turn >= self.max_turns
            self._done = won or truncated
            return ("Correct." if won else "That is not the shift."), float(won), won, truncated, {}
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
        if self.difficulty == 0:
            return "The first line of the task says how far each letter moves."
        return (
            f"Each letter is moved {self._shift} places forward in the alphabet (Z wraps to A), and "
            "the letters are rearranged by a fixed shuffle of positions: match each code letter to "
            "the example letter it came from."
        )
