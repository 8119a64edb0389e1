"""Building TRL's ``GRPOTrainer`` for self-play (one model, both roles).

The trainer is :class:`~.trl_bridge.SelfPlayGRPOTrainer`, a ``GRPOTrainer`` subclass; it
gets the self-play ``rollout_func`` later (it needs the trainer's own vLLM engine to exist
first); ``reward_funcs`` is :func:`~.rollout.reward_from_rollout`, which reads the
``reward`` field the rollout returned. No dataset is iterated: the loop feeds rows
through :func:`~.trl_bridge.grpo_step`, so ``train_dataset`` is a placeholder.

Order matters on several processes and GPUs, as accelerate and transformers document:

1. the ``GRPOConfig`` is built FIRST: it creates accelerate's ``PartialState`` (which
   reads ``LOCAL_RANK`` and makes ``cuda:<local rank>`` the current device) and, under
   ``accelerate launch`` with a DeepSpeed config, registers the ZeRO-3 config so that
   ``from_pretrained`` partitions the weights while loading (``zero3_init_flag``);
2. the model is loaded onto ``args.device`` (this rank's GPU; never plain ``"cuda"``,
   which is GPU 0 on every rank), always in float32: these are the master weights the
   optimizer updates. ``dtype="bfloat16"`` means bf16 *compute*: ``GRPOConfig(bf16=True)``
   makes accelerate run every forward under bf16 autocast (mixed precision), so AdamW's
   steps of ~1e-6 are not rounded away as they are on bf16 weights;
3. model and optimizer go through ``accelerator.prepare`` on every run (one process too:
   that is where accelerate installs the autocast forward; several: DDP, or the DeepSpeed
   engine).

GPU: ``use_vllm=True`` with ``vllm_mode="colocate"`` makes TRL start a ``vllm.LLM`` on the
training GPU (its weights bf16, pushed from the fp32 masters after every step);
``vllm_mode="server"`` talks to ``trl vllm-serve --model PATH`` at
``vllm_server_base_url`` (run it on other GPUs). Multi-GPU training is launched with
``accelerate launch --config_file spade_envs/selfplay/accelerate/<file>.yaml``.
"""

from __future__ import annotations

import os
import random
from typing import Any

from .config import GRPO_FIELDS, SelfPlayConfig
from .rollout import reward_from_rollout


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _placeholder_rollout(prompts: list, trainer: Any) -> dict:
    raise RuntimeError("the self-play rollout function was not installed")


def context_length(config: SelfPlayConfig) -> int:
    """The longest sequence either role produces: an agent episode (``max_context``) or a
    designer prompt plus its completion."""
    return max(int(config.max_context), int(config.designer_prompt_tokens) + int(config.designer_max_new_tokens))


def max_rows(config: SelfPlayConfig) -> int:
    """The most rows one GRPO step carries (agent or designer), i.e. concurrent sequences."""
    agent = config.envs_per_round * max(config.agent_group_size, config.hint_plays)
    designer = max(1, config.designer_prompts) * config.designer_group_size * max(1, config.designer_every)
    return max(1, agent, designer)


def cuda_wanted(config: SelfPlayConfig) -> bool:
    import torch

    return torch.cuda.is_available() and config.device != "cpu"


def grpo_args(config: SelfPlayConfig) -> Any:
    """The ``GRPOConfig`` of a run: the fields of :data:`~.config.GRPO_FIELDS` forwarded by
    name, ``config.trl`` (any other ``GRPOConfig`` field), and the shapes self-play needs."""
    from trl import GRPOConfig

    cuda = cuda_wanted(config)
    micro = int(config.micro_batch_size)
    spg = max(1, -(-max_rows(config) // micro))  # TRL sizes vLLM's max_num_seqs = micro * spg
    while (micro * spg) % config.agent_group_size:  # TRL: the generation batch holds whole groups
        spg += 1
    shapes = dict(
        output_dir=os.path.join(config.out_dir, "trl"), num_generations=config.agent_group_size,
        per_device_train_batch_size=micro, gradient_accumulation_steps=spg, steps_per_generation=spg,
        num_iterations=1, max_completion_length=max(config.designer_max_new_tokens, config.max_context),
        report_to=[], save_strategy="no", logging_steps=1, use_cpu=not cuda,
        bf16=config.dtype == "bfloat16",  # mixed precision: fp32 master weights, bf16 autocast
        vllm_max_model_length=config.vllm_max_model_length or context_length(config),
        mask_truncated_completions=False,
    )
    # a causal LM uses every parameter in each forward: DDP need not search the graph for
    # unused ones (a traversal and a warning per step); config.trl may still set it
    defaults = dict(ddp_find_unused_parameters=False)
    import dataclasses

    from .config import SelfPlayConfigError

    unknown = sorted(set(config.trl or {}) - {f.name for f in dataclasses.fields(GRPOConfig)})
    if unknown:
        raise SelfPlayConfigError(f"trl: not trl.GRPOConfig fields: {', '.join(unknown)}")
    clash = sorted(set(config.trl or {}) & set(shapes))
    if clash:
        raise SelfPlayConfigError(f"trl: {', '.join(clash)} are set by self-play itself")
    return GRPOConfig(**{**defaults, **shapes, **{k: getattr(config, k) for k in GRPO_FIELDS},
                         **dict(config.trl or {})})


def check_zero3_generation(config: SelfPlayConfig) -> None:
    """Refuse ZeRO-3 (from the launch's DeepSpeed config) without vLLM: every forward of a
    partitioned model is a collective, and ranks play different numbers of turns and
    tokens, so transformers generation would hang in round 0 (``config.validate`` refuses
    ``zero_stage=3`` without vLLM; this catches a ZeRO-3 launch config as well)."""
    from transformers.integrations import is_deepspeed_zero3_enabled

    from .config import SelfPlayConfigError

    if is_deepspeed_zero3_enabled() and not config.use_vllm:
        raise SelfPlayConfigError("DeepSpeed ZeRO-3 needs use_vllm=true: generation with the partitioned "
                                  "model is a collective per forward and ranks generate different lengths "
                                  "(a hang); use ZeRO-2 (accelerate/zero2.yaml) or DDP without vLLM")


def load_policy(config: SelfPlayConfig, device: Any) -> tuple[Any, Any]:
    """``(model, tokenizer)``: float32 master weights on ``device`` (this rank's), or
    partitioned by DeepSpeed ZeRO-3 while loading when it is enabled."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.integrations import is_deepspeed_zero3_enabled

    from ..errors import AgentError
    from ..agents.models import model_path

    folder = model_path(config.model)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    try:
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise AgentError(f"cannot load model from {folder}: {exc}") from None
    if not is_deepspeed_zero3_enabled():  # ZeRO-3 placed the shards itself
        model.to(device)
    return model, tokenizer


def build_trainer(config: SelfPlayConfig) -> Any:
    """A :class:`~.trl_bridge.SelfPlayGRPOTrainer` over ``config.model`` with a prepared
    model and optimizer, ready for :func:`~.trl_bridge.grpo_step` (see the module docstring).
    Rows per forward/backward: ``micro_batch_size``; vLLM is sized for the longest sequence
    (:func:`context_length`) and the most concurrent rows (:func:`max_rows`)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset

    from .trl_bridge import SelfPlayGRPOTrainer, prepare

    args = grpo_args(config)  # first: sets this rank's device (PartialState) and ZeRO-3 loading
    check_zero3_generation(config)
    from ..agents.models import model_path

    with args.main_process_first(local=True, desc="model files"):  # one rank builds a cached model's files
        model_path(config.model)
    # then every rank loads at once: under ZeRO-3 (zero3_init_flag) loading partitions the
    # weights, a collective, so one rank loading while the others wait would deadlock
    model, tokenizer = load_policy(config, args.device)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    trainer = SelfPlayGRPOTrainer(model=model, reward_funcs=[reward_from_rollout], args=args,
                                  train_dataset=Dataset.from_list([{"prompt": "{}"}] * config.agent_group_size),
                                  processing_class=tokenizer, rollout_func=_placeholder_rollout,
                                  prefix_sliding=config.prefix_sliding, filter_zero_std=config.filter_zero_std)
    if config.gradient_checkpointing:  # Trainer enables it only inside train(), which self-play never calls
        trainer.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs=dict(args.gradient_checkpointing_kwargs or {}) or None)
    trainer.create_optimizer()
    prepare(trainer, config.use_vllm)  # as Trainer.train() does (trl_bridge: TRL's fields set there)
    return trainer


def policy(trainer: Any, config: SelfPlayConfig) -> Any:
    """The generation backend over the trainer's current weights (:mod:`.policy`)."""
    from .policy import policy_backend

    return policy_backend(trainer, config)
