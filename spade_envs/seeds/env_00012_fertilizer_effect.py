"""Average causal effect from confounded observational counts (back-door adjustment)."""

import random
import re
from fractions import Fraction
from spade_answers import loose_answer

METADATA = {
    "name": "Fertilizer Effect",
    "skill": "causal inference",
    "description": "Observational counts stratified by a confounder: compute the average causal effect of a treatment with the back-door adjustment formula; the crude comparison is misleading (Simpson's paradox).",
    "tags": ["causality", "back-door-adjustment", "confounding", "simpsons-paradox", "single-answer"],
}

STORIES = [
    ("fields", "the new fertilizer", "the old fertilizer", "a good harvest", "soil type", ["clay", "loam", "sand", "silt"]),
    ("patients", "the new drug", "the standard drug", "recovery within a week", "age group", ["under 30", "30-59", "60-74", "75+"]),
    ("students", "the tutoring program", "no tutoring", "passing the exam", "school", ["North High", "East High", "West High", "South High"]),
]


PARAMETERS = {'type': 'object',
 'properties': {'difficulty': {'type': 'integer',
                               'minimum': 0,
                               'maximum': 4,
                               'default': 3,
                               'description': '0: one group of 100 treated and 100 untreated, whole-ten '
                                              'rates, the text works out the difference: restate it in '
                                              'points (loose answer format); 1: one '
                                              'group, any sizes; 2: two confounded strata; 3: three or four '
                                              'confounded strata (the original); 4: six to eight confounded '
                                              'strata'},
                'num_strata': {'type': ['integer', 'null'],
                               'minimum': 1,
                               'maximum': 8,
                               'default': None,
                               'description': 'strata of the confounder; null: set by difficulty'},
                'loose_answer': {'type': ['boolean', 'null'],
                                 'default': None,
                                 'description': 'also accept the last number of a reply without \\\\boxed{} '
                                                '(null: only at difficulty 0)'},
                'max_turns': {'type': 'integer',
                              'minimum': 2,
                              'maximum': 40,
                              'default': 2,
                              'description': 'agent turns allowed'}}}

#: difficulty -> choices of the number of strata
LEVELS = {0: [1], 1: [1], 2: [2], 3: [3, 4], 4: [6, 7, 8]}


class FertilizerEffectEnv:
    """Single-answer causal estimate in percentage points; answers within 0.05 of the exact value win."""

    def __init__(self, max_turns=2, difficulty=3, num_strata=None, loose_answer=None, **kwargs):
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._strata = LEVELS[difficulty] if num_strata is None else [num_strata]
        self._loose = difficulty == 0 if loose_answer is None else loose_answer
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        unit, treat, control, outcome, conf, levels = rng.choice(STORIES)
        k = rng.choice(self._strata)
        if k > len(levels):
            levels = [f"{lv} ({side})" for lv in levels for side in ("north", "south")]
        levels = rng.sample(levels, k)
        while True:
            rows = []
            effect = rng.choice([-1, 1]) * rng.uniform(0.04, 0.2)
            for i in range(k):
                n = rng.randint(60, 400)
                share = rng.uniform(0.1, 0.9)  # how often this stratum gets the treatment
                base = rng.uniform(0.15, 0.8)
                n1 = max(5, round(n * share))
                n0 = max(5, n - n1)
                if self.difficulty == 0:  # the warm-up: 100 and 100, rates in whole tens
                    n1 = n0 = 100
                    base = rng.randint(1, 8) / 10
                    effect = rng.choice([-1, 1]) * rng.randint(1, 2) / 10 if base > 0.2 else rng.randint(1, 2) / 10
                r1 = min(0.97, max(0.03, base + effect + (0 if self.difficulty == 0 else rng.uniform(-0.05, 0.05))))
                r0 = min(0.97, max(0.03, base))
                rows.append((n1, round(n1 * r1), n0, round(n0 * r0)))
            total = sum(n1 + n0 for n1, _, n0, _ in rows)
            adjusted = sum(Fraction(n1 + n0, total) * (Fraction(y1, n1) - Fraction(y0, n0)) for n1, y1, n0, y0 in rows)
            crude = Fraction(sum(r[1] for r in rows), sum(r[0] for r in rows)) - Fraction(
                sum(r[3] for r in rows), sum(r[2] for r in rows))
            adjusted, crude = adjusted * 100, crude * 100
            if abs(adjusted) >= 2 and (k == 1 or abs(adjusted - crude) >= 4):
                break  # confounding must matter: the crude difference is misleading
        self._exact, self._crude = adjusted, crude
        self._answer = f"{float(adjusted):.1f}"
        self._turn = 0
        self._done = False
        table = [f"  {conf} {lv}: {n1} {unit} with {treat}, {y1} of them had {outcome}; "
                 f"{n0} {unit} with {control}, {y0} of them had {outcome}"
                 for lv, (n1, y1, n0, y0) in zip(levels, rows)]
        obs = (
            f"An observational study recorded, for each {conf}, how many {unit} received {treat} or "
            f"{control} and how many of them had {outcome}:\n" + "\n".join(table)
            + f"\nCausal assumptions: {conf} influences both which treatment was received and the "
            f"outcome; the treatment influences the outcome; there are no other common causes.\n"
            f"Estimate the average causal effect of {treat} (versus {control}) on the chance of "
            f"{outcome} across the whole population, P(outcome | do(treat)) - P(outcome | do(control)), "
            "in percentage points with one decimal (negative if it hurts): \\boxed{points}."
            + (f"\nWorked out: the effect is {float(adjusted):g} points."
               if self.difficulty == 0 and k == 1 and rows[0][0] == rows[0][2] == 100 else "")
        )
        return obs, {}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, {}
        self._turn += 1
        found = re.findall(r"\\boxed\{\s*([+-]?\d+(?:\.\d+)?)\s*(?:%|\\%|points|pp)?\s*\}", str(action).replace("\u2212", "-"))
        if self._loose and not re.search(r"\\boxed\{", str(action)):
            loose = loose_answer(str(action).replace("\u2212", "-"))
            found = [loose] if loose is not None and re.fullmatch(r"[+-]?\d+", loose) else []
        guess = Fraction(found[-1]) if found else None
        if guess is not None and abs(guess - self._exact) <= Fraction(1, 20) + Fraction(1, 10 ** 9):
            self._done = True
            return "Correct: that is the causal effect.", 1.0, True, False, {}
        truncated = self._turn >= self.max_turns
        self._done = truncated
        if guess is None:
            return "Give one number of percentage points, e.g. \\boxed{points}.", 0.0, False, truncated, {}
        return "That is not the average causal effect.", 0.0, False, truncated, {}

    def solution(self):
        return self._answer

    def hint(self):
        if self.difficulty == 0:
            return "The worked-out line gives the difference; with one group it is the causal effect."
        return (
            f"The crude comparison over everyone ({float(self._crude):.1f} points) is confounded. "
            "Compute the success-rate difference within each stratum, then average those "
            "differences weighted by each stratum's share of the WHOLE population (not of the "
            "treated group)."
        )
