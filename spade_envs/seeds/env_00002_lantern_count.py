"""Counting with inclusion-exclusion: lanterns lit by divisibility rules, with an exception."""

import math
import random
import re

METADATA = {
    "name": "Lantern Count",
    "skill": "mathematical reasoning",
    "description": "Count the integers up to N divisible by at least one of three numbers but not by a fourth, using inclusion-exclusion with least common multiples.",
    "tags": ["number-theory", "inclusion-exclusion", "counting", "single-answer"],
}


class LanternCountEnv:
    """Single-answer counting puzzle; a wrong guess is answered without any direction."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
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
        while True:
            divisors = sorted(rng.sample(range(3, 19), 3))
            if any(b % a == 0 for a in divisors for b in divisors if a != b):
                continue  # a divisor of another one makes the rule redundant
            excluded = rng.randint(4, 30)
            if excluded in divisors or any(excluded % d == 0 for d in divisors):
                continue
            if all(math.gcd(excluded, d) == 1 for d in divisors):
                continue  # make the lcm matter: the excluded number shares a factor
            break
        n = rng.randint(2000, 99999)
        union = self._count_union(divisors, n)
        self._answer = union - self._count_union(divisors, n, extra=excluded)
        self._union = union
        self._turn = 0
        self._done = False
        a, b, c = divisors
        names = rng.choice([("lanterns", "lit"), ("lockers", "opened"), ("bells", "rung")])
        obs = (
            f"At a festival there are {n} {names[0]}, numbered 1 to {n}.\n"
            f"A {names[0][:-1]} is {names[1]} when its number is a multiple of {a}, of {b} or of {c} "
            f"(at least one of them), EXCEPT that no {names[0][:-1]} whose number is a multiple of "
            f"{excluded} is ever {names[1]}.\n"
            f"How many {names[0]} are {names[1]}? Answer with \\boxed{{count}}."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{\s*([0-9][0-9,]*)\s*\}", str(action))
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
