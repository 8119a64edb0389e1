"""Reconstruct the finishing order of a race from relational clues with a unique solution."""

import random
import re
from itertools import permutations
from spade_answers import loose_answer

METADATA = {
    "name": "Race Order",
    "skill": "logical deduction",
    "description": "Seven runners, a list of clues about who finished ahead of whom, by how many places, and in which positions; deduce the complete finishing order (it is unique).",
    "tags": ["logic", "ordering", "constraint-satisfaction", "single-answer"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': "0: the results board gives one runner's place: restate it (a "
                                              'number, loose answer format); 1: three runners; 2: four or '
                                              'five; 3: seven runners (the original); 4: eight runners'},
                'num_runners': {'type': ['integer', 'null'],
                                'minimum': 3,
                                'maximum': 8,
                                'default': None,
                                'description': 'runners to order (difficulty >= 1); null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> numbers of runners (0: the read-off warm-up)
LEVELS = {0: [7], 1: [3], 2: [4, 5], 3: [7], 4: [8]}
WORDS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


RUNNERS = ["Amara", "Boris", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Leon"]
N = 7
ORDINAL = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
ALL_ORDERS = list(permutations(range(N)))  # ALL_ORDERS[i][runner] = position (0 = first)


class RaceOrderEnv:
    """Single-answer deduction over the 5040 possible finishing orders."""

    def __init__(self, max_turns=2, difficulty=3, num_runners=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._sizes = LEVELS[difficulty] if num_runners is None else [num_runners]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
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
        a, b = rng.sample(range(self._n), 2)
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
        if self.difficulty == 0:
            return self._reset_board(rng)
        self._n = n = rng.choice(self._sizes) if len(self._sizes) > 1 else self._sizes[0]
        self._names = rng.sample(RUNNERS, n)
        pos = list(range(n))
        rng.shuffle(pos)
        pos = tuple(pos)
        clues, candidates, placed = [], ALL_ORDERS if n == N else list(permutations(range(n))), 0
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
        order = sorted(range(n), key=lambda r: pos[r])
        self._answer = ", ".join(self._names[r] for r in order)
        self._turn = 0
        self._done = False
        listed = sorted(self._names)
        if listed == [self._names[r] for r in order]:
            listed.reverse()  # never show the runners in their finishing order
        obs = (
            f"{WORDS[n].capitalize()} runners ran a race: {', '.join(listed)}. There were no ties.\n"
            + "\n".join(f"  {i + 1}. {self._text(c)}" for i, c in enumerate(clues))
            + "\nThese clues determine the finishing order completely. Give all {WORDS[n]} names from "
            "first to last, separated by commas, as \\boxed{name, name, ...}."
        )
        return obs, {}

    def _reset_board(self, rng):
        """Difficulty 0: the results board states one runner's place; the task is to restate it."""
        self._n = N
        self._names = rng.sample(RUNNERS, N)
        pos = list(range(N))
        rng.shuffle(pos)
        a = rng.randrange(N)
        self._pos, self._clues = tuple(pos), [("at", a, a, pos[a])]
        self._answer = str(pos[a] + 1)
        self._turn, self._done = 0, False
        obs = (
            f"Seven runners ran a race: {', '.join(sorted(self._names))}. There were no ties.\n"
            f"The results board says: {self._names[a]} finished in place number {pos[a] + 1}.\n"
            f"In which place did {self._names[a]} finish? Answer with \\boxed{{place number}}."
        )
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
            return ("Correct." if won else "That is not the place."), float(won), won, truncated, {}
        words = [w.capitalize() for w in re.findall(r"[A-Za-z]+", found[-1])] if found else []
        if ", ".join(words) == self._answer:
            self._done = True
            return "Correct: that is the official result.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if sorted(words) != sorted(self._names):
            return f"List each of the {WORDS[self._n]} runners exactly once, first to last.", 0.0, False, truncated, {}
        return "That order breaks at least one clue.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0:
            return "The results board is right: read the place off it."
        middle = min(range(self._n), key=lambda r: abs(self._pos[r] - self._n // 2))
        return (
            f"{self._names[middle]} finished {ORDINAL[self._pos[middle]]}. Start from the clues that fix distances "
            "(exact gaps, runners between) and place pairs as blocks, then use the ordering clues."
        )
