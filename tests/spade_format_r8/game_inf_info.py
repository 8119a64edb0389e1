"""SPARE self-play generated game: math.inf inside info."""

import math
import random
import re
from typing import Tuple


class NearestStationEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self._stations = {name: rng.randint(100, 999) for name in rng.sample(
            ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Hazel"], 4)}
        self._home = rng.randint(100, 999)
        self._best = min(self._stations, key=lambda s: (abs(self._stations[s] - self._home), s))
        self.turn_count = 0
        listing = "; ".join(f"{k} at km {v}" for k, v in self._stations.items())
        return (f"You live at km {self._home}. Stations: {listing}. Which station is nearest? "
                "Answer with \\boxed{name}.", {"best_distance": math.inf})

    def solution(self) -> str:
        return self._best

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([A-Za-z]+)\}", action)
        name = m.group(1).capitalize() if m else None
        distance = abs(self._stations[name] - self._home) if name in self._stations else math.inf
        info = {"distance": distance, "history": [float("nan")]}
        if name == self._best:
            return "Correct!", 1.0, True, False, info
        return "Not the nearest one.", 0.0, False, self.turn_count >= self.max_turns, info
