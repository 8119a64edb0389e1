"""Maze walk in the fog: only the walls around the current cell are visible; reach the exit."""

import random
import re
from collections import deque

METADATA = {
    "name": "Fog Maze",
    "skill": "multi-step game",
    "description": "Walk a hidden maze one cell at a time, seeing only which directions are open, to reach a known exit.",
    "tags": ["multi-step game", "spatial reasoning", "exploration", "partial observability", "memory"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: a 2x2 maze with the exit one move away, the move stated (loose answer '
                                              'format: a direction letter or word); 1: 3x3, exit two to four '
                                              'moves away; 2: 4x5, five to ten moves; 3: 6-8 x 6-8, twelve '
                                              'to forty moves (the original); 4: 12-14 x 12-14, forty to '
                                              'eighty moves'},
                'size': {'type': ['integer', 'null'],
                         'minimum': 2,
                         'maximum': 14,
                         'default': None,
                         'description': 'rows and columns of the maze; null: set by difficulty'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 200,
                              'default': 90,
                              'description': 'moves allowed (never fewer than the shortest way out plus '
                                             'one)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (rows, columns, nearest and farthest exit in moves)
LEVELS = {0: ((2, 2), (2, 2), 1, 1), 1: ((3, 3), (3, 3), 2, 4), 2: ((4, 4), (5, 5), 5, 10), 3: ((6, 8), (6, 8), 12, 40),
          4: ((12, 14), (12, 14), 40, 80)}

MOVES = {"N": (-1, 0), "S": (1, 0), "E": (0, 1), "W": (0, -1)}
WORDS = {"NORTH": "N", "SOUTH": "S", "EAST": "E", "WEST": "W", "UP": "N", "DOWN": "S", "RIGHT": "E", "LEFT": "W"}


class FogMazeEnv:
    """One move per step as ``\\boxed{N|S|E|W}``. Win: standing on the exit before the step budget runs out."""

    def __init__(self, max_turns=90, difficulty=3, size=None, loose_answer=None, **kwargs):
        self._turns_asked = self.max_turns = max_turns
        self.difficulty = difficulty
        rows, cols, self._near, self._far = LEVELS[difficulty]
        self._rows, self._cols = (rows, cols) if size is None else ((size, size), (size, size))
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._h, self._w = rng.randint(*self._rows), rng.randint(*self._cols)
        self._open = {(r, c): set() for r in range(self._h) for c in range(self._w)}
        # depth-first carving gives a perfect maze; a few extra openings add loops
        start = (rng.randrange(self._h), rng.randrange(self._w))
        stack, seen = [start], {start}
        while stack:
            r, c = stack[-1]
            options = [(d, (r + dr, c + dc)) for d, (dr, dc) in MOVES.items() if (r + dr, c + dc) in self._open
                       and (r + dr, c + dc) not in seen]
            if not options:
                stack.pop()
                continue
            d, nxt = rng.choice(options)
            self._link((r, c), d)
            seen.add(nxt)
            stack.append(nxt)
        for _ in range(rng.randint(2, 5)):
            cell = (rng.randrange(self._h), rng.randrange(self._w))
            d = rng.choice(sorted(MOVES))
            if self._neighbour(cell, d) in self._open:
                self._link(cell, d)
        dist = self._distances(start)
        far = sorted(cell for cell, n in dist.items() if self._near <= n <= self._far)
        self._exit = rng.choice(far) if far else max(dist, key=lambda k: (dist[k], k))
        self.max_turns = max(self._turns_asked, dist[self._exit] + 1)
        self._pos = start
        self._turn = 0
        self._done = False
        intro = (f"You are in a {self._h}x{self._w} maze in thick fog (rows 1-{self._h} top to bottom, columns "
                 f"1-{self._w} left to right). The exit is at row {self._exit[0] + 1}, column {self._exit[1] + 1}. "
                 f"You have {self.max_turns} moves; move by writing one direction letter (N, S, E or W) inside \\boxed{{}}.\n")
        obs = intro + self._view()
        if self.difficulty == 0:  # a read-off: the one move is worked out
            obs += f"\nWorked out: one move reaches the exit. The answer is {self.solution().strip()}"
        return obs, {}

    def _neighbour(self, cell, d):
        return cell[0] + MOVES[d][0], cell[1] + MOVES[d][1]

    def _link(self, cell, d):
        back = {"N": "S", "S": "N", "E": "W", "W": "E"}[d]
        self._open[cell].add(d)
        self._open[self._neighbour(cell, d)].add(back)

    def _distances(self, src):
        dist, queue = {src: 0}, deque([src])
        while queue:
            cell = queue.popleft()
            for d in sorted(self._open[cell]):
                nxt = self._neighbour(cell, d)
                if nxt not in dist:
                    dist[nxt] = dist[cell] + 1
                    queue.append(nxt)
        return dist

    def _view(self):
        names = {"N": "north", "E": "east", "S": "south", "W": "west"}
        open_dirs = [names[d] for d in "NESW" if d in self._open[self._pos]]
        return (f"You stand at row {self._pos[0] + 1}, column {self._pos[1] + 1}. Open: {', '.join(open_dirs)}. "
                f"Moves left: {self.max_turns - self._turn}.")

    def step(self, action):
        if self._done:
            return "The episode is over; call reset().", 0.0, True, False, {}
        self._turn += 1
        truncated = self._turn >= self.max_turns
        m = re.search(r"\\boxed\{\s*([A-Za-z]+)\s*\}", str(action))
        if self._loose and not m and "\\boxed" not in str(action):
            named = re.findall(r"\b(north|south|east|west|N|S|E|W)\b", str(action), re.IGNORECASE)
            if named and len(named) <= 4:
                m = re.match(r"(\w)", named[-1].upper())
        d = m.group(1).upper() if m else ""
        d = WORDS.get(d, d)
        if d not in MOVES:
            self._done = truncated
            return ("Invalid action: write one direction (N, S, E or W) inside \\boxed{}. " + self._view(),
                    0.0, False, truncated, {"invalid": True})
        if d not in self._open[self._pos]:
            self._done = truncated
            return "You bump into a wall. " + self._view(), 0.0, False, truncated, {}
        self._pos = self._neighbour(self._pos, d)
        if self._pos == self._exit:
            self._done = True
            return "You step out of the fog through the exit. You win!", 1.0, True, False, {}
        self._done = truncated
        return self._view(), 0.0, False, truncated, {}

    def solution(self):
        # breadth-first search from the current position, remembering the move into each cell
        back, queue = {self._pos: None}, deque([self._pos])
        while queue:
            cell = queue.popleft()
            for d in sorted(self._open[cell]):
                nxt = self._neighbour(cell, d)
                if nxt not in back:
                    back[nxt] = (cell, d)
                    queue.append(nxt)
        path, cell = [], self._exit
        while back.get(cell) is not None:
            cell, d = back[cell]
            path.append(d)
        return "\n".join(f"\\boxed{{{d}}}" for d in reversed(path))

    def hint(self):
        return ("Keep a map of the cells you have seen and which sides are open. Follow one wall (always "
                "prefer turning right) or explore depth-first, backtracking from dead ends, while steering "
                "toward the exit's row and column.")
