"""Track a piece on a square pane through turns, flips and slides, then draw the result."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Pane Turns",
    "skill": "spatial reasoning",
    "description": "A piece sits on a 7x7 glass pane; the pane is rotated and flipped and the piece slid. Draw the final pane row by row.",
    "tags": ["geometry", "rotation", "reflection", "mental-imagery", "single-answer"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: a one-cell piece slides one cell down or right and the text '
                                              'says where it lands: restate its new row or column (a number, '
                                              'loose answer format); 1: a '
                                              'four-cell piece, one operation; 2: four or five cells, two or '
                                              'three operations; 3: five to seven cells, four to six '
                                              'operations (the original); 4: eight or nine cells, nine to '
                                              'twelve operations'},
                'piece_cells': {'type': ['integer', 'null'],
                                'minimum': 4,
                                'maximum': 9,
                                'default': None,
                                'description': 'cells of the piece (difficulty >= 1); null: set by '
                                               'difficulty'},
                'num_operations': {'type': ['integer', 'null'],
                                   'minimum': 1,
                                   'maximum': 16,
                                   'default': None,
                                   'description': 'turns, flips and slides applied (difficulty >= 1); null: '
                                                  'set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> (cells of the piece, operations); 0: the one-cell warm-up
LEVELS = {0: ((1, 1), (1, 1)), 1: ((4, 4), (1, 1)), 2: ((4, 5), (2, 3)), 3: ((5, 7), (4, 6)), 4: ((8, 9), (9, 12))}


SIZE = 7
TURNS = {
    "rotate the pane 90 degrees clockwise": lambda r, c: (c, SIZE - 1 - r),
    "rotate the pane 90 degrees counterclockwise": lambda r, c: (SIZE - 1 - c, r),
    "rotate the pane 180 degrees": lambda r, c: (SIZE - 1 - r, SIZE - 1 - c),
    "flip the pane left-to-right (mirror in the vertical middle line)": lambda r, c: (r, SIZE - 1 - c),
    "flip the pane top-to-bottom (mirror in the horizontal middle line)": lambda r, c: (SIZE - 1 - r, c),
    "flip the pane over its main diagonal (top-left to bottom-right)": lambda r, c: (c, r),
}
SLIDES = {"right": (0, 1), "left": (0, -1), "up": (-1, 0), "down": (1, 0)}
FILLED, EMPTY = "#Xx1@", ".0_-o"


class PaneTurnsEnv:
    """Single-answer spatial puzzle; the answer is the final pane, rows joined by '/'."""

    def __init__(self, max_turns=2, difficulty=3, piece_cells=None, num_operations=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        cells, ops = LEVELS[difficulty]
        self._cells_range = cells if piece_cells is None else (piece_cells, piece_cells)
        self._ops_range = ops if num_operations is None else (num_operations, num_operations)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    @staticmethod
    def _draw(cells, sep):
        return sep.join("".join("#" if (r, c) in cells else "." for c in range(SIZE)) for r in range(SIZE))

    @staticmethod
    def _grow(rng, n):
        """A random connected piece of n cells without any mirror or rotation symmetry."""
        while True:
            cells = {(0, 0)}
            while len(cells) < n:
                r, c = rng.choice(sorted(cells))
                dr, dc = rng.choice([(0, 1), (1, 0), (0, -1), (-1, 0)])
                if -2 <= r + dr <= 2 and -2 <= c + dc <= 2:
                    cells.add((r + dr, c + dc))
            shapes = set()
            symmetries = list(TURNS.values()) + [lambda r, c: (r, c), lambda r, c: (SIZE - 1 - c, SIZE - 1 - r)]
            for f in symmetries:
                moved = [f(r + 3, c + 3) for r, c in cells]
                r0, c0 = min(p[0] for p in moved), min(p[1] for p in moved)
                shapes.add(tuple(sorted((r - r0, c - c0) for r, c in moved)))
            if len(shapes) == 8:  # all eight rotations/reflections differ
                return {(r + 3, c + 3) for r, c in cells}

    def reset(self, seed=None):
        rng = random.Random(seed)
        if self.difficulty == 0:
            return self._reset_slide(rng)
        cells = self._grow(rng, rng.randint(*self._cells_range))
        dr, dc = rng.randint(-1, 1), rng.randint(-1, 1)
        cells = {(r + dr, c + dc) for r, c in cells}
        start = set(cells)
        ops, n_ops = [], rng.randint(*self._ops_range)
        while len(ops) < n_ops or cells == start:
            if rng.random() < 0.6:
                name = rng.choice(sorted(TURNS))
                cells = {TURNS[name](r, c) for r, c in cells}
                ops.append(name)
                continue
            way = rng.choice(sorted(SLIDES))
            steps = rng.randint(1, 2)
            dr, dc = SLIDES[way][0] * steps, SLIDES[way][1] * steps
            moved = {(r + dr, c + dc) for r, c in cells}
            if all(0 <= r < SIZE and 0 <= c < SIZE for r, c in moved):
                cells = moved
                ops.append(f"slide the piece {steps} cell{'s' if steps > 1 else ''} {way} (the pane stays)")
        self._answer = self._draw(cells, "/")
        self._final = cells
        self._ops = ops
        self._turn = 0
        self._done = False
        obs = (
            f"A {SIZE}x{SIZE} glass pane carries one piece ('#' = piece, '.' = clear glass). "
            "Seen from the front, row 1 at the top:\n"
            + self._draw(start, "\n")
            + "\nThese operations happen in order (turns and flips move the whole pane, and with "
            "it the piece, as seen from the front):\n"
            + "\n".join(f"  {i + 1}. {op}" for i, op in enumerate(ops))
            + f"\nDraw the final pane: all {SIZE} rows top to bottom, each {SIZE} characters of '#' "
            "and '.', rows separated by '/', e.g. \\boxed{.......//...}."
        )
        return obs, {}

    def _reset_slide(self, rng):
        """Difficulty 0: one cell, one slide, and the text says where it lands: restate one number."""
        way, axis = rng.choice([("down", "row"), ("right", "column")])
        r, c = rng.randint(0, SIZE - 2), rng.randint(0, SIZE - 2)
        start = {(r, c)}
        self._final = {(r + 1, c)} if way == "down" else {(r, c + 1)}
        self._ops = [f"slide the piece 1 cell {way} (the pane stays)"]
        self._answer = str((r if way == "down" else c) + 2)
        self._turn, self._done = 0, False
        obs = (
            f"A {SIZE}x{SIZE} glass pane carries a piece of one cell ('#'), at row {r + 1}, column {c + 1} "
            "(counted from 1 at the top-left):\n" + self._draw(start, "\n")
            + f"\nThe piece slides 1 cell {way}, from {axis} {int(self._answer) - 1} to {axis} {self._answer}.\n"
            f"In which {axis} is it now? Answer with \\boxed{{number}}."
        )
        return obs, {}

    def _parse(self, action):
        if self.difficulty == 0:
            found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
            got = loose_answer(str(action)) if self._loose else (found[-1].strip() if len(found) == 1 else None)
            return self._final if got is not None and got.strip() == self._answer else None
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        if not found:
            return None
        rows = [r for r in re.split(r"[/\s,|]+", found[-1]) if r]
        if len(rows) != SIZE or any(len(r) != SIZE for r in rows):
            return None
        cells = set()
        for r, row in enumerate(rows):
            for c, ch in enumerate(row):
                if ch in FILLED:
                    cells.add((r, c))
                elif ch not in EMPTY:
                    return None
        return cells

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        cells = self._parse(action)
        if cells == self._final:
            self._done = True
            return "Correct: that is exactly how the pane looks now.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if cells is None:
            return f"Draw {SIZE} rows of {SIZE} characters ('#' or '.') separated by '/'.", 0.0, False, truncated, {}
        return "The pane does not look like that.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0:
            return "The text under the pane says where the piece lands."
        rows = [r for r, _ in self._final]
        cols = [c for _, c in self._final]
        return (
            f"In the end the piece fits in rows {min(rows) + 1}-{max(rows) + 1} and columns "
            f"{min(cols) + 1}-{max(cols) + 1} (counted from 1 at the top-left). Track one "
            "distinctive cell of the piece through every operation: a clockwise turn sends row r, "
            f"column c to row c, column {SIZE + 1}-r."
        )
