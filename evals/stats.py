"""Small statistics for eval summaries: Wilson score intervals and rate summaries.

``wilson_interval(k, n)`` is the 95% Wilson score interval of a binomial proportion
(Wilson 1927), the interval evals report next to every success rate; it stays inside
[0, 1] and is sensible for k = 0, k = n and small n, unlike the normal approximation.

``mcnemar_exact(before, after)`` is the exact two-sided McNemar test of paired outcomes
(the same episodes played before and after training); ``paired_summary`` puts both
together for the learning bench.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

#: two-sided 95% normal quantile
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval ``(low, high)`` for ``successes`` out of ``n``.

    ``n == 0`` gives ``(0.0, 1.0)`` (nothing is known). Raises ``ValueError`` when
    ``successes`` is outside ``[0, n]``."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_summary(flags: Iterable[bool | None]) -> dict[str, Any]:
    """``{"n", "k", "rate", "ci95": [low, high]}`` over the non-None booleans of ``flags``."""
    values = [bool(f) for f in flags if f is not None]
    n, k = len(values), sum(values)
    low, high = wilson_interval(k, n)
    return {"n": n, "k": k, "rate": (k / n) if n else 0.0, "ci95": [round(low, 6), round(high, 6)]}


def mean_summary(values: Iterable[float | None]) -> dict[str, Any]:
    """``{"n", "mean"}`` over the non-None numbers of ``values`` (mean 0.0 when empty)."""
    xs = [float(v) for v in values if v is not None]
    return {"n": len(xs), "mean": (sum(xs) / len(xs)) if xs else 0.0}


def mcnemar_exact(before: Sequence[bool], after: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value of paired outcomes (the same episodes before and
    after): under "no change", each discordant pair (won only before, or only after) is a
    fair coin, so the p-value is the two-sided binomial tail of the smaller count over the
    discordant pairs (1.0 when there is none). Raises ``ValueError`` on unequal lengths."""
    if len(before) != len(after):
        raise ValueError(f"paired outcomes need equal lengths, got {len(before)} and {len(after)}")
    only_before = sum(1 for b, a in zip(before, after) if b and not a)
    only_after = sum(1 for b, a in zip(before, after) if a and not b)
    n = only_before + only_after
    if n == 0:
        return 1.0
    k = min(only_before, only_after)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def paired_summary(before: Sequence[bool], after: Sequence[bool]) -> dict[str, Any]:
    """Before/after rates of paired outcomes with Wilson intervals, the difference, the
    discordant counts and the exact McNemar p-value."""
    b, a = rate_summary(before), rate_summary(after)
    return {"before": b["rate"], "after": a["rate"], "before_ci95": b["ci95"], "after_ci95": a["ci95"],
            "delta": round(a["rate"] - b["rate"], 6), "episodes": len(before),
            "won_only_before": sum(1 for x, y in zip(before, after) if x and not y),
            "won_only_after": sum(1 for x, y in zip(before, after) if y and not x),
            "p_value": round(mcnemar_exact(before, after), 6)}
