"""Hidden-number duel: each player guards a secret number and hunts the opponent's."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Number Duel",
    "skill": "multi-agent game",
    "description": "Each player hides a number; players alternately guess the opponent's and hear higher/lower.",
    "tags": ["zero-sum", "hidden-information", "turn-based", "search"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: secrets from 1 to 4 (loose answer format: a plain number); '
                                              '1: up to 8 or 10; 2: up to 15 or 20; 3: up to 31, 40, 50 or '
                                              '63 (the original); 4: up to 500 or 1000'},
                'top': {'type': ['integer', 'null'],
                        'minimum': 4,
                        'maximum': 1000,
                        'default': None,
                        'description': 'largest secret number; null: set by difficulty'},
                'max_invalid': {'type': 'integer',
                                'minimum': 0,
                                'maximum': 10,
                                'default': 2,
                                'description': 'invalid moves a player may make before losing'},
                'max_turns': {'type': 'integer',
                              'minimum': 40,
                              'maximum': 200,
                              'default': 40,
                              'description': 'moves (both players, valid or not) before a draw'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> choices of the largest secret number
LEVELS = {0: [4], 1: [8, 10], 2: [15, 20], 3: [31, 40, 50, 63], 4: [500, 1000]}


class NumberDuelEnv:
    """First to name the opponent's secret number wins; answers say 'higher' or 'lower'."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=40, max_invalid=2, difficulty=3, top=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.max_invalid = max_invalid
        self.difficulty = difficulty
        self._tops = LEVELS[difficulty] if top is None else [top]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._top = rng.choice(self._tops)
        self._secret = [rng.randint(1, self._top), rng.randint(1, self._top)]
        self._log = [[], []]  # log[p]: (guess, answer) of p's guesses at the opponent's number
        self._player = 0
        self._turn = 0
        self._invalid = [0, 0]
        self._done = False
        self._last = "The game begins."
        return self.observe(0), {}

    # -- views ---------------------------------------------------------------------
    def current_player(self):
        return self._player

    def observe(self, player):
        mine = ", ".join(f"{g}: {a}" for g, a in self._log[player]) or "none yet"
        theirs = ", ".join(f"{g}: {a}" for g, a in self._log[1 - player]) or "none yet"
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        return (
            f"Number duel. You are Player {player}. Each player hides a number from 1 to {self._top}; "
            "players take turns guessing the OPPONENT's number and hear 'higher' (the secret is larger) or "
            "'lower'. The first to name the opponent's number wins.\n"
            f"Your secret number: {self._secret[player]}.\n"
            f"Your guesses: {mine}.\nOpponent's guesses at your number: {theirs}.\n"
            f"Last: {self._last}\n{status}\nGuess with \\boxed{{NUMBER}}."
        )

    # -- moves -----------------------------------------------------------------------
    def legal_actions(self, player=None):
        return [f"\\boxed{{{n}}}" for n in range(1, self._top + 1)]

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        m = re.search(r"\\boxed\{\s*(\d+)\s*\}", str(action))
        if not m and self._loose and "\\boxed" not in str(action):
            guess = loose_answer(str(action))
            m = re.match(r"(\d+)$", guess) if guess is not None else None
        rewards = [0.0, 0.0]
        if not m or not 1 <= int(m.group(1)) <= self._top:
            self._invalid[p] += 1
            if self._invalid[p] > self.max_invalid:
                self._done = True
                self._last = f"Player {p} made too many invalid moves and loses."
                rewards = [1.0, 1.0]
                rewards[p] = -1.0
                return self.observe(p), rewards, True, False, {"winner": 1 - p}
            self._last = f"Player {p} sent an invalid guess (a number 1-{self._top} in \\boxed{{}}) and must guess again."
        else:
            guess, target = int(m.group(1)), self._secret[1 - p]
            answer = "correct" if guess == target else ("higher" if target > guess else "lower")
            self._log[p].append((guess, answer))
            self._last = f"Player {p} guessed {guess}: {answer}."
            if answer == "correct":
                self._done = True
                self._last += f" Player {p} wins."
                rewards = [-1.0, -1.0]
                rewards[p] = 1.0
                return self.observe(p), rewards, True, False, {"winner": p}
            self._player = 1 - p
        truncated = self._turn >= self.max_turns
        if truncated:
            self._done = True
            self._last += " The turn limit is reached: a draw."
        return self.observe(self._player), rewards, False, truncated, {}

    # -- baseline and hints -------------------------------------------------------------
    def scripted_action(self, player=None):
        p = self._player if player is None else player
        lo, hi = 1, self._top
        for guess, answer in self._log[p]:
            if answer == "higher":
                lo = max(lo, guess + 1)
            elif answer == "lower":
                hi = min(hi, guess - 1)
        if lo > hi:
            lo, hi = 1, self._top
        return f"\\boxed{{{(lo + hi) // 2}}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return "Keep the interval of numbers consistent with every answer and always guess its middle."
