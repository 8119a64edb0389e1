"""Wilson intervals and rate summaries against hand-computed values."""

import pytest

from spade_envs.evals.stats import mean_summary, rate_summary, wilson_interval


@pytest.mark.parametrize(
    "k,n,low,high",
    [(5, 10, 0.2366, 0.7634), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (1, 1, 0.2065, 1.0), (80, 100, 0.7112, 0.8666)],
)
def test_wilson_known_values(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_edges():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    lo, hi = wilson_interval(50, 100)
    assert lo < 0.5 < hi and hi - 0.5 == pytest.approx(0.5 - lo)


def test_rate_and_mean_summary_skip_none():
    s = rate_summary([True, False, None, True])
    assert (s["n"], s["k"]) == (3, 2) and s["rate"] == pytest.approx(2 / 3)
    assert s["ci95"][0] < 2 / 3 < s["ci95"][1]
    assert mean_summary([1.0, None, 0.0]) == {"n": 2, "mean": 0.5}
    assert rate_summary([])["rate"] == 0.0
