"""Connect Four on a 6x5 board with a few pre-placed blocking stones (seeded)."""

import random
import re

METADATA = {
    "name": "Mini Connect Four",
    "skill": "multi-agent game",
    "description": "Drop stones into a 6-column, 5-row board with seeded blocked cells; four in a row wins.",
    "tags": ["zero-sum", "perfect-information", "turn-based", "board-game"],
    "num_players": 2,
}

COLS, ROWS, NEED = 6, 5, 4
MARKS = ("X", "O")


class ConnectFourMiniEnv:
    """Players drop stones (X for player 0, O for player 1); '#' cells are blocked."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=60, max_invalid=2, **kwargs):
        self.max_turns = max_turns
        self.max_invalid = max_invalid
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._grid = [["." for _ in range(COLS)] for _ in range(ROWS)]  # row 0 is the bottom
        for _ in range(rng.randint(1, 3)):
            self._drop(rng.randrange(COLS), "#")
        self._player = 0
        self._turn = 0
        self._invalid = [0, 0]
        self._done = False
        self._last = "The game begins."
        return self.observe(0), {}

    def _height(self, col):
        for r in range(ROWS):
            if self._grid[r][col] == ".":
                return r
        return ROWS

    def _drop(self, col, mark):
        r = self._height(col)
        if r < ROWS:
            self._grid[r][col] = mark
        return r

    def _wins_at(self, r, c, mark):
        """True when the stone at (r, c) completes a line of NEED for ``mark``."""
        g = self._grid
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                y, x = r + sign * dr, c + sign * dc
                while 0 <= y < ROWS and 0 <= x < COLS and g[y][x] == mark:
                    run += 1
                    y, x = y + sign * dr, x + sign * dc
            if run >= NEED:
                return True
        return False

    def _open_cols(self):
        return [c for c in range(COLS) if self._height(c) < ROWS]

    # -- views -----------------------------------------------------------------------
    def current_player(self):
        return self._player

    def observe(self, player):
        rows = "\n".join(" ".join(self._grid[r]) for r in range(ROWS - 1, -1, -1))
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        return (
            f"Connect Four on a {COLS}x{ROWS} board. You are Player {player} ({MARKS[player]}). "
            f"Stones fall to the lowest free cell of a column; '#' cells are blocked. {NEED} in a row "
            "(across, up or diagonal) wins.\n"
            f"{rows}\n" + " ".join(str(c + 1) for c in range(COLS)) + "\n"
            f"Last: {self._last}\n{status}\nMove with \\boxed{{COLUMN}} (1-{COLS})."
        )

    # -- moves -----------------------------------------------------------------------
    def legal_actions(self, player=None):
        return [f"\\boxed{{{c + 1}}}" for c in self._open_cols()]

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        m = re.search(r"\\boxed\{\s*(\d+)\s*\}", str(action))
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
            self._last = f"Player {p} tried an invalid move (choose an open column 1-{COLS}) and must move again."
        else:
            row = self._drop(col, MARKS[p])
            self._last = f"Player {p} dropped into column {col + 1}."
            if self._wins_at(row, col, MARKS[p]):
                self._done = True
                self._last += f" Player {p} connects {NEED} and wins."
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
            for k in range(NEED):
                cells = [(r + (i - k) * dr, col + (i - k) * dc) for i in range(NEED)]
                if all(0 <= y < ROWS and 0 <= x < COLS and self._grid[y][x] in (".", mark) for y, x in cells):
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
            return (-100 if gives else 0) + self._potential(c, me) + self._potential(c, other) - abs(2 * c - (COLS - 1))

        best = max(cols, key=lambda c: (value(c), -c))
        return f"\\boxed{{{best + 1}}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return (
            "Win immediately when you can, otherwise block the opponent's immediate win; never play below a "
            "cell the opponent needs (it lets them win next move); prefer central columns and open lines."
        )
