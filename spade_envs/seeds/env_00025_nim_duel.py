"""Subtraction Nim for two players: take stones from one heap; whoever takes the last stone wins."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Nim Duel",
    "skill": "multi-agent game",
    "description": "Two players alternately remove 1..k stones from one heap; taking the last stone wins.",
    "tags": ["zero-sum", "perfect-information", "turn-based", "combinatorial-game"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one heap of at most k stones: take it all (loose answer '
                                              'format: a plain number is a count from heap 1); 1: one heap '
                                              'of up to twelve; 2: two heaps of two to six; 3: two to four '
                                              'heaps of two to nine, k from 3 to 5 (the original); 4: five '
                                              'to seven heaps of five to thirty, k from 5 to 9'},
                'num_heaps': {'type': ['integer', 'null'],
                              'minimum': 1,
                              'maximum': 7,
                              'default': None,
                              'description': 'heaps; null: set by difficulty'},
                'max_invalid': {'type': 'integer',
                                'minimum': 0,
                                'maximum': 10,
                                'default': 2,
                                'description': 'invalid moves a player may make before losing'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': ['integer', 'null'], 'minimum': 20, 'maximum': 400, 'default': None,
                              'description': 'moves (both players, valid or not) before a draw; null: 60 (200 at difficulty 4)'}}}

#: difficulty -> (heaps, stones per heap, choices of k)
LEVELS = {0: ((1, 1), (2, 5), [3, 4, 5]), 1: ((1, 1), (4, 12), [3, 4]), 2: ((2, 2), (2, 6), [3, 4]),
          3: ((2, 4), (2, 9), [3, 4, 5]), 4: ((5, 7), (5, 30), [5, 6, 7, 8, 9])}


class NimDuelEnv:
    """Normal-play subtraction Nim: 2-4 heaps, at most ``k`` stones per move (seeded)."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=None, max_invalid=2, difficulty=3, num_heaps=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns or (200 if difficulty == 4 else 60)
        self.max_invalid = max_invalid
        self.difficulty = difficulty
        heaps, self._sizes, self._ks = LEVELS[difficulty]
        self._n_heaps = heaps if num_heaps is None else (num_heaps, num_heaps)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        first_k = rng.choice(self._ks) if self.difficulty == 0 else None  # the warm-up: one move takes a heap
        self._heaps = [rng.randint(2, first_k) if first_k else rng.randint(*self._sizes)
                       for _ in range(rng.randint(*self._n_heaps))]
        self._k = first_k or rng.choice(self._ks)
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
        heaps = ", ".join(f"heap {i + 1}: {h}" for i, h in enumerate(self._heaps))
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        return (
            f"Nim duel. You are Player {player}. Players alternate; a move removes 1 to {self._k} stones "
            "from ONE heap. Whoever takes the last stone wins.\n"
            f"Heaps: {heaps}.\nLast: {self._last}\n{status}\n"
            "Move with \\boxed{HEAP COUNT}, e.g. \\boxed{1 2} takes 2 stones from heap 1."
        )

    # -- moves ---------------------------------------------------------------------
    def legal_actions(self, player=None):
        return [f"\\boxed{{{i + 1} {n}}}" for i, h in enumerate(self._heaps) for n in range(1, min(h, self._k) + 1)]

    def _parse(self, action):
        m = re.search(r"\\boxed\{\s*(\d+)\s*[, ]\s*(\d+)\s*\}", str(action))
        if not m and self._loose and len(self._heaps) == 1:
            count = loose_answer(str(action))
            if count is not None and count.isdigit():
                m = re.match(r"(\d+) (\d+)$", f"1 {count}")
        if not m:
            return None, "write your move as \\boxed{HEAP COUNT}"
        heap, count = int(m.group(1)), int(m.group(2))
        if not 1 <= heap <= len(self._heaps) or self._heaps[heap - 1] == 0:
            return None, f"heap {heap} does not exist or is empty"
        if not 1 <= count <= min(self._k, self._heaps[heap - 1]):
            return None, f"you may take 1 to {min(self._k, self._heaps[heap - 1])} stones from heap {heap}"
        return (heap - 1, count), ""

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        move, problem = self._parse(action)
        rewards = [0.0, 0.0]
        if move is None:
            self._invalid[p] += 1
            if self._invalid[p] > self.max_invalid:
                self._done = True
                self._last = f"Player {p} made too many invalid moves and loses."
                rewards = [1.0, 1.0]
                rewards[p] = -1.0
                return self.observe(p), rewards, True, False, {"winner": 1 - p}
            self._last = f"Player {p} tried an invalid move ({problem}) and must move again."
        else:
            heap, count = move
            self._heaps[heap] -= count
            self._last = f"Player {p} took {count} from heap {heap + 1}."
            if sum(self._heaps) == 0:
                self._done = True
                self._last += f" Player {p} took the last stone and wins."
                rewards = [-1.0, -1.0]
                rewards[p] = 1.0
                return self.observe(p), rewards, True, False, {"winner": p}
            self._player = 1 - p
        truncated = self._turn >= self.max_turns
        if truncated:
            self._done = True
            self._last += " The turn limit is reached: a draw."
        return self.observe(self._player), rewards, False, truncated, {}

    # -- baseline and hints ----------------------------------------------------------
    def scripted_action(self, player=None):
        k1 = self._k + 1
        total = 0
        for h in self._heaps:
            total ^= h % k1
        if total:
            for i, h in enumerate(self._heaps):
                target = (h % k1) ^ total
                take = h % k1 - target
                if 1 <= take <= min(self._k, h):
                    return f"\\boxed{{{i + 1} {take}}}"
        i = max(range(len(self._heaps)), key=lambda j: self._heaps[j])
        return f"\\boxed{{{i + 1} 1}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return (
            f"Reduce each heap modulo {self._k + 1} and XOR the results. Leave your opponent a position "
            "where that XOR is 0; from such a position every move can be answered."
        )
