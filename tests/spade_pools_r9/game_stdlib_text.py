"""SPADE self-play generated game"""

import difflib
import random
import re
import textwrap
import unicodedata
from typing import Tuple


class SpellingRepairEnv:
    """Find the dictionary word closest to a misspelt one (difflib), accents folded (unicodedata)."""

    WORDS = ["lantern", "harbour", "meadow", "crystal", "orchard", "thimble", "gazette", "quarrel", "saddle", "walnut"]

    def __init__(self, max_turns=3, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._target = ""
        self._typo = ""

    def _fold(self, text):
        return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        self._target = rng.choice(self.WORDS)
        letters = list(self._target)
        i = rng.randrange(len(letters))
        letters[i] = {"a": "\u00e1", "e": "\u00e9", "o": "\u00f6"}.get(letters[i], letters[i] + letters[i])
        self._typo = "".join(letters)
        text = (f"The word '{self._typo}' is misspelt. Which of these is it? " + ", ".join(self.WORDS)
                + ". Answer with \\boxed{word}.")
        return "\n".join(textwrap.wrap(text, width=72)), {}

    def solution(self) -> str:
        return difflib.get_close_matches(self._fold(self._typo), self.WORDS, n=1, cutoff=0.0)[0]

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        guess = self._fold(m.group(1).strip()) if m else ""
        if guess == self._target:
            return "Repaired!", 1.0, True, False, {}
        return "Not that word.", 0.0, False, self.turn_count >= self.max_turns, {}
