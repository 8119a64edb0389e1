"""Cooperative signalling: a guide who sees a buried treasure steers a seeker who cannot."""

import random
import re

METADATA = {
    "name": "Signal Guide",
    "skill": "multi-agent game",
    "description": "Player 0 sees the treasure and signals compass directions; player 1 walks and digs.",
    "tags": ["cooperative", "hidden-information", "turn-based", "communication"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: a 2x2 field, 12 moves, the best action stated (loose answer '
                                              "format: a direction or 'dig' in a plain reply); 1: 3x3; 2: 4x4; "
                                              '3: 5x5 to 7x7 (the original); 4: 10x10 or 12x12'},
                'size': {'type': ['integer', 'null'],
                         'minimum': 2,
                         'maximum': 12,
                         'default': None,
                         'description': 'side of the field; null: set by difficulty'},
                'max_invalid': {'type': 'integer',
                                'minimum': 0,
                                'maximum': 10,
                                'default': 2,
                                'description': 'invalid moves a player may make before the team loses'},
                'max_wrong_digs': {'type': 'integer',
                                   'minimum': 0,
                                   'maximum': 10,
                                   'default': 2,
                                   'description': 'wrong digs allowed'},
                'max_turns': {'type': ['integer', 'null'],
                              'minimum': 12,
                              'maximum': 300,
                              'default': None,
                              'description': 'moves (both players) before the game is lost; null: 48 (12 at '
                                             'difficulty 0, 120 at difficulty 4)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> choices of the field's side
LEVELS = {0: [2], 1: [3], 2: [4], 3: [5, 6, 7], 4: [10, 12]}

MOVES = {"N": (0, 1), "S": (0, -1), "E": (1, 0), "W": (-1, 0)}


class SignalGuideEnv:
    """Turns alternate: the guide (player 0) sends one signal N/S/E/W/DIG, the seeker
    (player 1) moves N/S/E/W or digs. Both score 1 when the seeker digs up the treasure."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=None, max_invalid=2, max_wrong_digs=2, difficulty=3, size=None, loose_answer=None,
                 **kwargs):
        self.max_turns = max_turns or {0: 12, 4: 120}.get(difficulty, 48)
        self.difficulty = difficulty
        self._sizes = LEVELS[difficulty] if size is None else [size]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.max_invalid = max_invalid
        self.max_wrong_digs = max_wrong_digs
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._size = rng.choice(self._sizes)
        cells = [(x, y) for x in range(self._size) for y in range(self._size)]
        self._treasure, self._pos = rng.sample(cells, 2)
        self._signals = []
        self._player = 0
        self._turn = 0
        self._invalid = [0, 0]
        self._wrong = 0
        self._done = False
        self._last = "The game begins."
        return self.observe(0), {}

    # -- views ---------------------------------------------------------------------
    def current_player(self):
        return self._player

    def observe(self, player):
        n = self._size
        common = (
            f"Signal guide (cooperative). Grid {n}x{n}, x = 0..{n - 1} west to east, y = 0..{n - 1} south to north. "
            "The guide (Player 0) signals, then the seeker (Player 1) moves one cell or digs; both players "
            f"win together when the seeker digs on the treasure ({self.max_wrong_digs} wrong digs allowed).\n"
        )
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        if player == 0:
            role = (f"You are Player 0, the guide. The treasure is at {self._treasure}; the seeker is at {self._pos}.\n"
                    "Signal with \\boxed{N}, \\boxed{S}, \\boxed{E}, \\boxed{W} or \\boxed{DIG}.")
        else:
            last = self._signals[-1] if self._signals else "none yet"
            role = (f"You are Player 1, the seeker. You are at {self._pos}. The guide's latest signal: {last}.\n"
                    "Act with \\boxed{N}, \\boxed{S}, \\boxed{E}, \\boxed{W} (move one cell) or \\boxed{DIG}.")
        return f"{common}{role}\nLast: {self._last}\n{status}" + self._worked_out(player)

    def _toward_treasure(self):
        (tx, ty), (x, y) = self._treasure, self._pos
        if (tx, ty) == (x, y):
            return "DIG"
        if tx != x:
            return "E" if tx > x else "W"
        return "N" if ty > y else "S"

    def _worked_out(self, player):
        """Difficulty 0 is a read-off: the player to move is told the best action (the guide's
        signal, or for the seeker the step toward the treasure)."""
        if self.difficulty != 0 or self._done or player != self._player:
            return ""
        best = self._toward_treasure()
        return f"\nWorked out: the best action now is {best}. The answer is \\boxed{{{best}}}"

    # -- moves -----------------------------------------------------------------------
    def legal_actions(self, player=None):
        return ["\\boxed{N}", "\\boxed{S}", "\\boxed{E}", "\\boxed{W}", "\\boxed{DIG}"]

    def _end(self, rewards, why):
        self._done = True
        self._last += " " + why
        return self.observe(self._player), rewards, True, False, {"success": rewards[0] > 0}

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        m = re.search(r"\\boxed\{\s*(N|S|E|W|DIG)\s*\}", str(action), re.IGNORECASE)
        if not m and self._loose and "\\boxed" not in str(action):
            named = re.findall(r"\b(north|south|east|west|dig|N|S|E|W|DIG)\b", str(action), re.IGNORECASE)
            if named and len(named) <= 4:
                m = re.match(r"(DIG|\w)", named[-1].upper())
        if not m:
            self._invalid[p] += 1
            self._last = f"Player {p} sent an invalid action (use \\boxed{{N|S|E|W|DIG}})."
            if self._invalid[p] > self.max_invalid:
                return self._end([0.0, 0.0], "Too many invalid actions: the expedition fails.")
            self._last += " Try again."
        else:
            word = m.group(1).upper()
            if p == 0:
                self._signals.append(word)
                self._last = f"The guide signalled {word}."
                self._player = 1
            else:
                if word == "DIG":
                    if self._pos == self._treasure:
                        self._last = f"The seeker dug at {self._pos}."
                        return self._end([1.0, 1.0], "The treasure is found: both players win.")
                    self._wrong += 1
                    self._last = f"The seeker dug at {self._pos}: nothing."
                    if self._wrong > self.max_wrong_digs:
                        return self._end([0.0, 0.0], "Too many wrong digs: the expedition fails.")
                else:
                    dx, dy = MOVES[word]
                    x = min(self._size - 1, max(0, self._pos[0] + dx))
                    y = min(self._size - 1, max(0, self._pos[1] + dy))
                    self._pos = (x, y)
                    self._last = f"The seeker moved {word} to {self._pos}."
                self._player = 0
        if self._turn >= self.max_turns:
            self._done = True
            self._last += " The turn limit is reached: the expedition fails."
            return self.observe(self._player), [0.0, 0.0], False, True, {"success": False}
        return self.observe(self._player), [0.0, 0.0], False, False, {}

    # -- baseline and hints -------------------------------------------------------------
    def scripted_action(self, player=None):
        if self._player == 0:
            return f"\\boxed{{{self._toward_treasure()}}}"
        last = self._signals[-1] if self._signals else "DIG"
        return f"\\boxed{{{last}}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        if player == 1:
            return "Trust the guide: move exactly in the signalled direction and dig when the signal is DIG."
        return "Signal the axis with the larger gap first, one step at a time, and DIG only when the seeker stands on the treasure."
