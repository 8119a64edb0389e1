"""Knights always tell the truth, knaves always lie: who is who on the island?"""

import random
import re
from itertools import product
from spade_answers import loose_answer

METADATA = {
    "name": "Knights and Knaves",
    "skill": "logical deduction",
    "description": "Six or seven islanders make statements about each other; knights tell the truth and knaves lie. Deduce every islander's type (the statements admit exactly one consistent assignment).",
    "tags": ["logic", "knights-and-knaves", "constraint-satisfaction", "single-answer"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: a guide who never lies says how many of the islanders are '
                                              'knights: restate that number (loose answer format); 1: three '
                                              'islanders; 2: four or five; 3: six or seven (the original); 4: '
                                              'nine or ten islanders'},
                'num_islanders': {'type': ['integer', 'null'],
                                  'minimum': 3,
                                  'maximum': 10,
                                  'default': None,
                                  'description': 'islanders to unmask (difficulty >= 1); null: set by '
                                                 'difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> numbers of islanders (0: the read-off warm-up)
LEVELS = {0: [3], 1: [3], 2: [4, 5], 3: [6, 7], 4: [9, 10]}


WORDS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
NAMES = ["Ada", "Bram", "Cleo", "Dov", "Esme", "Finn", "Gus", "Hal", "Iris", "Jude", "Kai", "Lena"]


class KnightsKnavesEnv:
    """Single-answer deduction; the answer is a string of K/N letters, one per islander."""

    def __init__(self, max_turns=2, difficulty=3, num_islanders=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._sizes = LEVELS[difficulty] if num_islanders is None else [num_islanders]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    # A statement is a tuple (kind, people, k); _holds evaluates it in an assignment
    # (a tuple of booleans, True = knight).
    @staticmethod
    def _holds(stmt, world):
        kind, ppl, k = stmt
        vals = [world[p] for p in ppl]
        if kind == "knight":
            return vals[0]
        if kind == "knave":
            return not vals[0]
        if kind == "same":
            return vals[0] == vals[1]
        if kind == "differ":
            return vals[0] != vals[1]
        if kind == "exactly":
            return sum(vals) == k
        if kind == "atleast":
            return sum(vals) >= k
        if kind == "implies":  # if ppl[0] is a knight then ppl[1] is a knave
            return (not vals[0]) or (not vals[1])
        return vals[0] or vals[1]  # "either": at least one of the two is a knight

    def _text(self, stmt):
        kind, ppl, k = stmt
        n = [self._names[p] for p in ppl]
        if kind == "knight":
            return f"{n[0]} is a knight."
        if kind == "knave":
            return f"{n[0]} is a knave."
        if kind == "same":
            return f"{n[0]} and {n[1]} are of the same kind."
        if kind == "differ":
            return f"{n[0]} and {n[1]} are of different kinds."
        if kind == "implies":
            return f"If {n[0]} is a knight, then {n[1]} is a knave."
        if kind == "either":
            return f"{n[0]} or {n[1]} is a knight (maybe both)."
        group = f"{n[0]}, {n[1]} and {n[2]}"
        if kind == "exactly":
            return f"Exactly {k} of {group} {'is a knight' if k == 1 else 'are knights'}."
        return f"At least {k} of {group} {'is a knight' if k == 1 else 'are knights'}."

    def _random_statement(self, rng, speaker, n):
        kind = rng.choice(["knight", "knave", "same", "differ", "exactly", "atleast", "implies", "either"])
        others = [p for p in range(n) if p != speaker]
        if kind in ("knight", "knave"):
            return (kind, (rng.choice(others),), 0)
        if kind in ("exactly", "atleast"):
            return (kind, tuple(rng.sample(range(n), 3)), rng.randint(1, 2))
        return (kind, tuple(rng.sample(range(n), 2)), 0)

    def reset(self, seed=None):
        rng = random.Random(seed)
        if self.difficulty == 0:
            return self._reset_count(rng)
        n = rng.choice(self._sizes)
        self._names = rng.sample(NAMES, n)
        low = 2 if n >= 4 else 1
        while True:
            truth = tuple(rng.random() < 0.5 for _ in range(n))
            if low <= sum(truth) <= n - low:
                break
        worlds = list(product([True, False], repeat=n))
        said = []
        speakers = list(range(n))
        rng.shuffle(speakers)
        while len(worlds) > 1 or len(said) < n:
            speaker = speakers[len(said) % n] if len(said) < n else rng.randrange(n)
            stmt = self._random_statement(rng, speaker, n)
            if self._holds(stmt, truth) != truth[speaker]:
                continue  # a knight must say something true, a knave something false
            kept = [w for w in worlds if self._holds(stmt, w) == w[speaker]]
            if len(said) >= n and len(kept) == len(worlds):
                continue  # extra statements must narrow the possibilities
            worlds = kept
            said.append((speaker, stmt))
        self._truth = truth
        self._answer = "".join("K" if t else "N" for t in truth)
        self._turn = 0
        self._done = False
        lines = [f"  {self._names[s]} says: \"{self._text(st)}\"" for s, st in said]
        self._statements = said
        obs = (
            "On this island every inhabitant is either a knight (always tells the truth) or a "
            f"knave (always lies). You meet {n} islanders: {', '.join(self._names)}.\n"
            + "\n".join(lines)
            + "\nExactly one assignment of types is consistent with everything said. Answer with "
            f"one letter per islander, in the order {', '.join(self._names)}: K for knight, N for "
            "knave. For example, with three islanders: \\boxed{KNK}."
        )
        return obs, {}

    def _reset_count(self, rng):
        """Difficulty 0: a truthful guide states the number of knights; the task is to restate it."""
        n = rng.randint(3, 9)
        self._names = rng.sample(NAMES, n)
        knights = rng.randint(1, n - 1)
        self._truth = tuple(p < knights for p in range(n))
        self._answer = str(knights)
        self._statements = []
        self._turn, self._done = 0, False
        obs = (
            "On this island every inhabitant is either a knight (always tells the truth) or a "
            f"knave (always lies). You meet {WORDS[n]} islanders: {', '.join(self._names)}.\n"
            f"A guide who never lies tells you: \"Exactly {knights} of them are knights.\"\n"
            "How many of them are knights? Answer with \\boxed{number}."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        if self.difficulty == 0:
            loose = loose_answer(str(action)) if self._loose else (found[-1].strip() if len(found) == 1 else None)
            won = loose is not None and loose.strip() == self._answer
            truncated = not won and self._turn >= self.max_turns
            self._done = won or truncated
            return ("Correct." if won else "That is not the number of knights."), float(won), won, truncated, {}
        guess = re.sub(r"[^KN]", "", found[-1].upper()) if found else ""
        if guess == self._answer:
            self._done = True
            return "Correct: you have unmasked every islander.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if len(guess) != len(self._answer):
            return f"Give exactly {len(self._answer)} letters (K or N) in \\boxed{{}}.", 0.0, False, truncated, {}
        return "That assignment contradicts what was said.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0:
            return "The guide never lies: take its word for the count."
        p = self._statements[-1][0]
        kind = "knight" if self._truth[p] else "knave"
        return (
            f"{self._names[p]} is a {kind}. Assume a type for one islander, follow what their "
            "statement forces, and discard any assumption that leads to a contradiction."
        )
