"""Building TRL's ``GRPOTrainer`` for self-play (one model, both roles).

The trainer gets the self-play ``rollout_func`` later (it needs the trainer's own vLLM
engine to exist first); ``reward_funcs`` is :func:`~.rollout.reward_from_rollout`, which
reads the ``reward`` field the rollout returned. No dataset is iterated: the loop feeds
rows through :mod:`.trl_bridge`, so ``train_dataset`` is a placeholder.

GPU: ``use_vllm=True`` with ``vllm_mode="colocate"`` makes TRL start a ``vllm.LLM`` on the
training GPU; ``vllm_mode="server"`` talks to ``trl vllm-serve --model PATH`` at
``vllm_server_base_url`` (run it on other GPUs). Multi-GPU training is launched with
``accelerate launch --config_file spade_envs/selfplay/accelerate/<file>.yaml``.
"""

from __future__ import annotations

import os
import random
from typing import Any

from .config import SelfPlayConfig
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


def build_trainer(config: SelfPlayConfig) -> Any:
    """A ``GRPOTrainer`` over ``config.model`` with an optimizer, ready for
    :func:`~.trl_bridge.grpo_step`. Rows per forward/backward: ``micro_batch_size``;
    vLLM is sized for the longest sequence (:func:`context_length`) and the most
    concurrent rows (:func:`max_rows`)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from ..agents.models import load_model
    from . import trl_bridge

    cuda = torch.cuda.is_available() and config.device != "cpu"
    model, tokenizer = load_model(config.model, device=config.device or ("cuda" if cuda else "cpu"), dtype=config.dtype)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    micro = int(config.micro_batch_size)
    spg = max(1, -(-max_rows(config) // micro))  # TRL sizes vLLM's max_num_seqs = micro * spg
    while (micro * spg) % config.agent_group_size:  # TRL: the generation batch holds whole groups
        spg += 1
    args = GRPOConfig(
        output_dir=os.path.join(config.out_dir, "trl"),
        learning_rate=config.learning_rate, beta=config.beta, epsilon=config.epsilon,
        epsilon_high=config.epsilon_high, loss_type=config.loss_type, scale_rewards=config.scale_rewards,
        temperature=config.temperature, max_grad_norm=config.max_grad_norm, weight_decay=config.weight_decay,
        num_generations=config.agent_group_size, per_device_train_batch_size=micro,
        gradient_accumulation_steps=spg, steps_per_generation=spg, num_iterations=1,
        max_completion_length=max(config.designer_max_new_tokens, config.max_context),
        gradient_checkpointing=config.gradient_checkpointing, report_to=[], save_strategy="no",
        logging_steps=1, use_cpu=not cuda, bf16=cuda and config.dtype == "bfloat16",
        use_vllm=config.use_vllm, vllm_mode=config.vllm_mode, vllm_server_base_url=config.vllm_server_base_url,
        vllm_gpu_memory_utilization=config.vllm_gpu_memory_utilization,
        vllm_max_model_length=config.vllm_max_model_length or context_length(config),
        vllm_importance_sampling_mode=config.vllm_importance_sampling_mode,
        seed=config.seed, mask_truncated_completions=False,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[reward_from_rollout], args=args,
                          train_dataset=Dataset.from_list([{"prompt": "{}"}] * config.agent_group_size),
                          processing_class=tokenizer, rollout_func=_placeholder_rollout)
    if config.gradient_checkpointing:  # Trainer enables it only inside train(), which self-play never calls
        trainer.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs=dict(args.gradient_checkpointing_kwargs or {}) or None)
    trainer.create_optimizer()
    if trainer.accelerator.num_processes > 1:  # DDP/FSDP: the wrapped model syncs gradients
        trainer.model_wrapped, trainer.optimizer = trainer.accelerator.prepare(trainer.model, trainer.optimizer)
    trl_bridge.install_behaviour_logps(trainer)
    if config.prefix_sliding:
        trl_bridge.install_prefix_sliding(trainer, config.prefix_sliding)
    return trainer


def policy(trainer: Any, config: SelfPlayConfig) -> Any:
    """The generation backend over the trainer's current weights (:mod:`.policy`)."""
    from .policy import policy_backend

    return policy_backend(trainer, config)
