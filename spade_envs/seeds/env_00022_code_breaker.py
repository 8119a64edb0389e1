"""Code breaker (Mastermind): deduce a hidden colour code from exact/partial-match feedback."""

import random
import re

METADATA = {
    "name": "Code Breaker",
    "skill": "multi-step game",
    "description": "Guess a hidden code of coloured pegs; each guess is scored with exact and colour-only matches.",
    "tags": ["multi-step game", "logical deduction", "pattern recognition", "hidden information"],
}

COLOURS = "RGBYOPWK"
NAMES = {"red": "R", "green": "G", "blue": "B", "yellow": "Y", "orange": "O", "purple": "P", "white": "W",
         "black": "K"}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one peg of three colours, the code stated (loose answer format: a colour '
                                              'letter or name); 1: two pegs, four colours; 2: three pegs, '
                                              'five colours; 3: four or five pegs of six or seven colours '
                                              '(the original); 4: six pegs of eight colours'},
                'code_length': {'type': ['integer', 'null'],
                                'minimum': 1,
                                'maximum': 6,
                                'default': None,
                                'description': 'pegs in the code; null: set by difficulty'},
                'num_colours': {'type': ['integer', 'null'],
                                'minimum': 2,
                                'maximum': 8,
                                'default': None,
                                'description': 'colours a peg may have; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 10,
                              'description': 'agent turns allowed'}}}

#: difficulty -> (pegs, colours); None: the original mix (four or five pegs of six or seven colours)
LEVELS = {0: (1, 3), 1: (2, 4), 2: (3, 5), 3: None, 4: (6, 8)}


class CodeBreakerEnv:
    """One guess per step as ``\\boxed{RGBY}``. Win: the exact code within the guess budget."""

    def __init__(self, max_turns=10, difficulty=3, code_length=None, num_colours=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._level = LEVELS[difficulty]
        self._fixed = (code_length, num_colours)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        if self._level is None:  # the original mix
            self._length = rng.choice([4, 4, 5])
            self._palette = COLOURS[: rng.choice([6, 7])] if self._length == 4 else COLOURS[:6]
        else:
            self._length, self._palette = self._level[0], COLOURS[: self._level[1]]
        if self._fixed[0] is not None:
            self._length = self._fixed[0]
        if self._fixed[1] is not None:
            self._palette = COLOURS[: self._fixed[1]]
        self._code = "".join(rng.choice(self._palette) for _ in range(self._length))
        self._guesses = []
        self._turn = 0
        self._done = False
        obs = (
            f"A lock hides a code of {self._length} pegs, each one of the colours {', '.join(self._palette)} "
            f"(colours may repeat). You have {self.max_turns} guesses. After each guess you learn how many "
            "pegs are the right colour in the right place (exact) and how many more are the right colour in "
            f"the wrong place (partial). Guess by writing {self._length} colour letters inside \\boxed{{}}."
        )
        if self.difficulty == 0:  # a read-off: the code is worked out
            obs += f"\nWorked out from the lock's markings: the code is {self._code}. The answer is \\boxed{{{self._code}}}"
        return obs, {}

    def _score(self, guess):
        exact = sum(g == c for g, c in zip(guess, self._code))
        common = sum(min(guess.count(x), self._code.count(x)) for x in self._palette)
        return exact, common - exact

    def step(self, action):
        if self._done:
            return "The episode is over; call reset().", 0.0, True, False, {}
        self._turn += 1
        truncated = self._turn >= self.max_turns
        m = re.search(r"\\boxed\{([^{}]*)\}", str(action))
        guess = re.sub(r"[\s,\-]", "", m.group(1)).upper() if m else ""
        if self._loose and not m and self._length == 1:  # a colour letter or name in a plain reply
            named = [NAMES.get(w.lower(), w.upper()) for w in re.findall(r"\b[A-Za-z]+\b", str(action))
                     if w.lower() in NAMES or (len(w) == 1 and w.upper() in self._palette and w.isupper())]
            if named:
                m, guess = True, named[-1]
        if not m or len(guess) != self._length or any(ch not in self._palette for ch in guess):
            return (f"Invalid guess: give exactly {self._length} letters from {self._palette} inside "
                    "\\boxed{}. The guess still counts.", 0.0, False, truncated, {"invalid": True})
        exact, partial = self._score(guess)
        self._guesses.append((guess, exact, partial))
        if exact == self._length:
            self._done = True
            return f"{guess}: {exact} exact. The lock opens. You win!", 1.0, True, False, {}
        log = "\n".join(f"  {g}: exact={e} partial={p}" for g, e, p in self._guesses)
        left = self.max_turns - self._turn
        if truncated:
            self._done = True
            return f"Out of guesses.\n{log}", 0.0, False, True, {}
        return f"Guesses so far:\n{log}\n{left} guesses left.", 0.0, False, False, {}

    def solution(self):
        return f"\\boxed{{{self._code}}}"

    def hint(self):
        return ("Spend the first guesses on colour counts (e.g. two colours per guess) to learn which colours "
                "occur and how often, then use exact matches to place them; keep only codes consistent with "
                "every score so far.")
