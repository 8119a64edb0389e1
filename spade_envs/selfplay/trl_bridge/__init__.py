"""The ONE package that touches TRL 1.16 internals (pinned by tests/test_selfplay_trl_pin.py
and tests/test_selfplay_dist_trl_pin.py).

Self-play alternates two roles with different group sizes and a delayed designer
reward, so it cannot hand its rows to ``GRPOTrainer.train()``'s dataloader. Everything
else is TRL's: generation goes through the public ``rollout_func``, rewards through a
reward function, advantages, clipping, loss types, vLLM weight sync and importance
sampling are TRL's own code. TRL is extended the way it documents, by subclassing
(:class:`SelfPlayGRPOTrainer`; ``_compute_loss`` documents advantages supplied by
subclasses), never by patching an instance:

- ``_generate_and_score_completions`` (after TRL's own): rows marked ``spade_inert``
  (copies that pad a step to whole groups per rank) and groups whose rewards are all
  equal (SPADE's ``check_reward_nonzero_std``, ``filter_zero_std``) are taken out of the
  loss: advantage 0 and a zero loss mask (``tool_mask``), and ``num_items_in_batch`` is
  recounted, so they neither move the weights nor dilute the token normalisation; rows
  of a ``behaviour`` step (the designer's, several optimizer steps old) get their
  sampling-time logprobs as ``old_per_token_logps`` so the clipped ratio is
  ``pi_now / pi_then`` on BOTH paths: with vLLM TRL would recompute the old logprobs under
  the current weights (ratio 1, clipping never engaged), so there too the sampling-time
  ones are kept and TRL's importance ratio (old / sampling) becomes its value, 1;
- ``_get_per_token_logps_and_entropies``: with Prefix Sliding, a forward pre-hook swaps
  TRL's 2-D padding mask for the 4-D Prefix Sliding mask (and real-token positions);
  TRL keeps building labels from the 2-D mask. Rows that share a prompt (a GRPO group)
  are scored with one forward of it (:mod:`~spade_envs.selfplay.shared_prompt`) where that is exact: one
  process, no Prefix Sliding, no multimodal inputs, a model that keeps its cache. Rows
  registered in ``spade_constraints`` (completions decoded under a JSON schema) are
  scored under that mask, renormalised (:mod:`~spade_envs.selfplay.constrained_scoring`), in every forward.

:func:`grpo_step` drives one optimizer step the way ``Trainer._inner_training_loop``
does: ``training_step`` ``k`` times (the first call generates the whole batch through
``_prepare_inputs`` -> ``rollout_func`` and buffers ``k`` micro-batches of at most
``micro_batch`` rows: ``steps_per_generation = current_gradient_accumulation_steps = k``,
``_step`` reset, ``_buffered_inputs`` read for the advantages), accelerate's
``sync_gradients`` set on the last micro-batch only (``gradient_state._set_sync_gradients``,
exactly as the Trainer does; DeepSpeed accumulates inside its engine and steps in the
backward of that micro-batch, DDP all-reduces only there: ``no_sync`` before), then
clipping and ``optimizer.step`` (no-ops under DeepSpeed, whose engine did both),
``state.global_step`` advanced and the vLLM weights pushed on every rank at this one
fixed point (:func:`sync_generation_weights`: a collective under ZeRO-3/FSDP).
``num_items_in_batch`` is passed so transformers does not divide the loss by the
accumulation steps a second time: the micro-batched gradient equals the full-batch one.

Modules: :mod:`.grpo_trainer` (the ``GRPOTrainer`` subclass and its row helpers),
:mod:`.step` (building the step: :func:`prepare`, :func:`grpo_step`, teacher-forced
logprobs), :mod:`.weights` (pushing the weights to vLLM: colocated engine or server).
The names below are the package's API; import them from here.
"""

from .grpo_trainer import SelfPlayGRPOTrainer, kept_rows, shard, split_count
from .step import grpo_step, prepare, set_engine_accumulation, teacher_forced_logps, teacher_forced_logps_batch
from .weights import (guided_json_without_blanks, mark_synced, push_dtype, push_weights, repacked_weights,
                      sync_generation_weights, vllm_client, vllm_engine, weights_stale)

__all__ = ["SelfPlayGRPOTrainer", "grpo_step", "guided_json_without_blanks", "kept_rows", "mark_synced", "prepare",
           "push_dtype", "push_weights", "repacked_weights", "set_engine_accumulation", "shard", "split_count",
           "sync_generation_weights", "teacher_forced_logps", "teacher_forced_logps_batch", "vllm_client",
           "vllm_engine", "weights_stale"]
