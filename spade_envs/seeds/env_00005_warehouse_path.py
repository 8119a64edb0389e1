"""Find a shortest route for a robot through a warehouse floor with shelves in the way."""

import random
import re
from collections import deque

METADATA = {
    "name": "Warehouse Path",
    "skill": "spatial reasoning",
    "description": "Read a grid map with obstacles and give a shortest sequence of U/D/L/R moves from the start to the goal; any shortest route is accepted.",
    "tags": ["grid", "shortest-path", "navigation", "multi-turn"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: G is next to S on an open 3x3 floor and the text names the '
                                              'one move: restate it as a letter or a word (loose answer '
                                              'format); 1: open 3x4 floor, '
                                              'two or three moves; 2: 5x6 with a few shelves, a detour; 3: '
                                              '8-10 x 9-12 with a blocked straight line, 12+ moves (the '
                                              'original); 4: 14-16 x 18-22, 30+ moves'},
                'rows': {'type': ['integer', 'null'],
                         'minimum': 2,
                         'maximum': 20,
                         'default': None,
                         'description': 'map height; null: set by difficulty'},
                'cols': {'type': ['integer', 'null'],
                         'minimum': 2,
                         'maximum': 24,
                         'default': None,
                         'description': 'map width; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 4,
                              'description': 'agent turns allowed'}}}

#: difficulty -> (rows, cols, shelf density, least and most moves, least detour over the straight line)
LEVELS = {
    0: ((3, 3), (3, 3), (0.0, 0.0), 1, 1, 0),
    1: ((3, 3), (4, 4), (0.0, 0.0), 2, 3, 0),
    2: ((5, 5), (6, 6), (0.15, 0.2), 5, None, 2),
    3: ((8, 10), (9, 12), (0.25, 0.33), 12, None, 4),
    4: ((14, 16), (18, 22), (0.28, 0.33), 30, None, 8),
}

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


class WarehousePathEnv:
    """The answer is a move string; it is checked by simulation, so every shortest route wins."""

    def __init__(self, max_turns=4, difficulty=3, rows=None, cols=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        rows_range, cols_range, self._density, self._least, self._most, self._detour = LEVELS[difficulty]
        self._rows_range = rows_range if rows is None else (rows, rows)
        self._cols_range = cols_range if cols is None else (cols, cols)
        if rows is not None or cols is not None:  # a custom map: ask only for a reachable goal
            self._least, self._most, self._detour = 1, None, 0
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def _bfs(self, start):
        """Distances and parents from `start` over free cells (moves tried in U, D, L, R order)."""
        dist, parent = {start: 0}, {start: None}
        queue = deque([start])
        while queue:
            r, c = queue.popleft()
            for name, (dr, dc) in MOVES.items():
                nxt = (r + dr, c + dc)
                if nxt in self._free and nxt not in dist:
                    dist[nxt] = dist[(r, c)] + 1
                    parent[nxt] = ((r, c), name)
                    queue.append(nxt)
        return dist, parent

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            self._rows, self._cols = rng.randint(*self._rows_range), rng.randint(*self._cols_range)
            cells = [(r, c) for r in range(self._rows) for c in range(self._cols)]
            density = rng.uniform(*self._density)
            self._free = {p for p in cells if rng.random() > density}
            if len(self._free) < 2:
                continue
            start, goal = rng.sample(sorted(self._free), 2)
            dist, parent = self._bfs(start)
            manhattan = abs(start[0] - goal[0]) + abs(start[1] - goal[1])
            if (goal in dist and dist[goal] >= self._least and dist[goal] >= manhattan + self._detour
                    and (self._most is None or dist[goal] <= self._most)):
                break  # far apart, and the straight line is blocked
        self._start, self._goal, self._dist = start, goal, dist[goal]
        path, node = [], goal
        while parent[node] is not None:
            node, name = parent[node]
            path.append(name)
        self._answer = "".join(reversed(path))
        self._turn = 0
        self._done = False
        grid = ["   " + "".join(str(c % 10) for c in range(self._cols))]
        for r in range(self._rows):
            row = ""
            for c in range(self._cols):
                row += "S" if (r, c) == start else "G" if (r, c) == goal else "." if (r, c) in self._free else "#"
            grid.append(f"{r:2d} {row}")
        if self.difficulty == 0 and len(self._answer) == 1:  # (a custom map at level 0 keeps the route task)
            return self._obs_one_move(grid), {}
        obs = (
            "A warehouse robot stands on S and must reach G. '#' is a shelf (blocked), '.' is open "
            "floor; rows are numbered on the left (row 0 is the top), columns along the top.\n"
            + "\n".join(grid)
            + "\nThe robot moves one cell per step: U (up), D (down), L (left), R (right); it cannot "
            "leave the map or enter a shelf. Give a SHORTEST route as one string of moves, e.g. "
            "\\boxed{RRDL...}."
        )
        return obs, {}

    def _obs_one_move(self, grid):
        """Difficulty 0: G is next to S and the text says which way; the task is to restate the move."""
        where, word = {"U": ("directly above", "up"), "D": ("directly below", "down"),
                       "L": ("directly left of", "left"), "R": ("directly right of", "right")}[self._answer]
        return (
            "A warehouse robot stands on S and must reach G ('.' is open floor; row 0 is the top).\n"
            + "\n".join(grid)
            + f"\nG is {where} S: one move {word} ({self._answer}) takes the robot there.\n"
            "Which move reaches G? Answer with \\boxed{move letter}."
        )

    def _walk(self, moves):
        """Where a move string ends, or the 1-based step at which it becomes illegal."""
        r, c = self._start
        for i, m in enumerate(moves):
            dr, dc = MOVES[m]
            r, c = r + dr, c + dc
            if (r, c) not in self._free:
                return None, i + 1
        return (r, c), 0

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{([^{}]*)\}", str(action))
        moves = re.sub(r"[\s,]", "", found[-1]).upper() if found else ""
        if self._loose and not found:
            named = re.findall(r"\b(up|down|left|right|U|D|L|R)\b", str(action), re.IGNORECASE)
            if named and len(named) <= 4:
                moves = named[-1][0].upper()
        elif self._loose and len(set(found)) > 1:
            moves = ""
        truncated = self._turn >= self.max_turns
        if not moves or any(m not in MOVES for m in moves):
            self._done = truncated
            return "Give the route as a string of U, D, L, R in \\boxed{}.", 0.0, False, truncated, {}
        end, bad_step = self._walk(moves)
        if end == self._goal and len(moves) == self._dist:
            self._done = True
            return "The robot reaches G by a shortest route.", 1.0, True, False, {}
        self._done = truncated
        if end is None:
            obs = f"Move {bad_step} runs into a shelf or off the map."
        elif end != self._goal:
            obs = "The route is legal but does not end on G."
        else:
            obs = f"The route reaches G in {len(moves)} moves, but a shorter route exists."
        return obs, 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0 and len(self._answer) == 1:
            return "The text under the map says which way G is."
        r, c = self._start
        mid = (r, c)
        for m in self._answer[: self._dist // 2]:
            mid = (mid[0] + MOVES[m][0], mid[1] + MOVES[m][1])
        return (
            f"A shortest route takes exactly {self._dist} moves and passes through row {mid[0]}, "
            f"column {mid[1]} (columns counted from 0 at the left). Explore outward from S layer by "
            "layer (breadth-first) rather than heading straight for G."
        )
