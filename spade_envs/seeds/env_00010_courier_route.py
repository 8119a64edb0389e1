"""Shortest round trip for a courier: a small travelling-salesman instance."""

import random
import re
from itertools import permutations
from spade_answers import loose_answer

METADATA = {
    "name": "Courier Route",
    "skill": "optimization",
    "description": "Given road lengths between a depot and six stops, find the length of the shortest round trip that visits every stop once and returns (nearest-neighbour is not optimal).",
    "tags": ["tsp", "routing", "combinatorial-optimization", "single-answer"],
}

TOWNS = ["Alder", "Birch", "Cedar", "Dunmore", "Elmwood", "Fenwick", "Glenn", "Harbor", "Ivy", "Juniper", "Kestrel"]


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one stop, roads of 2-9 km, the text adds up the trip there '
                                              'and back: restate its length (loose answer format); 1: two stops (one round trip); 2: four '
                                              'stops; 3: six stops where nearest-neighbour fails (the '
                                              'original); 4: eight stops, nearest-neighbour fails'},
                'num_stops': {'type': ['integer', 'null'],
                              'minimum': 1,
                              'maximum': 7,
                              'default': None,
                              'description': 'stops besides the Depot; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 3,
                              'description': 'agent turns allowed'}}}

#: difficulty -> stops besides the Depot
LEVELS = {0: 1, 1: 2, 2: 4, 3: 6, 4: 7}
STOPS = {1: "the one stop", 2: "each of the two stops", 3: "each of the three stops", 4: "each of the four stops",
         5: "each of the five stops", 6: "each of the six stops", 7: "each of the seven stops",
         8: "each of the eight stops"}


class CourierRouteEnv:
    """Single-answer optimisation; the answer is the optimal tour length."""

    def __init__(self, max_turns=3, difficulty=3, num_stops=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._stops = LEVELS[difficulty] if num_stops is None else num_stops
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def _length(self, tour):
        return sum(self._d[tour[i]][tour[i + 1]] for i in range(len(tour) - 1))

    def _nearest_neighbour(self, n):
        tour, left = [0], set(range(1, n))
        while left:
            nxt = min(sorted(left), key=lambda j: self._d[tour[-1]][j])
            tour.append(nxt)
            left.discard(nxt)
        return self._length(tour + [0])

    def reset(self, seed=None):
        rng = random.Random(seed)
        n = self._stops + 1
        low, high = (2, 9) if self.difficulty == 0 else (12, 95)
        while True:
            d = [[0] * n for _ in range(n)]
            for i in range(n):
                for j in range(i + 1, n):
                    d[i][j] = d[j][i] = rng.randint(low, high)
            self._d = d
            best, best_tour = None, None
            for perm in permutations(range(1, n)):
                if perm[0] > perm[-1]:
                    continue  # each round trip once (not also reversed)
                length = self._length((0,) + perm + (0,))
                if best is None or length < best:
                    best, best_tour = length, perm
            shown = {d[i][j] for i in range(n) for j in range(n)}
            if (n < 5 or self._nearest_neighbour(n) > best) and best not in shown:
                break
        self._names = ["Depot"] + rng.sample(TOWNS, n - 1)
        self._best, self._tour = best, (0,) + best_tour + (0,)
        self._answer = str(best)
        self._turn = 0
        self._done = False
        header = " " * 9 + "".join(f"{nm[:7]:>8}" for nm in self._names)
        rows = [f"{self._names[i][:7]:<9}" + "".join(f"{d[i][j]:>8}" for j in range(n)) for i in range(n)]
        obs = (
            f"A courier leaves the Depot, must visit {STOPS[n - 1]} exactly once, and return to "
            "the Depot. Road lengths in km (the table is symmetric):\n"
            + header + "\n" + "\n".join(rows)
            + (f"\nThe only round trip, there and back, is {best} km long." if self.difficulty == 0 and n == 2 else "")
            + "\nWhat is the length of the SHORTEST possible round trip? Answer with \\boxed{km}."
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{\s*(\d+)\s*(?:km)?\s*\}", str(action))
        if self._loose and not re.search(r"\\boxed\{", str(action)):
            loose = loose_answer(str(action))
            found = [loose] if loose is not None and loose.isdigit() else []
        guess = int(found[-1]) if found else None
        if guess == self._best:
            self._done = True
            return "Correct: no round trip is shorter.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if guess is None:
            return "Give the length as a whole number of km, \\boxed{km}.", 0.0, False, truncated, {}
        return "That is not the shortest round-trip length.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        t = self._tour
        if len(t) < 6:
            return "Add up the roads of the round trip; with so few stops there is only one way round."
        first, later = self._names[t[1]], (self._names[t[3]], self._names[t[4]])
        return (
            f"An optimal round trip drives directly between the Depot and {first}, and between "
            f"{later[0]} and {later[1]}. Nearest-neighbour greedy is a trap here: compare complete "
            "tours, fixing the Depot as start and pruning any partial route already too long."
        )
