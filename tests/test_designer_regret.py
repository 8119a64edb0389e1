"""Regret, blend and solve_rate from scripted rewards (designer/regret.py)."""

from __future__ import annotations

import math

import pytest

from spade_envs.designer.regret import RegretEstimate, RewardMode, plateau


def test_regret_is_hint_minus_plain_mean_clipped_at_zero():
    est = RegretEstimate.from_rewards([1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])
    assert est.mean_hint == pytest.approx(0.75)
    assert est.mean_plain == pytest.approx(0.25)
    assert est.regret == pytest.approx(0.5)
    assert est.win_rate_hint == pytest.approx(0.75)
    assert est.win_rate_plain == pytest.approx(0.25)
    # the hint hurting gives zero regret, never a negative one
    assert RegretEstimate.from_rewards([0.0, 0.0], [1.0, 1.0]).regret == 0.0


def test_partial_credit_counts_in_means_but_not_as_wins_and_rewards_are_clipped():
    est = RegretEstimate.from_rewards([0.5, 3.0], [-2.0, 0.25])
    assert est.rewards_hint == (0.5, 1.0)  # clipped to [-1, 1]
    assert est.rewards_plain == (-1.0, 0.25)
    assert est.regret == pytest.approx(0.75 - (-0.375))
    assert est.win_rate_hint == 0.5 and est.win_rate_plain == 0.0


def test_invalid_rewards_are_refused():
    with pytest.raises(ValueError):
        RegretEstimate.from_rewards([], [1.0])
    with pytest.raises(ValueError):
        RegretEstimate.from_rewards([math.nan], [1.0])


@pytest.mark.parametrize("rate, expected", [
    (0.0, 0.0), (0.15, 0.0), (0.275, 0.5), (0.4, 1.0), (0.5, 1.0), (0.6, 1.0), (0.725, 0.5), (0.85, 0.0), (1.0, 0.0),
])
def test_plateau_shape(rate, expected):
    assert plateau(rate) == pytest.approx(expected)


def test_blend_and_solve_rate_modes():
    # plain wins 2 of 4 (0.5, on the plateau), hinted 4 of 4: regret 0.5
    est = RegretEstimate.from_rewards([1, 1, 1, 1], [1, 0, 1, 0])
    assert est.designer_reward("regret") == pytest.approx(0.5)
    assert est.designer_reward(RewardMode.BLEND) == pytest.approx(0.4 * 1.0 + 0.6 * 1.0)
    assert est.designer_reward("solve_rate") == pytest.approx(1.0)
    # small regret 0.075 -> half the regret share; plain win rate 0.0 -> plateau 0
    est2 = RegretEstimate.from_rewards([0.075], [0.0])
    assert est2.designer_reward("blend") == pytest.approx(0.4 * 0.5)
    assert est2.designer_reward("solve_rate") == 0.0
    # plain win rate 0.75 -> plateau 0.4; regret 0.25 -> full share
    est3 = RegretEstimate.from_rewards([1, 1, 1, 1], [1, 1, 1, 0])
    assert est3.designer_reward("blend") == pytest.approx(0.4 + 0.6 * 0.4)
    with pytest.raises(ValueError):
        est3.designer_reward("bogus")


def test_as_dict_fields():
    d = RegretEstimate.from_rewards([1.0, 0.0], [0.0, 0.0, 0.0]).as_dict()
    assert d == {"regret": 0.5, "mean_reward_hint": 0.5, "mean_reward_plain": 0.0, "win_rate_hint": 0.5,
                 "win_rate_plain": 0.0, "n_hint": 2, "n_plain": 3}
