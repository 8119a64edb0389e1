"""Connect Four on a 6x5 board with a few pre-placed blocking stones (seeded)."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Mini Connect Four",
    "skill": "multi-agent game",
    "description": "Drop stones into a 6-column, 5-row board with seeded blocked cells; four in a row wins.",
    "tags": ["zero-sum", "perfect-information", "turn-based", "board-game"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: connect three on a 3x3 board, the best move stated each '
                                              'turn (loose answer format: a plain column number); 1: connect '
                                              'three on 4x4; 2: connect three on '
                                              '5x4; 3: connect four on 6x5 with one to three blocked cells '
                                              '(the original); 4: connect five on 8x7 with up to five '
                                              'blocked cells'},
                'max_invalid': {'type': 'integer',
                                'minimum': 0,
                                'maximum': 10,
                                'default': 2,
                                'description': 'invalid moves a player may make before losing'},
                'max_turns': {'type': 'integer',
                              'minimum': 20,
                              'maximum': 200,
                              'default': 60,
                              'description': 'moves (both players, valid or not) before a draw'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (columns, rows, stones in a row to win, blocked cells)
LEVELS = {0: (3, 3, 3, (0, 0)), 1: (4, 4, 3, (0, 1)), 2: (5, 4, 3, (1, 2)), 3: (6, 5, 4, (1, 3)), 4: (8, 7, 5, (2, 5))}


COLS, ROWS, NEED = 6, 5, 4
MARKS = ("X", "O")


class ConnectFourMiniEnv:
    """Players drop stones (X for player 0, O for player 1); '#' cells are blocked."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=60, max_invalid=2, difficulty=3, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.max_invalid = max_invalid
        self.difficulty = difficulty
        self._cols, self._rows, self._need, self._blocked = LEVELS[difficulty]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._grid = [["." for _ in range(self._cols)] for _ in range(self._rows)]  # row 0 is the bottom
        for _ in range(rng.randint(*self._blocked)):
            self._drop(rng.randrange(self._cols), "#")
        self._player = 0
        self._turn = 0
        self._invalid = [0, 0]
        self._done = False
        self._last = "The game begins."
        return self.observe(0), {}

    def _height(self, col):
        for r in range(self._rows):
            if self._grid[r][col] == ".":
                return r
        return self._rows

    def _drop(self, col, mark):
        r = self._height(col)
        if r < self._rows:
            self._grid[r][col] = mark
        return r

    def _wins_at(self, r, c, mark):
        """True when the stone at (r, c) completes a line of ``self._need`` for ``mark``."""
        g = self._grid
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                y, x = r + sign * dr, c + sign * dc
                while 0 <= y < self._rows and 0 <= x < self._cols and g[y][x] == mark:
                    run += 1
                    y, x = y + sign * dr, x + sign * dc
            if run >= self._need:
                return True
        return False

    def _open_cols(self):
        return [c for c in range(self._cols) if self._height(c) < self._rows]

    # -- views -----------------------------------------------------------------------
    def current_player(self):
        return self._player

    def observe(self, player):
        rows = "\n".join(" ".join(self._grid[r]) for r in range(self._rows - 1, -1, -1))
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        return (
            f"Connect Four on a {self._cols}x{self._rows} board. You are Player {player} ({MARKS[player]}). "
            f"Stones fall to the lowest free cell of a column; '#' cells are blocked. {self._need} in a row "
            "(across, up or diagonal) wins.\n"
            f"{rows}\n" + " ".join(str(c + 1) for c in range(self._cols)) + "\n"
            f"Last: {self._last}\n{status}\nMove with \\boxed{{COLUMN}} (1-{self._cols})."
        ) + self._worked_out(player)

    def _worked_out(self, player):
        """Difficulty 0 is a read-off: the player to move is told the baseline's move."""
        if self.difficulty != 0 or self._done or player != self._player:
            return ""
        move = self.scripted_action()
        return f"\nWorked out: the best move now is column {move[7:-1]}. The answer is {move}"

    # -- moves -----------------------------------------------------------------------
    def legal_actions(self, player=None):
        return [f"\\boxed{{{c + 1}}}" for c in self._open_cols()]

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        m = re.search(r"\\boxed\{\s*(\d+)\s*\}", str(action))
        if not m and self._loose and "\\boxed" not in str(action):
            col = loose_answer(str(action))
            m = re.match(r"(\d+)$", col) if col is not None else None
        col = int(m.group(1)) - 1 if m else -1
        rewards = [0.0, 0.0]
        if col not in self._open_cols():
            self._invalid[p] += 1
            if self._invalid[p] > self.max_invalid:
                self._done = True
                self._last = f"Player {p} made too many invalid moves and loses."
                rewards = [1.0, 1.0]
                rewards[p] = -1.0
                return self.observe(p), rewards, True, False, {"winner": 1 - p}
            self._last = f"Player {p} tried an invalid move (choose an open column 1-{self._cols}) and must move again."
        else:
            row = self._drop(col, MARKS[p])
            self._last = f"Player {p} dropped into column {col + 1}."
            if self._wins_at(row, col, MARKS[p]):
                self._done = True
                self._last += f" Player {p} connects {self._need} and wins."
                rewards = [-1.0, -1.0]
                rewards[p] = 1.0
                return self.observe(p), rewards, True, False, {"winner": p}
            if not self._open_cols():
                self._done = True
                self._last += " The board is full: a draw."
                return self.observe(p), rewards, True, False, {"winner": None}
            self._player = 1 - p
        truncated = self._turn >= self.max_turns
        if truncated:
            self._done = True
            self._last += " The turn limit is reached: a draw."
        return self.observe(self._player), rewards, False, truncated, {}

    # -- baseline and hints -------------------------------------------------------------
    def _wins_after(self, col, mark):
        r = self._drop(col, mark)
        won = self._wins_at(r, col, mark)
        self._grid[r][col] = "."
        return won

    def _potential(self, col, mark):
        r = self._height(col)
        score = 0
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            for k in range(self._need):
                cells = [(r + (i - k) * dr, col + (i - k) * dc) for i in range(self._need)]
                if all(0 <= y < self._rows and 0 <= x < self._cols and self._grid[y][x] in (".", mark) for y, x in cells):
                    score += 1 + sum(self._grid[y][x] == mark for y, x in cells)
        return score

    def scripted_action(self, player=None):
        me, other = MARKS[self._player], MARKS[1 - self._player]
        cols = self._open_cols()
        if not cols:
            return "\\boxed{1}"
        for mark in (me, other):  # win now, else block the opponent's win
            for c in cols:
                if self._wins_after(c, mark):
                    return f"\\boxed{{{c + 1}}}"

        def value(c):
            r = self._drop(c, me)
            gives = any(self._wins_after(c2, other) for c2 in self._open_cols())
            self._grid[r][c] = "."
            return (-100 if gives else 0) + self._potential(c, me) + self._potential(c, other) - abs(2 * c - (self._cols - 1))

        best = max(cols, key=lambda c: (value(c), -c))
        return f"\\boxed{{{best + 1}}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return (
            "Win immediately when you can, otherwise block the opponent's immediate win; never play below a "
            "cell the opponent needs (it lets them win next move); prefer central columns and open lines."
        )
