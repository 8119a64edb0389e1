"""Pins every TRL (and accelerate) internal the self-play trainer still relies on, by
signature and by the lines of TRL's own code that make it work (no model: fast). The
behaviour is pinned on the tiny model in tests/test_selfplay_trl_pin.py; a TRL upgrade
that moves any of these fails here first, naming what moved."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

pytest.importorskip("trl")


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_grpo_trainer_hooks_the_subclass_overrides():
    from trl import GRPOTrainer

    from spade_envs.selfplay.trl_bridge import SelfPlayGRPOTrainer

    assert _params(GRPOTrainer._generate_and_score_completions)[:2] == ["self", "inputs"]
    assert _params(GRPOTrainer._get_per_token_logps_and_entropies)[:5] == [
        "self", "model", "input_ids", "attention_mask", "logits_to_keep"]
    assert issubclass(SelfPlayGRPOTrainer, GRPOTrainer)
    src = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    for key in ('"completion_mask"', '"advantages"', '"num_items_in_batch"', '"sampling_per_token_logps"',
                '"tool_mask"', "inp[key] = values[i]"):  # rollout extra fields (reward) merged into the rows
        assert key in src, key
    loss = inspect.getsource(GRPOTrainer._compute_loss)
    assert 'completion_mask * inputs["tool_mask"]' in loss  # our zero tool_mask rows leave the loss
    assert 'inputs["num_items_in_batch"]' in loss and "old_per_token_logps" in loss


def test_step_driving_internals():
    from trl import GRPOTrainer

    assert _params(GRPOTrainer.training_step)[:4] == ["self", "model", "inputs", "num_items_in_batch"]
    step = inspect.getsource(GRPOTrainer.training_step)
    assert "self._step += 1" in step and "current_gradient_accumulation_steps" in step
    prep = inspect.getsource(GRPOTrainer._prepare_inputs)
    for key in ("self._buffered_inputs", "steps_per_generation", "self._step"):
        assert key in prep, key
    gen = inspect.getsource(GRPOTrainer._generate)
    assert "self.rollout_func(prompts, self)" in gen
    assert "self._last_loaded_step" in gen and "sync_weights()" in gen  # skipped when we pushed already
    init = inspect.getsource(GRPOTrainer.__init__)
    assert "self._metrics" in init and "self._step = 0" in init


def test_grpo_config_fields_forwarded_by_name():
    from trl import GRPOConfig

    from spade_envs.selfplay.config import GRPO_FIELDS

    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    missing = [n for n in (*GRPO_FIELDS, "vllm_server_host", "vllm_server_port", "vllm_server_timeout",
                           "steps_per_generation", "mask_truncated_completions", "vllm_max_model_length")
               if n not in names]
    assert not missing, missing


def test_vllm_path_internals():
    from trl.generation import vllm_generation
    from trl.generation.vllm_client import VLLMClient

    cls = vllm_generation.VLLMGeneration
    init = inspect.getsource(cls._init_vllm)
    assert "self.vllm_client = VLLMClient(" in init and "self.llm = LLM(" in init
    assert "if accelerator.is_main_process:" in init  # only the main process gets TRL's client
    sync = inspect.getsource(cls.sync_weights)
    assert "_iter_named_params()" in sync  # gathering is a collective: every rank calls it
    assert _params(VLLMClient.__init__)[:2] == ["self", "base_url"] and "connection_timeout" in _params(VLLMClient.__init__)
    gen = _params(VLLMClient.generate)
    for p in ("prompts", "n", "temperature", "max_tokens", "logprobs", "generation_kwargs"):
        assert p in gen, p
    assert '"completion_ids"' in inspect.getsource(VLLMClient.generate)


def test_vllm_sampling_params_fields():
    vllm = pytest.importorskip("vllm")
    fields = set(inspect.signature(vllm.SamplingParams).parameters) | set(getattr(vllm.SamplingParams, "__struct_fields__", ()))
    for p in ("n", "temperature", "top_p", "max_tokens", "seed", "logprobs", "stop_token_ids", "skip_special_tokens"):
        assert p in fields, p


def test_accelerate_sync_gradients_as_the_trainer_sets_them():
    from accelerate import Accelerator
    from accelerate.state import GradientState
    from accelerate.utils.deepspeed import DeepSpeedEngineWrapper
    from transformers import Trainer

    assert hasattr(GradientState, "_set_sync_gradients")
    import transformers.trainer

    assert "gradient_state._set_sync_gradients(do_sync_step)" in inspect.getsource(transformers.trainer)
    assert "sync_gradients=self.sync_gradients" in inspect.getsource(Accelerator.backward)
    wrapper = inspect.getsource(DeepSpeedEngineWrapper.backward)
    assert "if sync_gradients:" in wrapper and "self.engine.step()" in wrapper
    assert "scale_wrt_gas" in inspect.getsource(Trainer.training_step)  # no second division by accumulation


def test_trl_settings_compose_into_grpo_config():
    from spade_envs.selfplay import build_config
    from spade_envs.selfplay.config import SelfPlayConfigError
    from spade_envs.selfplay.grpo import grpo_args

    args = grpo_args(build_config("spade", device="cpu", out_dir="unused"))
    assert args.adam_beta2 == 0.98 and args.scale_rewards == "none" and args.beta == 0.005 and args.bf16
    with pytest.raises(SelfPlayConfigError, match="not trl.GRPOConfig fields: nope"):
        grpo_args(build_config("cpu-tiny", trl={"nope": 1}))
    with pytest.raises(SelfPlayConfigError, match="as self-play settings"):
        build_config("cpu-tiny", trl={"beta": 0.1})
