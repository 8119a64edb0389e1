"""``spade selfplay --plan``: per-device memory by reading, and the refusal of a preset
that does not fit. The GPU presets fit the layouts their comments and
docs/selfplay_at_scale.md promise."""

from __future__ import annotations

import json

import pytest

from spade_envs.selfplay.presets import preset
from spade_envs.selfplay.plan import PlanError, check_fits, plan


@pytest.mark.parametrize("name,gpu", [("gpu-4b", "h200:1"), ("gpu-8b", "h200:8"), ("gpu-30b", "h200:8"),
                                      ("spade", "h200:8")])
def test_gpu_presets_fit_their_documented_layout(name, gpu):
    p = check_fits(preset(name), gpu)
    assert p.fits and set(p.parts) == {"weights", "gradients", "optimizer", "activations", "logits", "vllm"}


def test_fp32_masters_and_adam_are_counted_and_zero3_partitions_them():
    one, eight = plan(preset("gpu-8b").replace(zero_stage=0), "h200:1"), plan(preset("gpu-8b"), "h200:8")
    params = 8.19e9
    assert one.parts["optimizer"] == pytest.approx(8 * params) and one.parts["gradients"] == pytest.approx(4 * params)
    assert one.parts["weights"] >= 6 * params  # fp32 masters + bf16 autocast copies
    assert eight.parts["optimizer"] == pytest.approx(one.parts["optimizer"] / 8)
    with pytest.raises(PlanError, match="does not fit"):
        check_fits(preset("gpu-8b"), "h200:1")
    assert plan(preset("gpu-30b"), "h200:8").parts["vllm"] == 0  # server mode: vLLM on other GPUs


def test_cli_plan_prints_and_exits_by_fit(capsys):
    from spade_envs.cli.main import main

    assert main(["selfplay", "--preset", "gpu-4b", "--plan"]) in (0, None)
    out = capsys.readouterr().out
    assert "weights" in out and "logits" in out and "vllm" in out and "fits" in out
    assert main(["selfplay", "--preset", "gpu-8b", "--plan", "--gpu", "h200:1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False and data["optimizer_gb"] > 60
    assert main(["selfplay", "--preset", "gpu-4b", "--plan", "--gpu", "tpu:4"]) == 1
    assert "unknown GPU" in capsys.readouterr().err


def test_plan_reports_the_colocated_kv_budget():
    # spade: 0.3 of an H200 less 8 GB of bf16 weights, 147 456 B per token (36 layers x 8 KV
    # heads x 128 x K,V x bf16), 32k tokens: 7.7 sequences against 16 x 16 plays over 8 ranks
    pl = plan(preset("spade"), "h200:8")
    assert round(pl.kv_sequences, 1) == 7.7 and pl.rows_per_rank == 32 and pl.preemption_bound
    assert "preemption-bound" in pl.table() and pl.as_dict()["kv_sequences"] == 7.7
    fewer = plan(preset("spade").replace(envs_per_round=2), "h200:8")  # 2 x 16 plays over 8 ranks: 4 rows
    assert fewer.rows_per_rank == 4 and not fewer.preemption_bound and "preemption-bound" not in fewer.table()
    assert plan(preset("gpu-30b"), "h200:8").kv_sequences is None  # server mode: no engine on these GPUs
