"""SPARE self-play generated game: a word ladder whose solution() is an arrow path."""

import random
import re
from typing import Tuple

LADDERS = [
    ["RAIL", "HAIL", "HALL"],
    ["COLD", "CORD", "WORD"],
    ["LAMP", "LIMP", "LIME"],
    ["BOAT", "BOLT", "BELT"],
    ["MILK", "SILK", "SULK"],
    ["FISH", "DISH", "DASH"],
]
WORDS = {w for ladder in LADDERS for w in ladder} | {"HAIR", "BAIL", "MAIL", "CARD", "LIMB", "BEAT", "SILT"}


class WordLadderEnv:
    def __init__(self, max_turns=10, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None) -> Tuple[str, dict]:
        ladder = random.Random(seed).choice(LADDERS)
        self._start, self._target = ladder[0], ladder[-1]
        self._path = list(ladder)
        self._current = self._start
        self.turn_count = 0
        return self._obs("Change one letter per move."), {}

    def _obs(self, note):
        return (f"{note} Transform {self._start} into {self._target}, one letter at a time; every "
                f"step must be a real word. Current word: {self._current}. Send each word as \\boxed{{WORD}}.")

    def solution(self) -> str:
        return " -> ".join(self._path)

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([A-Za-z]+)\}", action)
        truncated = self.turn_count >= self.max_turns
        if not m:
            return self._obs("No word found."), 0.0, False, truncated, {}
        word = m.group(1).upper()
        diff = sum(a != b for a, b in zip(word, self._current)) if len(word) == len(self._current) else 9
        if word not in WORDS or diff != 1:
            return self._obs(f"{word} is not one letter away from {self._current} in the word list."), 0.0, False, truncated, {}
        self._current = word
        if word == self._target:
            return "Solved! You reached the target word.", 1.0, True, False, {}
        return self._obs("Good move."), 0.0, False, truncated, {}
