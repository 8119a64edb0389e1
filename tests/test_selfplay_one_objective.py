"""The designer's off-policy step optimises ONE objective with and without vLLM (issue 38,
major 2): the PPO ratio is pi_now / pi_then from the sampling-time logprobs, clipped, on
both paths. Before the fix, with vLLM TRL recomputed the old logprobs under the current
weights (ratio 1, clipping never engaged) and only its truncated importance ratio
remained, so the loss of the same step differed between the two paths."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from spade_envs.selfplay import build_config  # noqa: E402

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]
# sampled long ago: far from the current policy, so the clipped ratio is not 1
OLD = [[-0.2] * len(c) for c in COMPLETIONS]


def _step(tmp_path, use_vllm: bool, behaviour: bool = True) -> dict:
    from types import SimpleNamespace

    from spade_envs.selfplay import grpo
    from spade_envs.selfplay.trl_bridge import grpo_step, mark_synced

    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(tmp_path / str(use_vllm)), tensorboard=False))
    tr.rollout_func = lambda prompts, trainer: {
        "prompt_ids": [PROMPT] * len(prompts), "completion_ids": COMPLETIONS[:len(prompts)],
        "logprobs": OLD[:len(prompts)], "reward": [1.0, 0.0, 0.0, 1.0]}
    if use_vllm:  # TRL's vLLM path (importance-sampling correction on, its default); push recorded
        pushes = []
        tr.use_vllm, tr.vllm_importance_sampling_correction = True, True
        tr.vllm_generation = SimpleNamespace(mode="colocate", sync_weights=lambda: pushes.append(1))
        mark_synced(tr)
    res = grpo_step(tr, [{"prompt": "{}"} for _ in range(4)], 2, micro_batch=4, behaviour=behaviour)
    if use_vllm:
        assert pushes == [1]
    return res


def test_behaviour_step_has_the_same_loss_with_and_without_vllm(tmp_path):
    plain, vllm = _step(tmp_path, False), _step(tmp_path, True)
    assert vllm["loss"] == pytest.approx(plain["loss"], rel=1e-5, abs=1e-7)
    # the ratio pi_now / pi_then is far from 1 here: clipping engaged on both paths
    assert plain["clip_ratio/region_mean"] > 0 and vllm["clip_ratio/region_mean"] == pytest.approx(
        plain["clip_ratio/region_mean"])


def test_the_behaviour_ratio_changes_the_loss(tmp_path):
    """The check above is not vacuous: the same rows on-policy (ratio 1) give another loss."""
    assert _step(tmp_path, False, behaviour=False)["loss"] != pytest.approx(_step(tmp_path, False)["loss"])
