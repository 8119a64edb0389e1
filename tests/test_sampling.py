"""The decode sampler (``agents/sampling.py``): the distribution it draws is the one whose
logprob it reports, zero-probability tokens are never drawn, bad rows are refused, and a
seeded generator repeats its draws."""

import json

import pytest
import torch
from typer.testing import CliRunner

from spade_envs.agents.sampling import draw, sample


def test_draws_follow_the_distribution_and_skip_impossible_tokens():
    probs = torch.tensor([0.55, 0.3, 0.1, 0.05 - 1e-3, 1e-3, 0.0])
    n = 200_000
    g = torch.Generator().manual_seed(3)
    hits = torch.bincount(draw(probs.log().expand(n, -1).contiguous(), g), minlength=len(probs)).double() / n
    sd = (probs.double() * (1 - probs.double()) / n).sqrt()
    assert bool(((hits - probs.double()).abs() <= 5 * sd + 1e-9).all()), hits  # a biased sampler fails this
    assert hits[-1] == 0.0 and hits[-2] > 0  # p = 0 never, p = 1e-3 does come up


def test_each_row_draws_its_own_distribution():
    logp = torch.log(torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    assert draw(logp, torch.Generator().manual_seed(0)).tolist() == [0, 2, 1]


def test_reported_logprob_is_the_drawn_tokens_and_seeds_repeat():
    logits = torch.randn(8, 500, generator=torch.Generator().manual_seed(1)) * 3
    a, la = sample(logits, 0.6, torch.Generator().manual_seed(7))
    b, lb = sample(logits, 0.6, torch.Generator().manual_seed(7))
    assert torch.equal(a, b) and torch.equal(la, lb)
    ref = torch.log_softmax(logits / 0.6, dim=-1).gather(-1, a[:, None]).squeeze(-1)
    assert torch.allclose(la, ref)
    greedy, _ = sample(logits, 0.0, None)
    assert torch.equal(greedy, logits.argmax(-1))


@pytest.mark.parametrize("row", [[float("nan"), 0.0], [float("-inf"), float("-inf")]])
def test_a_row_without_a_distribution_is_refused(row):
    with pytest.raises(RuntimeError, match="cannot sample"):
        draw(torch.tensor([row]), torch.Generator().manual_seed(0))


def test_bench_reports_ratios_and_an_unbiased_sampler():
    from spade_envs.cli.main import app

    result = CliRunner().invoke(app, ["bench", "sampling", "--json", "--quick"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert figures["bench"] == "sampling" and figures["zero_probability_drawn"] == 0
    assert figures["max_abs_freq_error"] < 0.02
    assert all(figures[f"ratio_speed_{rows}"] > 0 for rows in (1, 8, 64))
