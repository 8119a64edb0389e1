"""Colonel Blotto: both players secretly split their troops over three fields of different value."""

import random
import re

METADATA = {
    "name": "Colonel Blotto",
    "skill": "multi-agent game",
    "description": "Simultaneous moves: allocate troops over three valued battlefields, three rounds.",
    "tags": ["zero-sum", "hidden-information", "simultaneous", "resource-allocation"],
    "num_players": 2,
}


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one round, three soldiers, which may all go on one field '
                                              'named by its number, the most valuable stated (loose answer '
                                              'format: a plain number, or the last three numbers of a reply); '
                                              '1: one round, four or five '
                                              'soldiers; 2: two rounds, five to seven; 3: three rounds, six '
                                              'to ten soldiers (the original); 4: five rounds, twenty to '
                                              'thirty soldiers'},
                'rounds': {'type': ['integer', 'null'],
                           'minimum': 1,
                           'maximum': 9,
                           'default': None,
                           'description': 'rounds (simultaneous moves); null: set by difficulty (3 at the '
                                          'default)'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'}}}

#: difficulty -> (rounds, soldiers)
LEVELS = {0: (1, (3, 3)), 1: (1, (4, 5)), 2: (2, (5, 7)), 3: (3, (6, 10)), 4: (5, (20, 30))}

FIELDS = 3


class ColonelBlottoEnv:
    """Each round both players allocate exactly ``troops`` soldiers to three fields at the
    same time; the larger force takes a field and its value. The round goes to the larger
    total value; the game to whoever wins more of the rounds."""

    num_players = 2
    simultaneous = True

    def __init__(self, rounds=None, difficulty=3, loose_answer=None, **kwargs):
        level_rounds, self._troops_range = LEVELS[difficulty]
        self.difficulty = difficulty
        self.rounds = rounds = level_rounds if rounds is None else rounds
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.max_turns = rounds
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._troops = rng.randint(*self._troops_range)
        self._values = [[rng.randint(1, 5) for _ in range(FIELDS)] for _ in range(self.rounds)]
        self._history = []  # (alloc0, alloc1, winner or None)
        self._score = [0, 0]
        self._done = False
        self._last = "The game begins."
        return self.observe(0), {}

    # -- views ---------------------------------------------------------------------
    def current_player(self):
        return 0

    def observe(self, player):
        if self.difficulty == 0 and not self._done and self.rounds == 1:
            return self._read_off(player)
        r = len(self._history)
        lines = []
        for i, (a, b, w) in enumerate(self._history):
            mine, theirs = (a, b) if player == 0 else (b, a)
            who = "draw" if w is None else ("you" if w == player else "opponent")
            lines.append(f"  round {i + 1}: values {self._values[i]}, you {mine}, opponent {theirs} -> {who}")
        past = "\n".join(lines) or "  none yet"
        now = "The game is over." if self._done else (
            f"Round {r + 1} of {self.rounds}: field values {self._values[r]}. Both players move at once.")
        return (
            f"Colonel Blotto. You are Player {player}. Each round, split exactly {self._troops} soldiers over "
            f"{FIELDS} fields; the larger force on a field takes its value (ties: nobody). The larger total value "
            "wins the round; the most rounds wins the game.\n"
            f"Rounds won: you {self._score[player]}, opponent {self._score[1 - player]}.\nHistory:\n{past}\n"
            f"Last: {self._last}\n{now}\nMove with \\boxed{{A B C}} (soldiers on fields 1, 2, 3; sum {self._troops})."
        )

    def _read_off(self, player):
        """Difficulty 0: one field takes every soldier, and the most valuable is named."""
        values = self._values[0]
        top = max(range(FIELDS), key=lambda f: (values[f], -f)) + 1
        return (f"Colonel Blotto, one round. You are Player {player}; both players move at once. "
                f"Field values: {values}. Put all {self._troops} soldiers on one field "
                f"with \\boxed{{FIELD}} (1-{FIELDS}). Worked out: field {top} is worth the most. "
                f"The answer is \\boxed{{{top}}}")

    # -- moves -----------------------------------------------------------------------
    def legal_actions(self, player=None):
        t = self._troops
        return [f"\\boxed{{{a} {b} {t - a - b}}}" for a in range(t + 1) for b in range(t + 1 - a)]

    def _parse(self, action):
        text = str(action)
        m = re.search(r"\\boxed\{\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)\s*\}", text)
        found = re.findall(r"\d+", text) if self._loose and "\\boxed" not in text else []
        if not m and 3 <= len(found) <= 8:
            m = re.match(r"(\d+) (\d+) (\d+)$", " ".join(found[-3:]))
        if m:
            alloc = [int(g) for g in m.groups()]
            if sum(alloc) == self._troops:
                return alloc
        if self.difficulty == 0:  # every soldier on one field: \boxed{N}, or a plain N when loose
            one = re.search(r"\\boxed\{\s*([1-9])\s*\}", text)
            field = int(one.group(1)) if one else (
                int(found[-1]) if found and len(found) <= 6 and len(found[-1]) == 1 else 0)
            if 1 <= field <= FIELDS:
                return [self._troops if f == field - 1 else 0 for f in range(FIELDS)]
        return None

    def step(self, action):
        if self._done:
            return self.observe(0), [0.0, 0.0], True, False, {}
        acts = list(action) if isinstance(action, (list, tuple)) else [action, ""]
        acts = (acts + ["", ""])[:2]
        allocs = [self._parse(a) for a in acts]
        notes = [f"Player {p}'s move was invalid and counts as no soldiers." for p in (0, 1) if allocs[p] is None]
        allocs = [a if a is not None else [0] * FIELDS for a in allocs]
        values = self._values[len(self._history)]
        gain = [0, 0]
        for f in range(FIELDS):
            if allocs[0][f] != allocs[1][f]:
                gain[0 if allocs[0][f] > allocs[1][f] else 1] += values[f]
        winner = None if gain[0] == gain[1] else (0 if gain[0] > gain[1] else 1)
        if winner is not None:
            self._score[winner] += 1
        self._history.append((allocs[0], allocs[1], winner))
        self._last = " ".join(notes + [f"Round {len(self._history)}: value {gain[0]} to {gain[1]}."])
        if len(self._history) < self.rounds:
            return self.observe(0), [0.0, 0.0], False, False, {}
        self._done = True
        if self._score[0] == self._score[1]:
            return self.observe(0), [0.0, 0.0], True, False, {"winner": None}
        w = 0 if self._score[0] > self._score[1] else 1
        rewards = [-1.0, -1.0]
        rewards[w] = 1.0
        return self.observe(0), rewards, True, False, {"winner": w}

    # -- baseline and hints -------------------------------------------------------------
    def scripted_action(self, player=None):
        values = self._values[min(len(self._history), self.rounds - 1)]
        t = self._troops
        # concentrate on the most valuable fields that together are worth more than half
        order = sorted(range(FIELDS), key=lambda f: (-values[f], f))
        chosen, worth = [], 0
        for f in order:
            chosen.append(f)
            worth += values[f]
            if 2 * worth > sum(values):
                break
        alloc = [0] * FIELDS
        total = sum(values[f] for f in chosen)
        for f in chosen:
            alloc[f] = t * values[f] // total
        alloc[order[0]] += t - sum(alloc)
        return "\\boxed{" + " ".join(map(str, alloc)) + "}"

    def solution(self):
        return self.scripted_action()

    def hint(self, player=None):
        return ("You cannot win every field: pick the cheapest set of fields worth more than half the total value "
                "and spread your soldiers over them, leaving the rest empty.")
