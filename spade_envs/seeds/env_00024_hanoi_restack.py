"""Tower of Hanoi from a scrambled position: restack every disk on the target peg within a tight move limit."""

import random
import re

METADATA = {
    "name": "Hanoi Restack",
    "skill": "multi-step game",
    "description": "Disks start scattered over three pegs; gather them on the target peg, never placing a larger disk on a smaller one, with little slack over the optimum.",
    "tags": ["multi-step game", "optimization", "spatial reasoning", "planning", "recursion"],
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': "0: one disk, one move, the move stated (loose answer format: 'B to C' in a "
                                              'reply); 1: two disks, two or three moves; 2: three disks, '
                                              'three to seven moves; 3: four to six disks, seven to '
                                              'forty-five moves (the original); 4: seven or eight disks, '
                                              'sixty to two hundred moves, one spare move'},
                'num_disks': {'type': ['integer', 'null'],
                              'minimum': 1,
                              'maximum': 8,
                              'default': None,
                              'description': 'disks; null: set by difficulty'},
                'max_turns': {'type': ['integer', 'null'],
                              'minimum': 2,
                              'maximum': 300,
                              'default': None,
                              'description': 'moves allowed; null: the stated move limit'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (disks, fewest and most optimal moves, spare moves allowed)
LEVELS = {0: ((1, 1), 1, 1, [1, 2]), 1: ((2, 2), 2, 3, [1, 2]), 2: ((3, 3), 3, 7, [1, 2, 3]),
          3: ((4, 6), 7, 45, [1, 2, 3]), 4: ((7, 8), 60, 200, [1])}

PEGS = "ABC"


class HanoiRestackEnv:
    """One move per step as ``\\boxed{A->C}``. Win: all disks on the target peg within the move limit."""

    def __init__(self, max_turns=None, difficulty=3, num_disks=None, loose_answer=None, **kwargs):
        self._max_turns_arg = max_turns
        self.difficulty = difficulty
        disks, self._least, self._most, self._slack = LEVELS[difficulty]
        self._disks = disks if num_disks is None else (num_disks, num_disks)
        if num_disks is not None:
            self._least, self._most = 1, 2 ** num_disks
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._n = rng.randint(*self._disks)
        self._target = rng.choice(PEGS)
        while True:
            # _where[d] is the peg of disk d (1 = smallest); any assignment is a legal position
            self._where = {d: rng.choice(PEGS) for d in range(1, self._n + 1)}
            optimum = len(self._plan())
            if self._least <= optimum <= self._most:
                break
        self._limit = optimum + rng.choice(self._slack)
        self.max_turns = self._max_turns_arg or self._limit
        self._moves = 0
        self._done = False
        obs = (f"{self._n} disks (1 = smallest) sit on pegs A, B and C. Move them all onto peg {self._target}. "
               "Move one top disk per turn with \\boxed{X->Y}; a disk may never rest on a smaller one. "
               f"You have at most {self._limit} moves.\n" + self._render())
        if self.difficulty == 0:  # a read-off: the one move is worked out
            src, dst = self._plan()[0]
            obs += f"\nWorked out: one move finishes. The answer is \\boxed{{{src} to {dst}}}"
        return obs, {}

    def _stacks(self):
        return {p: sorted((d for d, q in self._where.items() if q == p), reverse=True) for p in PEGS}

    def _render(self):
        lines = [f"  {p}: " + (" ".join(str(d) for d in s) or "(empty)") for p, s in self._stacks().items()]
        return "Pegs (bottom to top):\n" + "\n".join(lines)

    def _plan(self):
        """Shortest move list from the current position to all disks on the target peg."""
        where = dict(self._where)
        moves = []

        def tower(k, src, dst):  # move disks 1..k, all on src, to dst
            if k == 0:
                return
            spare = [p for p in PEGS if p not in (src, dst)][0]
            tower(k - 1, src, spare)
            moves.append((src, dst))
            where[k] = dst
            tower(k - 1, spare, dst)

        def gather(k, dst):  # disks 1..k in any legal position -> all on dst
            if k == 0:
                return
            if where[k] == dst:
                gather(k - 1, dst)
                return
            spare = [p for p in PEGS if p not in (where[k], dst)][0]
            gather(k - 1, spare)
            moves.append((where[k], dst))
            where[k] = dst
            tower(k - 1, spare, dst)

        gather(self._n, self._target)
        return moves

    def step(self, action):
        if self._done:
            return "The episode is over; call reset().", 0.0, True, False, {}
        self._moves += 1
        left = self._limit - self._moves
        out_of_moves = self._moves >= self.max_turns or left <= 0
        m = re.search(r"\\boxed\{\s*([A-Ca-c])\s*(?:->|→|-|to|,|\s)\s*([A-Ca-c])\s*\}", str(action))
        if self._loose and not m and "\\boxed" not in str(action):
            found = list(re.finditer(r"\b([ABC])\s*(?:->|→|-|to)\s*(?:peg\s*)?([ABC])\b", str(action)))
            m = found[-1] if 1 <= len(found) <= 3 else None
        if not m:
            self._done = out_of_moves
            text = f"Invalid action: write a move as \\boxed{{X->Y}} (take from peg X, put on peg Y). {left} moves left."
            return text, 0.0, False, out_of_moves, {"invalid": True}
        src, dst = m.group(1).upper(), m.group(2).upper()
        stacks = self._stacks()
        if src == dst or not stacks[src] or (stacks[dst] and stacks[dst][-1] < stacks[src][-1]):
            why = "same peg" if src == dst else ("peg is empty" if not stacks[src] else "larger disk on a smaller one")
            self._done = out_of_moves
            text = f"Illegal move ({why}); the move still counts. {left} moves left.\n" + self._render()
            return text, 0.0, False, out_of_moves, {"invalid": True}
        self._where[stacks[src][-1]] = dst
        if all(p == self._target for p in self._where.values()):
            self._done = True
            return f"All disks are on peg {self._target}. You win!", 1.0, True, False, {}
        self._done = out_of_moves
        status = "Out of moves. " if out_of_moves else f"{left} moves left. "
        return status + "\n" + self._render(), 0.0, False, out_of_moves, {}

    def solution(self):
        return "\n".join(f"\\boxed{{{a}->{b}}}" for a, b in self._plan())

    def hint(self):
        return ("Work from the largest disk down: if it already sits on the target, ignore it; otherwise first "
                "park every smaller disk on the third peg, move it, then move that smaller tower on top "
                "(a tower of k disks takes 2^k - 1 moves).")
