"""Bluff dice: a one-round Liar's-dice duel with three hidden dice each."""

import math
import random
import re

METADATA = {
    "name": "Bluff Dice",
    "skill": "multi-agent game",
    "description": "Players bid on how many dice of a face lie under both cups, or call the last bid a lie.",
    "tags": ["zero-sum", "hidden-information", "turn-based", "bluffing"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 2,
                               'description': '0: one die each, the best move stated each turn; 1: two dice '
                                              'each; 2: three dice each (the original); 3: five dice each; 4: '
                                              'six dice each'},
                'num_dice': {'type': ['integer', 'null'],
                             'minimum': 1,
                             'maximum': 6,
                             'default': None,
                             'description': 'hidden dice per player; null: set by difficulty'},
                'max_invalid': {'type': 'integer',
                                'minimum': 0,
                                'maximum': 10,
                                'default': 2,
                                'description': 'invalid moves a player may make before losing'},
                'max_turns': {'type': 'integer',
                              'minimum': 20,
                              'maximum': 200,
                              'default': 40,
                              'description': 'moves (both players, valid or not) before a draw'}}}

#: difficulty -> hidden dice per player
LEVELS = {0: 1, 1: 2, 2: 3, 3: 5, 4: 6}

DICE = 3


class BluffDiceEnv:
    """Bids 'Q F' claim at least Q dice showing F among all six; a raise has a larger Q,
    or the same Q and a larger F. Calling 'liar' reveals the dice: a true bid makes the
    caller lose, a false one the bidder."""

    num_players = 2
    simultaneous = False

    def __init__(self, max_turns=40, max_invalid=2, difficulty=2, num_dice=None, **kwargs):
        self.max_turns = max_turns
        self.max_invalid = max_invalid
        self.difficulty = difficulty
        self._ndice = LEVELS[difficulty] if num_dice is None else num_dice
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._dice = [sorted(rng.randint(1, 6) for _ in range(self._ndice)) for _ in range(2)]
        self._bids = []  # (player, quantity, face)
        self._player = 0
        self._turn = 0
        self._invalid = [0, 0]
        self._done = False
        self._reveal = ""
        self._last = "The game begins."
        return self.observe(0), {}

    # -- views ---------------------------------------------------------------------
    def current_player(self):
        return self._player

    def observe(self, player):
        bids = ", ".join(f"P{p}: {q} x {f}" for p, q, f in self._bids) or "none yet"
        status = "The game is over." if self._done else (
            "It is your turn." if player == self._player else f"Player {self._player} is to move.")
        return (
            f"Bluff dice. You are Player {player}. Each player has {self._ndice} hidden dice. A bid 'Q F' claims at least "
            f"Q of all {2 * self._ndice} dice show face F (ones are not wild). Raise the bid (larger Q, or same Q and larger F) "
            "or call the last bid a lie; when called, a true bid makes the caller lose, a false one the bidder.\n"
            f"Your dice: {' '.join(map(str, self._dice[player]))}.\nBids: {bids}.\n{self._reveal}"
            f"Last: {self._last}\n{status}\nAct with \\boxed{{Q F}} (e.g. \\boxed{{2 5}}) or \\boxed{{liar}}."
        ) + self._worked_out(player)

    def _worked_out(self, player):
        """Difficulty 0 is a read-off: the player to move is told the baseline's move."""
        if self.difficulty != 0 or self._done or player != self._player:
            return ""
        move = self.scripted_action()
        return f"\nWorked out: the best move now is {move[7:-1]}. The answer is {move}"

    # -- moves -----------------------------------------------------------------------
    def _raises(self):
        q0, f0 = (self._bids[-1][1], self._bids[-1][2]) if self._bids else (0, 6)
        return [(q, f) for q in range(max(1, q0), 2 * self._ndice + 1) for f in range(1, 7) if (q, f) > (q0, f0)]

    def legal_actions(self, player=None):
        acts = [f"\\boxed{{{q} {f}}}" for q, f in self._raises()]
        return acts + (["\\boxed{liar}"] if self._bids else [])

    def _finish(self, loser, why):
        self._done = True
        self._reveal = f"Dice revealed: P0 {self._dice[0]}, P1 {self._dice[1]}.\n"
        self._last += " " + why + f" Player {1 - loser} wins."
        rewards = [1.0, 1.0]
        rewards[loser] = -1.0
        return self.observe(self._player), rewards, True, False, {"winner": 1 - loser}

    def step(self, action):
        if self._done:
            return self.observe(self._player), [0.0, 0.0], True, False, {}
        p = self._player
        self._turn += 1
        text = str(action)
        call = re.search(r"\\boxed\{\s*liar\s*\}", text, re.IGNORECASE)
        m = re.search(r"\\boxed\{\s*(\d+)\s*[x, ]\s*(\d+)\s*\}", text)
        if call and self._bids:
            _, q, f = self._bids[-1]
            count = sum(d == f for hand in self._dice for d in hand)
            self._last = f"Player {p} called liar on {q} x {f}; there are {count}."
            return self._finish(p if count >= q else 1 - p, "The bid was true." if count >= q else "The bid was false.")
        if m and (int(m.group(1)), int(m.group(2))) in self._raises():
            q, f = int(m.group(1)), int(m.group(2))
            self._bids.append((p, q, f))
            self._last = f"Player {p} bid {q} x {f}."
            self._player = 1 - p
        else:
            self._invalid[p] += 1
            self._last = f"Player {p} made an invalid move (a higher bid, or liar after a bid)."
            if self._invalid[p] > self.max_invalid:
                return self._finish(p, "Too many invalid moves.")
            self._last += " Try again."
        if self._turn >= self.max_turns:
            self._done = True
            self._last += " The turn limit is reached: a draw."
            return self.observe(self._player), [0.0, 0.0], False, True, {}
        return self.observe(self._player), [0.0, 0.0], False, False, {}

    # -- baseline and hints -------------------------------------------------------------
    def _p_true(self, player, q, f):
        need = q - sum(d == f for d in self._dice[player])
        if need <= 0:
            return 1.0
        return sum(math.comb(self._ndice, k) * (1 / 6) ** k * (5 / 6) ** (self._ndice - k) for k in range(need, self._ndice + 1))

    def scripted_action(self, player=None):
        p = self._player
        raises = self._raises()
        best = max(raises, key=lambda b: (round(self._p_true(p, *b), 9), -b[0], -b[1]), default=None)
        p_best = self._p_true(p, *best) if best else 0.0
        if self._bids:
            _, q, f = self._bids[-1]
            if 1.0 - self._p_true(p, q, f) >= p_best:
                return "\\boxed{liar}"
        if best is None:
            return "\\boxed{liar}"
        return f"\\boxed{{{best[0]} {best[1]}}}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return ("Each hidden die shows a given face with probability 1/6: compare a bid with your own dice plus "
                "that expectation; call liar when the last bid is more likely false than your best raise is true.")
