"""Counterfactual reasoning in a small structural causal model of a factory day."""

import random
import re
from spade_answers import loose_answer

METADATA = {
    "name": "Factory Counterfactual",
    "skill": "causal inference",
    "description": "A structural causal model with hidden disturbances and one observed day: abduct the disturbances, intervene on one variable, and predict another (abduction, action, prediction).",
    "tags": ["causality", "structural-causal-model", "counterfactual", "intervention", "single-answer"],
}

VARIABLES = ["Demand", "Staffing", "Backlog", "Overtime", "Output", "Defects", "Returns", "Revenue", "Morale"]


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: two variables, B := A + u_B, and the text works out B '
                                              'for the new A: restate it (loose answer format); 1: three variables; 2: four or five; '
                                              '3: six or seven variables with max/min terms (the original); '
                                              '4: eight or nine variables'},
                'num_variables': {'type': ['integer', 'null'],
                                  'minimum': 2,
                                  'maximum': 9,
                                  'default': None,
                                  'description': 'variables of the causal model; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> fewest and most variables
LEVELS = {0: (2, 2), 1: (3, 3), 2: (4, 5), 3: (6, 7), 4: (8, 9)}


class FactoryCounterfactualEnv:
    """Single-answer counterfactual; equations mix linear terms with max/min."""

    def __init__(self, max_turns=2, difficulty=3, num_variables=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._sizes = LEVELS[difficulty] if num_variables is None else (num_variables, num_variables)
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    @staticmethod
    def _f(eq, vals):
        """Value of an equation without its disturbance."""
        kind, parents, coefs = eq
        if kind == "root":
            return 0
        if kind == "max":
            return max(vals[p] for p in parents)
        if kind == "min":
            return min(vals[p] for p in parents)
        return sum(c * vals[p] for c, p in zip(coefs, parents))

    def _text(self, i):
        kind, parents, coefs = self._eqs[i]
        name, ps = self._names[i], [self._names[p] for p in parents]
        if kind == "root":
            return f"{name} := u_{name}"
        if kind in ("max", "min"):
            return f"{name} := {kind}({', '.join(ps)}) + u_{name}"
        terms = " ".join(f"{'-' if c < 0 else '+'} {p if abs(c) == 1 else f'{abs(c)}*{p}'}" for c, p in zip(coefs, ps))
        return f"{name} := {terms.lstrip('+ ')} + u_{name}"

    def _simulate(self, noise, forced=None):
        vals = []
        for i, eq in enumerate(self._eqs):
            vals.append(forced[1] if forced and forced[0] == i else self._f(eq, vals) + noise[i])
        return vals

    def _descendants(self, x):
        out = {x}
        for i, (_, parents, _) in enumerate(self._eqs):
            if any(p in out for p in parents):
                out.add(i)
        return out - {x}

    def reset(self, seed=None):
        rng = random.Random(seed)
        while True:
            n = rng.randint(*self._sizes)
            self._names = rng.sample(VARIABLES, n)
            eqs = [("root", [], [])]
            for i in range(1, n):
                parents = sorted(rng.sample(range(i), min(i, rng.choice([1, 2, 2]))))
                if len(parents) == 2 and rng.random() < 0.35:
                    eqs.append((rng.choice(["max", "min"]), parents, []))
                else:
                    eqs.append(("lin", parents, [rng.choice([-2, -1, 1, 2, 3]) for _ in parents]))
            if self.difficulty == 0:
                eqs = [("root", [], []), ("lin", [0], [1])] + eqs[2:]
            self._eqs = eqs
            noise = [rng.randint(4, 15)] + [rng.randint(-6, 9) for _ in range(n - 1)]
            fact = self._simulate(noise)
            x = rng.randrange(max(1, n - 2))
            targets = sorted(self._descendants(x))
            if not targets:
                continue
            y = targets[-1]
            new_x = fact[x] + rng.choice([-4, -3, -2, 2, 3, 4, 5])
            answer = self._simulate(noise, forced=(x, new_x))[y]
            naive = self._simulate([0] * n, forced=(x, new_x))[y]
            if answer == fact[y] or answer == naive or abs(answer) > 999:
                continue  # the intervention must matter, and ignoring disturbances must fail
            obs = (
                "A factory is described by this structural causal model (evaluated top to bottom; "
                "each u_* is a hidden, day-specific disturbance, an integer):\n"
                + "\n".join(f"  {self._text(i)}" for i in range(n))
                + "\nYesterday these values were observed:\n  "
                + ", ".join(f"{self._names[i]} = {fact[i]}" for i in range(n))
                + (f" (so u_{self._names[y]} = {noise[y]})" if self.difficulty == 0 else "")
                + f"\nCounterfactual question: had {self._names[x]} been set to {new_x} yesterday "
                f"(all disturbances as they actually were), what would {self._names[y]} have been? "
                "Answer with \\boxed{integer}."
            )
            if not re.search(rf"(?<!\w){answer}(?!\w)", obs):
                break  # the answer must not appear anywhere in the text
        if self.difficulty == 0 and n == 2:  # the warm-up states the worked answer: restate it
            worked = f"\nWorked out: {self._names[y]} would have been {answer}."
            obs = obs.replace(" Answer with \\boxed{integer}.", worked + " Answer with \\boxed{integer}.")
        self._x, self._y, self._answer = x, y, answer
        self._turn = 0
        self._done = False
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{\s*(-?\d+)\s*\}", str(action).replace("\u2212", "-"))
        if self._loose and not re.search(r"\\boxed\{", str(action)):
            loose = loose_answer(str(action).replace("\u2212", "-"))
            found = [loose] if loose is not None and re.fullmatch(r"-?\d+", loose) else []
        guess = int(found[-1]) if found else None
        if guess == self._answer:
            self._done = True
            return "Correct: that is what would have happened.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if guess is None:
            return "Give one integer as \\boxed{integer}.", 0.0, False, truncated, {}
        return "That is not the counterfactual value.", 0.0, False, truncated, {}

    def solution(self):
        return str(self._answer)

    def hint(self):
        if self.difficulty == 0 and len(self._names) == 2:
            return "The worked-out line above the question gives the value."
        changed = [self._names[i] for i in sorted(self._descendants(self._x))]
        return (
            "First recover every disturbance from the observed day (u_V = observed V minus the rest "
            f"of its equation). Then set {self._names[self._x]}, keep all u's, and recompute only its "
            f"descendants, in order: {', '.join(changed)}. Everything else keeps its observed value."
        )
