"""Lights Out on a 5x5 panel: press cells (each toggles itself and its orthogonal neighbours) until all are dark."""

import random
import re

METADATA = {
    "name": "Lights Out Panel",
    "skill": "multi-step game",
    "description": "Switch off every light of a 5x5 panel within a press budget; a press toggles a cell and its four neighbours.",
    "tags": ["multi-step game", "spatial reasoning", "logical deduction", "puzzle"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one hidden press made a plus of five lights (described, '
                                              'not drawn), its centre stated as a cell number 1-25: press it '
                                              '(loose answer format: a cell number, or the last two numbers '
                                              'of a reply as row and column); 1: two or three presses; 2: '
                                              'three or four; 3: four to seven presses, six or more lights on '
                                              '(the original); 4: nine '
                                              'to twelve presses, twelve or more lights on'},
                'num_presses': {'type': ['integer', 'null'],
                                'minimum': 1,
                                'maximum': 12,
                                'default': None,
                                'description': 'presses that made the pattern; null: set by difficulty'},
                'max_turns': {'type': ['integer', 'null'],
                              'minimum': 2,
                              'maximum': 60,
                              'default': None,
                              'description': 'presses allowed; null: the presses needed plus four'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept a cell number (1-25, row by row) and the last '
                                                'numbers of a reply without \\\\boxed{} (null: only at '
                                                'difficulty 0)'}}}

#: difficulty -> (presses that made the pattern, least lights on)
LEVELS = {0: ((1, 1), 5), 1: ((2, 3), 4), 2: ((3, 4), 5), 3: ((4, 7), 6), 4: ((9, 12), 12)}

SIZE = 5

class LightsOutEnv:
    """One press per step as ``\\boxed{row,col}`` (1-based). Win: all lights off within the budget."""

    def __init__(self, max_turns=None, difficulty=3, num_presses=None, loose_answer=None, **kwargs):
        self._max_turns_arg = max_turns
        self.difficulty = difficulty
        presses, self._least_lit = LEVELS[difficulty]
        self._presses_range = presses if num_presses is None else (num_presses, num_presses)
        if num_presses is not None:
            self._least_lit = min(self._least_lit, 3)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            cells = [(r, c) for r in range(SIZE) for c in range(SIZE)]
            if self.difficulty == 0:
                cells = [(r, c) for r, c in cells if 0 < r < SIZE - 1 and 0 < c < SIZE - 1]
            presses = set(rng.sample(cells, rng.randint(*self._presses_range)))
            board = [[0] * SIZE for _ in range(SIZE)]
            for r, c in presses:
                self._toggle(board, r, c)
            if sum(map(sum, board)) >= self._least_lit:
                break
        self._board = board
        self._needed = presses  # pressing exactly these (in any order) clears the board
        self._budget = len(presses) + 4
        self.max_turns = self._max_turns_arg or self._budget
        self._turn = 0
        self._done = False
        obs = self._render("Switch off every light. ") + (
            f"\nEach press toggles the cell and its up/down/left/right neighbours. You have {self._budget} "
            "presses. Press one cell per turn with \\boxed{row,col} (1-based, row first)."
        )
        if self.difficulty == 0:  # a read-off: the plus described (no grid), the one press worked out
            (r, c), = presses
            cell = r * SIZE + c + 1
            obs = ("Switch off every light. Five lights are on, in a plus shape. Cells are numbered 1 to 25, row "
                   f"by row. Press one cell per turn with \\boxed{{N}}. Worked out: one press on the plus's centre, "
                   f"cell {cell}, switches every light off. The answer is \\boxed{{{cell}}}")
        return obs, {}

    @staticmethod
    def _toggle(board, r, c):
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE:
                board[r + dr][c + dc] ^= 1

    def _render(self, prefix):
        rows = ["    " + " ".join(str(c + 1) for c in range(SIZE))]
        for r in range(SIZE):
            rows.append(f"{r + 1} | " + " ".join("#" if v else "." for v in self._board[r]))
        lit = sum(map(sum, self._board))
        return prefix + f"Panel ('#' = on, {lit} lit):\n" + "\n".join(rows)

    def step(self, action):
        if self._done:
            return "The episode is over; call reset().", 0.0, True, False, {}
        self._turn += 1
        truncated = self._turn >= self.max_turns
        cell = self._parse(str(action))
        if cell is None:
            return ("Invalid action: press a cell with \\boxed{row,col}, two numbers from 1 to 5.", 0.0, False, truncated,
                    {"invalid": True})
        r, c = cell
        if not (0 <= r < SIZE and 0 <= c < SIZE):
            return f"Invalid action: row and column must be between 1 and {SIZE}.", 0.0, False, truncated, {"invalid": True}
        self._toggle(self._board, r, c)
        self._needed ^= {(r, c)}
        if sum(map(sum, self._board)) == 0:
            self._done = True
            return "All lights are off. You win!", 1.0, True, False, {}
        left = self._budget - self._turn
        if left <= 0 or truncated:
            self._done = True
            return self._render("Out of presses. "), 0.0, False, True, {}
        return self._render(f"Pressed ({r + 1},{c + 1}); {left} presses left. "), 0.0, False, False, {}

    def _parse(self, action):
        """The pressed cell (0-based row, col) of ``action``, or None. ``\\boxed{row,col}`` always;
        in the loose format also ``\\boxed{N}`` / a plain ``N`` (cell N of 25, row by row) and
        the last two numbers of a reply with two to six numbers."""
        m = re.search(r"\\boxed\{\s*(\d+)\s*[, ]\s*(\d+)\s*\}", action)
        if m:
            return int(m.group(1)) - 1, int(m.group(2)) - 1
        if not self._loose:
            return None
        one = re.search(r"\\boxed\{\s*(\d{1,2})\s*\}", action)
        if one:
            n = int(one.group(1)) - 1
        elif "\\boxed" in action:
            return None
        else:
            found = list(re.finditer(r"\d+", action))
            if not found or len(found) > 6 or any(len(f.group()) > 2 for f in found):
                return None
            between = action[found[-2].end(): found[-1].start()] if len(found) >= 2 else ""
            if "," in between and set(between) <= {" ", ","}:
                return int(found[-2].group()) - 1, int(found[-1].group()) - 1
            n = int(found[-1].group()) - 1
        return (n // SIZE, n % SIZE) if 0 <= n < SIZE * SIZE else None

    def solution(self):
        return "\n".join(f"\\boxed{{{r + 1},{c + 1}}}" for r, c in sorted(self._needed))

    def hint(self):
        return ("Order does not matter and pressing a cell twice undoes it. Chase the lights down: after "
                "fixing row k, press in row k+1 directly below each light still on in row k; the pattern "
                "left in the last row tells you which top-row presses to start with.")
