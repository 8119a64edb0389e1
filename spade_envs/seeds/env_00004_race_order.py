"""Reconstruct the finishing order of a race from relational clues with a unique solution."""

import random
import re
from itertools import permutations

METADATA = {
    "name": "Race Order",
    "skill": "logical deduction",
    "description": "Seven runners, a list of clues about who finished ahead of whom, by how many places, and in which positions; deduce the complete finishing order (it is unique).",
    "tags": ["logic", "ordering", "constraint-satisfaction", "single-answer"],
}

RUNNERS = ["Amara", "Boris", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Leon"]
N = 7
ORDINAL = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh"]
ALL_ORDERS = list(permutations(range(N)))  # ALL_ORDERS[i][runner] = position (0 = first)


class RaceOrderEnv:
    """Single-answer deduction over the 5040 possible finishing orders."""

    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    @staticmethod
    def _holds(clue, pos):
        kind, a, b, k = clue
        if kind == "ahead":
            return pos[a] < pos[b]
        if kind == "gap":  # a exactly k places ahead of b
            return pos[b] - pos[a] == k
        if kind == "between":  # exactly k runners between a and b
            return abs(pos[a] - pos[b]) == k + 1
        if kind == "adjacent_not":
            return abs(pos[a] - pos[b]) != 1
        if kind == "not_top":
            return pos[a] >= k
        if kind == "parity":
            return pos[a] % 2 == k
        return pos[a] == k  # "at"

    def _text(self, clue):
        kind, a, b, k = clue
        x, y = self._names[a], self._names[b]
        if kind == "ahead":
            return f"{x} finished somewhere ahead of {y}."
        if kind == "gap":
            return f"{x} finished exactly {k} place{'s' if k > 1 else ''} ahead of {y}."
        if kind == "between" and k == 0:
            return f"{x} and {y} finished next to each other."
        if kind == "between":
            return f"Exactly {k} runner{'s' if k != 1 else ''} finished between {x} and {y}."
        if kind == "adjacent_not":
            return f"{x} and {y} did not finish next to each other."
        if kind == "not_top" and k == 1:
            return f"{x} did not win."
        if kind == "not_top":
            return f"{x} did not finish in the top {k}."
        if kind == "parity":
            return f"{x} finished in an {'odd' if k == 0 else 'even'}-numbered place."
        return f"{x} finished {ORDINAL[k]}."

    def _true_clue(self, rng, pos):
        a, b = rng.sample(range(N), 2)
        kind = rng.choice(["ahead", "ahead", "gap", "between", "adjacent_not", "not_top", "parity", "at"])
        if kind in ("ahead", "gap") and pos[a] > pos[b]:
            a, b = b, a
        if kind == "gap":
            return (kind, a, b, pos[b] - pos[a])
        if kind == "between":
            return (kind, a, b, abs(pos[a] - pos[b]) - 1)
        if kind == "not_top":
            return (kind, a, b, rng.randint(1, pos[a])) if pos[a] >= 2 else None
        if kind == "parity":
            return (kind, a, b, pos[a] % 2)
        if kind == "at":
            return (kind, a, b, pos[a])
        clue = (kind, a, b, 0)
        return clue if self._holds(clue, pos) else None

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._names = rng.sample(RUNNERS, N)
        pos = list(range(N))
        rng.shuffle(pos)
        pos = tuple(pos)
        clues, candidates, placed = [], ALL_ORDERS, 0
        while len(candidates) > 1:
            clue = self._true_clue(rng, pos)
            if clue is None or (clue[0] == "at" and placed >= 1):
                continue  # at most one clue that pins a runner to a place
            kept = [c for c in candidates if self._holds(clue, c)]
            if len(kept) == len(candidates) or (clue[0] == "at" and len(kept) * 7 < len(candidates)):
                continue
            placed += clue[0] == "at"
            clues.append(clue)
            candidates = kept
        self._pos = pos
        self._clues = clues
        order = sorted(range(N), key=lambda r: pos[r])
        self._answer = ", ".join(self._names[r] for r in order)
        self._turn = 0
        self._done = False
        listed = sorted(self._names)
        if listed == [self._names[r] for r in order]:
            listed.reverse()  # never show the runners in their finishing order
        obs = (
            f"Seven runners ran a race: {', '.join(listed)}. There were no ties.\n"
            + "\n".join(f"  {i + 1}. {self._text(c)}" for i, c in enumerate(clues))
            + "\nThese clues determine the finishing order completely. Give all seven names from "
            "first to last, separated by commas, as \\boxed{name, name, ...}."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        words = [w.capitalize() for w in re.findall(r"[A-Za-z]+", found[-1])] if found else []
        if ", ".join(words) == self._answer:
            self._done = True
            return "Correct: that is the official result.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if sorted(words) != sorted(self._names):
            return "List each of the seven runners exactly once, first to last.", 0.0, False, truncated, {}
        return "That order breaks at least one clue.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        middle = min(range(N), key=lambda r: abs(self._pos[r] - 3))
        return (
            f"{self._names[middle]} finished fourth. Start from the clues that fix distances "
            "(exact gaps, runners between) and place pairs as blocks, then use the ordering clues."
        )
