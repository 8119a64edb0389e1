"""Counting with inclusion-exclusion: lanterns lit by divisibility rules, with an exception."""

import math
import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Lantern Count",
    "skill": "mathematical reasoning",
    "description": "Count the integers up to N divisible by at least one of three numbers but not by a fourth, using inclusion-exclusion with least common multiples.",
    "tags": ["number-theory", "inclusion-exclusion", "counting", "single-answer"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: every lantern of 3-9 is lit (count them), loose answer '
                                              'format; 1: multiples of one number up to 40; 2: multiples of '
                                              'one of two numbers up to 300; 3: three divisors and an '
                                              'exception, up to 99999 (the original); 4: five divisors and '
                                              'an exception, up to ten million'},
                'num_divisors': {'type': ['integer', 'null'],
                                 'minimum': 1,
                                 'maximum': 6,
                                 'default': None,
                                 'description': 'how many divisibility rules light a lantern; null: set by '
                                                'difficulty'},
                'max_lanterns': {'type': ['integer', 'null'],
                                 'minimum': 9,
                                 'maximum': 10000000,
                                 'default': None,
                                 'description': 'largest number of lanterns; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 3,
                              'description': 'agent turns allowed'}}}

#: difficulty -> (divisibility rules, fewest and most lanterns, with an exception); 0 rules: all lit
LEVELS = {0: (0, 3, 9, False), 1: (1, 9, 40, False), 2: (2, 40, 300, False), 3: (3, 2000, 99999, True),
          4: (5, 10**6, 10**7, True)}


class LanternCountEnv:
    """Single-answer counting puzzle; a wrong guess is answered without any direction."""

    def __init__(self, max_turns=3, difficulty=3, num_divisors=None, max_lanterns=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        k, lo, hi, exclude = LEVELS[difficulty]
        self._k = k if num_divisors is None else num_divisors
        self._hi = hi if max_lanterns is None else max_lanterns
        self._lo = min(lo, self._hi)
        self._exclude = exclude and self._k >= 1 and difficulty > 0
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self._tries = 0
        self.reset()

    @staticmethod
    def _lcm(values):
        out = 1
        for v in values:
            out = out * v // math.gcd(out, v)
        return out

    def _count_union(self, divisors, n, extra=1):
        """How many k in 1..n are divisible by `extra` and by at least one of `divisors`."""
        total = 0
        for mask in range(1, 1 << len(divisors)):
            chosen = [d for i, d in enumerate(divisors) if mask >> i & 1]
            sign = 1 if len(chosen) % 2 else -1
            total += sign * (n // self._lcm(chosen + [extra]))
        return total

    def reset(self, seed=None):
        rng = random.Random(seed)
        if self.difficulty == 0 and self._k == 0:
            return self._reset_trivial(rng)
        while True:
            divisors = sorted(rng.sample(range(3, 19 if self._k <= 3 else 40), self._k))
            if any(b % a == 0 for a in divisors for b in divisors if a != b):
                continue  # a divisor of another one makes the rule redundant
            if not self._exclude:
                excluded = None
                break
            excluded = rng.randint(4, 30)
            if excluded in divisors or any(excluded % d == 0 for d in divisors):
                continue
            if all(math.gcd(excluded, d) == 1 for d in divisors):
                continue  # make the lcm matter: the excluded number shares a factor
            break
        n = rng.randint(self._lo, self._hi)
        union = self._count_union(divisors, n)
        self._answer = union - (self._count_union(divisors, n, extra=excluded) if excluded else 0)
        self._union = union
        self._turn = 0
        self._done = False
        rules = ", of ".join(map(str, divisors[:-1])) + (" or of " if len(divisors) > 1 else "") + str(divisors[-1])
        names = rng.choice([("lanterns", "lit"), ("lockers", "opened"), ("bells", "rung")])
        some = " (at least one of them)" if len(divisors) > 1 else ""
        unless = (f", EXCEPT that no {names[0][:-1]} whose number is a multiple of {excluded} is ever {names[1]}"
                  if excluded else "")
        obs = (
            f"At a festival there are {n} {names[0]}, numbered 1 to {n}.\n"
            f"A {names[0][:-1]} is {names[1]} when its number is a multiple of {rules}{some}{unless}.\n"
            f"How many {names[0]} are {names[1]}? Answer with \\boxed{{count}}."
        )
        if self._answer < 2 and self._tries < 100:  # 0 and 1 are the garbage guesses: never the answer
            self._tries += 1
            return self.reset(seed=rng.random())
        self._tries = 0
        return obs, {}

    def _reset_trivial(self, rng):
        n = rng.randint(3, 9)
        names = rng.choice([("lanterns", "lit"), ("lockers", "opened"), ("bells", "rung")])
        self._answer, self._union, self._turn, self._done = n, n, 0, False
        obs = (f"At a festival there are {n} {names[0]}, numbered 1 to {n}. Every one of them is {names[1]}.\n"
               f"How many {names[0]} are {names[1]}? Answer with \\boxed{{count}}.")
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{\s*([0-9][0-9,]*)\s*\}", str(action))
        if not found and self._loose:
            loose = loose_answer(str(action))
            found = [loose] if loose is not None and re.fullmatch(r"[0-9]+", loose) else []
        guess = int(found[-1].replace(",", "")) if found else None
        if guess == self._answer:
            self._done = True
            return "Correct: that is exactly the number.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if guess is None:
            return "Give the count as \\boxed{number}.", 0.0, False, truncated, {}
        return "That count is not right.", 0.0, False, truncated, {}

    def solution(self):
        return str(self._answer)

    def hint(self):
        return (
            "Use inclusion-exclusion with least common multiples (not products: the numbers share "
            f"factors). Before the exception is applied, {self._union} numbers qualify; then subtract "
            "those that are also multiples of the excluded number, again by inclusion-exclusion on "
            "lcm(excluded, each combination)."
        )
