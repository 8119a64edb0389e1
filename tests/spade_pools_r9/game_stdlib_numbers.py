"""SPADE self-play generated game"""

import bisect
import calendar
import datetime
from decimal import Decimal, ROUND_HALF_UP
from fractions import Fraction
import random
import re
from typing import Tuple


class InvoiceDueEnv:
    """Work out an invoice's due weekday and its exact share of a split bill."""

    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self._answer = ""

    def reset(self, seed=None) -> Tuple[str, dict]:
        rng = random.Random(seed)
        self.turn_count = 0
        start = datetime.date(2024, rng.randint(1, 12), rng.randint(1, 28))
        days = rng.choice([14, 30, 45, 60])
        due = start + datetime.timedelta(days=days)
        weekday = calendar.day_name[due.weekday()]
        share = Fraction(rng.randint(10, 99), rng.choice([3, 4, 6]))
        cents = Decimal(share.numerator) / Decimal(share.denominator)
        rounded = cents.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        bands = [10, 20, 30]
        band = bisect.bisect(bands, float(rounded))
        self._answer = f"{weekday},{rounded},{band}"
        return (f"An invoice dated {start.isoformat()} is due {days} days later. The bill share is "
                f"{share.numerator}/{share.denominator} euros. Give the due weekday, the share rounded to cents, "
                f"and its band (number of thresholds {bands} at or below it) as \\boxed{{Weekday,amount,band}}."), {}

    def solution(self) -> str:
        return self._answer

    def step(self, action: str) -> Tuple[str, float, bool, bool, dict]:
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        if m and m.group(1).replace(" ", "") == self._answer:
            return "Paid on time.", 1.0, True, False, {}
        return "That is not it.", 0.0, False, self.turn_count >= self.max_turns, {}
