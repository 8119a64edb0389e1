"""0/1 knapsack: pack the most valuable expedition load within a weight limit."""

import random
import re

METADATA = {
    "name": "Expedition Pack",
    "skill": "optimization",
    "description": "Choose a subset of items whose total weight fits the limit and whose total value is as large as possible (0/1 knapsack; greedy by value per kilo is not optimal).",
    "tags": ["knapsack", "combinatorial-optimization", "dynamic-programming", "multi-turn"],
}

ITEMS = ["tent", "stove", "rope", "lantern", "radio", "medkit", "tarp", "axe", "filter", "camera",
         "compass", "drone", "skis", "flares", "hammock", "telescope", "kayak", "snowshoes"]


class ExpeditionPackEnv:
    """Any optimal selection wins; a feasible but worse one is told its value."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
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
            n = rng.randint(10, 12)
            names = rng.sample(ITEMS, n)
            weights = [rng.randint(2, 19) for _ in range(n)]
            values = [max(5, w * rng.randint(2, 6) + rng.randint(-8, 8)) for w in weights]
            cap = sum(weights) * rng.randint(35, 50) // 100
            best, chosen = self._best(weights, values, cap)
            if self._greedy(weights, values, cap) < best:
                break  # the obvious greedy packing must fall short
        self._names, self._weights, self._values, self._cap = names, weights, values, cap
        self._best_value = best
        self._answer = ", ".join(names[i] for i in chosen)
        self._turn = 0
        self._done = False
        rows = [f"  {nm:<10} weight {w:>2} kg, value {v:>3}" for nm, w, v in zip(names, weights, values)]
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
        words = [w.strip().lower() for w in re.split(r"[,;\n]| and ", found[-1])] if found else []
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
        return (
            f"The best achievable total value is {self._best_value}. Packing by value per kilo leaves "
            "capacity unused here; compare swapping one heavy item for two lighter ones, or use a "
            "table of best value per capacity."
        )
