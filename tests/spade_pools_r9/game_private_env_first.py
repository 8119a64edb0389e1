"""SPADE self-play generated game"""

import random
import re
from typing import Tuple


class _BeaconTallyEnv:
    """Add up the beacons lit on each hill (SPADE plays this class: the first *Env)."""

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._hills = []

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._hills = [rng.randint(1, 9) for _ in range(rng.randint(3, 6))]
        return (f"Beacons lit per hill: {self._hills}. How many beacons burn in all? "
                "Answer with \\boxed{n}."), {}

    def solution(self) -> str:
        return str(sum(self._hills))

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{(\d+)\}", action)
        if m and int(m.group(1)) == sum(self._hills):
            return "All beacons counted.", 1.0, True, False, {}
        return "Count again.", 0.0, False, self.turn_count >= self.max_turns, {}


class LanternEnv(_BeaconTallyEnv):
    """A lantern puzzle that SPADE never plays (it comes second)."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        obs, info = super().reset(seed)
        return "Lanterns: " + obs, info
