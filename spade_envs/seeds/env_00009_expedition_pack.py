"""0/1 knapsack: pack the most valuable expedition load within a weight limit."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Expedition Pack",
    "skill": "optimization",
    "description": "Choose a subset of items whose total weight fits the limit and whose total value is as large as possible (0/1 knapsack; greedy by value per kilo is not optimal).",
    "tags": ["knapsack", "combinatorial-optimization", "dynamic-programming", "multi-turn"],
}

ITEMS = ["tent", "stove", "rope", "lantern", "radio", "medkit", "tarp", "axe", "filter", "camera",
         "compass", "drone", "skis", "flares", "hammock", "telescope", "kayak", "snowshoes"]
MORE_ITEMS = ["sled", "whistle", "mirror", "blanket", "map", "knife", "helmet", "gloves"]


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: two items, only one fits and the text says so with its '
                                              'value: restate the best value (loose answer format); 1: three or four light items; 2: six or '
                                              'seven items; 3: ten to twelve items where greedy packing '
                                              'falls short (the original); 4: twenty to twenty-four items, '
                                              'greedy falls short'},
                'num_items': {'type': ['integer', 'null'],
                              'minimum': 2,
                              'maximum': 26,
                              'default': None,
                              'description': 'items to choose from; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 3,
                              'description': 'agent turns allowed'}}}


#: difficulty -> (fewest and most items, the greedy packing must fall short)
LEVELS = {0: ((2, 2), False), 1: ((3, 4), False), 2: ((6, 7), False), 3: ((10, 12), True), 4: ((20, 24), True)}


class ExpeditionPackEnv:
    """Any optimal selection wins; a feasible but worse one is told its value."""

    def __init__(self, max_turns=3, difficulty=3, num_items=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        sizes, self._beat_greedy = LEVELS[difficulty]
        self._sizes = sizes if num_items is None else (num_items, num_items)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    @staticmethod
    def _best(weights, values, cap):
        """Dynamic programming over capacity: (best value, chosen indices)."""
        best = [[0] * (cap + 1)]
        for w, v in zip(weights, values):
            prev = best[-1]
            best.append([max(prev[c], prev[c - w] + v) if c >= w else prev[c] for c in range(cap + 1)])
        chosen, c = [], cap
        for i in range(len(weights) - 1, -1, -1):
            if best[i + 1][c] != best[i][c]:
                chosen.append(i)
                c -= weights[i]
        return best[-1][cap], sorted(chosen)

    @staticmethod
    def _greedy(weights, values, cap):
        total, load = 0, 0
        for i in sorted(range(len(weights)), key=lambda i: -values[i] / weights[i]):
            if load + weights[i] <= cap:
                load += weights[i]
                total += values[i]
        return total

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            n = rng.randint(*self._sizes)
            names = rng.sample(ITEMS if n <= len(ITEMS) else ITEMS + MORE_ITEMS, n)
            weights = [rng.randint(2, 19 if n > 2 else 12) for _ in range(n)]
            values = [max(5, w * rng.randint(2, 6) + rng.randint(-8, 8)) for w in weights]
            cap = sum(weights) * rng.randint(35, 50) // 100
            if n == 2:  # the warm-up: exactly one of the two items fits
                cap = rng.randint(min(weights), max(weights) - 1) if weights[0] != weights[1] else 0
            best, chosen = self._best(weights, values, cap)
            if not chosen or (n > 2 and len(chosen) < 2):
                continue  # one chosen item would be its own name, shown in the list
            if not self._beat_greedy or self._greedy(weights, values, cap) < best:
                break  # the obvious greedy packing must fall short
        self._names, self._weights, self._values, self._cap = names, weights, values, cap
        self._best_value = best
        self._answer = ", ".join(names[i] for i in chosen) if n > 2 else str(best)
        self._turn = 0
        self._done = False
        rows = [f"  {nm:<10} weight {w:>2} kg, value {v:>3}" for nm, w, v in zip(names, weights, values)]
        if n == 2:
            obs = (f"You are packing for an expedition. The pack holds at most {cap} kg. Available items "
                   "(one of each):\n" + "\n".join(rows)
                   + (f"\nOnly the {names[chosen[0]]} fits, so the best load is the {names[chosen[0]]} alone, "
                      f"with a value of {best}." if self.difficulty == 0 else "")
                   + "\nWhat is the largest total value you can carry without exceeding the weight limit? "
                   "Answer with \\boxed{value}.")
            return obs, {}
        obs = (
            f"You are packing for an expedition. The pack holds at most {cap} kg. Available items "
            "(one of each):\n" + "\n".join(rows)
            + "\nChoose the items that give the largest possible total value without exceeding the "
            "weight limit. Answer with the item names separated by commas, as \\boxed{item, item, ...}."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        truncated = self._turn >= self.max_turns
        words = [w.strip().lower() for w in re.split(r"[,;\n]| and ", found[-1])] if found else []
        if len(self._names) == 2:  # the warm-up asks for the best value
            got = loose_answer(str(action)) if self._loose else (found[-1].strip() if len(found) == 1 else None)
            won = got is not None and got.strip() == self._answer
            self._done = won or truncated
            return ("Optimal." if won else "That is not the best value."), float(won), won, truncated and not won, {}
        words = [w for w in words if w]
        truncated = self._turn >= self.max_turns
        self._done = truncated
        unknown = [w for w in words if w not in self._names]
        if not words or unknown or len(set(words)) != len(words):
            why = f"unknown item '{unknown[0]}'" if unknown else "list each chosen item once"
            return f"Invalid selection ({why}). Use the item names, comma-separated.", 0.0, False, truncated, {}
        idx = [self._names.index(w) for w in words]
        weight = sum(self._weights[i] for i in idx)
        value = sum(self._values[i] for i in idx)
        if weight > self._cap:
            return f"Too heavy: {weight} kg is over the {self._cap} kg limit.", 0.0, False, truncated, {}
        if value == self._best_value:
            self._done = True
            return f"Optimal: {weight} kg carrying a value of {value}.", 1.0, True, False, {}
        return f"That fits ({weight} kg) with value {value}, but a more valuable load exists.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0:
            return "The line under the table says which item fits."
        return (
            f"The best achievable total value is {self._best_value}. Packing by value per kilo leaves "
            "capacity unused here; compare swapping one heavy item for two lighter ones, or use a "
            "table of best value per capacity."
        )
