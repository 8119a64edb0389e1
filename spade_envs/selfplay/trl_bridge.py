"""The ONE module that touches TRL 1.16 internals (pinned by tests/test_selfplay_trl_pin.py).

Self-play alternates two roles with different group sizes and a delayed designer
reward, so it cannot hand its rows to ``GRPOTrainer.train()``'s dataloader. Everything
else is TRL's: generation goes through the public ``rollout_func``, rewards through a
reward function, advantages, clipping, loss types, vLLM weight sync and importance
sampling are TRL's own code. What this module drives, and why:

- :func:`grpo_step` calls ``training_step`` ``k`` times for one optimizer step, like
  TRL's own loop with ``steps_per_generation = gradient_accumulation_steps = k``: the
  first call generates the whole batch (``_prepare_inputs`` -> ``rollout_func``) and
  buffers it split into ``k`` micro-batches of at most ``micro_batch`` rows; later calls
  take the next slice (``_buffered_inputs``). It sets ``num_generations`` (the group
  size of this role), ``args.steps_per_generation`` and
  ``current_gradient_accumulation_steps`` for the step, resets ``_step`` so generation
  happens on the first call, passes the DDP-wrapped model (gradients all-reduced on the
  last micro-batch only: ``accelerator.no_sync`` before), clips and steps the
  optimizer, advances ``state.global_step`` (TRL re-syncs vLLM weights on it) and reads
  ``_metrics``. ``num_items_in_batch`` is passed so transformers does not divide the
  loss by the accumulation steps a second time: the micro-batched gradient then equals
  the full-batch gradient (the pin test checks it).
- :func:`install_behaviour_logps`: rows replayed later than they were sampled (the
  designer's, several optimizer steps old) need the sampling-time logprobs as
  ``old_per_token_logps`` so the clipped ratio is ``pi_now / pi_then``. TRL computes
  them itself only with vLLM (then it uses the rollout's ``logprobs`` as
  ``sampling_per_token_logps`` and applies its importance-sampling correction, which is
  the same ratio); without vLLM it assumes on-policy rows. The wrapper of
  ``_generate_and_score_completions`` copies ``sampling_per_token_logps`` into
  ``old_per_token_logps`` when a step is marked ``behaviour=True``.
- :func:`teacher_forced_logps` scores completions under the current weights with TRL's
  ``_get_per_token_logps_and_entropies`` (temperature-scaled exactly as the loss) —
  for completions whose backend reported no logprobs (a scripted designer).
- :func:`install_prefix_sliding`: a forward pre-hook on the model that swaps TRL's 2-D
  padding mask for the 4-D Prefix Sliding mask (and real-token positions) inside
  ``_get_per_token_logps_and_entropies``; TRL keeps building labels from the 2-D mask.
"""

from __future__ import annotations

import contextlib
from statistics import fmean
from typing import Any, Sequence


def split_count(n_rows: int, micro_batch: int, world: int = 1) -> int:
    """Micro-batches per optimizer step: the smallest ``k`` dividing this rank's rows
    ``n_rows / world`` into slices of at most ``micro_batch`` rows."""
    local = n_rows // max(1, world)
    if local < 1 or n_rows % max(1, world):
        raise ValueError(f"{n_rows} rows do not shard evenly over {world} processes")
    for k in range(1, local + 1):
        if local % k == 0 and local // k <= max(1, micro_batch):
            return k
    return local


def shard(rows: Sequence[Any], accelerator: Any) -> list[Any]:
    """This rank's contiguous slice of ``rows`` (TRL gathers rewards across ranks in order,
    so groups may straddle ranks)."""
    world, rank = accelerator.num_processes, accelerator.process_index
    per = len(rows) // world
    return list(rows[rank * per:(rank + 1) * per])


def grpo_step(trainer: Any, rows: list[dict], group_size: int, *, micro_batch: int, max_grad_norm: float = 0.0,
              behaviour: bool = False) -> dict[str, Any]:
    """One GRPO optimizer step over ``rows`` (ALL ranks' rows, group-major); see the module docstring.
    Returns ``loss`` (summed over micro-batches), ``advantages`` (this rank's rows) and TRL's
    logged metrics averaged."""
    import torch

    tr, acc = trainer, trainer.accelerator
    if len(rows) % group_size:
        raise ValueError(f"{len(rows)} rows do not form groups of {group_size}")
    world = acc.num_processes
    pad = (-len(rows)) % (group_size * world) if world > 1 else 0
    rows = list(rows) + list(rows[-group_size:]) * (pad // group_size)  # whole groups per rank
    rows = [dict(r) for r in rows]  # TRL writes rollout fields into each row: one dict per row
    local = shard(rows, acc)
    k = split_count(len(rows), micro_batch, world)
    tr.num_generations = group_size
    tr.args.steps_per_generation = k
    tr.current_gradient_accumulation_steps = k
    tr._step = 0
    tr._buffered_inputs = None
    tr._spade_behaviour = bool(behaviour)
    model = tr.model_wrapped if world > 1 else tr.model
    model.train()
    total = 0.0
    marker = torch.tensor(1)
    try:
        for i in range(k):
            sync = contextlib.nullcontext() if (i == k - 1 or world == 1) else acc.no_sync(model)
            with sync:
                total += float(tr.training_step(model, local, marker))
    finally:
        tr._spade_behaviour = False
    grad_norm = None
    if max_grad_norm:
        grad_norm = float(acc.clip_grad_norm_(tr.model.parameters(), max_grad_norm))
    tr.optimizer.step()
    tr.optimizer.zero_grad(set_to_none=True)
    tr.state.global_step += 1
    logged = {key: fmean(v) for key, v in tr._metrics["train"].items() if v and isinstance(v[0], (int, float))}
    tr._metrics["train"].clear()
    advantages = [a for b in (tr._buffered_inputs or []) for a in b["advantages"].flatten().tolist()]
    return {"loss": total, "advantages": advantages, "micro_batches": k, "grad_norm": grad_norm, **logged}


def install_behaviour_logps(trainer: Any) -> None:
    """See the module docstring (off-policy rows keep their sampling-time logprobs)."""
    original = trainer._generate_and_score_completions
    trainer._spade_behaviour = False

    def wrapped(inputs: Any) -> dict:
        out = original(inputs)
        if getattr(trainer, "_spade_behaviour", False) and not trainer.use_vllm:
            sampled = out.get("sampling_per_token_logps")
            if sampled is not None:
                out["old_per_token_logps"] = sampled.to(out["completion_ids"].device).float()
        return out

    trainer._generate_and_score_completions = wrapped


def teacher_forced_logps(trainer: Any, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    """Per-token logprobs of ``completion_ids`` after ``prompt_ids`` under the current weights
    (no gradient), temperature-scaled as in the GRPO loss."""
    import torch

    if not completion_ids:
        return []
    model = trainer.model
    device = next(model.parameters()).device
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)], dtype=torch.long, device=device)
    mask = torch.ones_like(ids)
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, len(completion_ids))
    finally:
        model.train(was)
    return [float(x) for x in logps[0].tolist()]


def install_prefix_sliding(trainer: Any, prefix_sliding: Sequence[Any]) -> None:
    """Score completions under the Prefix Sliding attention pattern (agent ``[P, W]``;
    ``P = None``: each row's prompt columns are the prefix, as the cache does)."""
    import torch

    from ..agents.prefix_sliding_mask import prefix_sliding_attention_mask

    prefix, window = prefix_sliding[0], int(prefix_sliding[1])
    original = trainer._get_per_token_logps_and_entropies
    state: dict[str, Any] = {"keep": None}
    module = trainer.accelerator.unwrap_model(trainer.model)

    def hook(_mod: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        keep, mask = state["keep"], kwargs.get("attention_mask")
        if keep is None or mask is None or mask.dim() != 2:
            return args, kwargs
        seq = mask.size(1)
        plen = seq - keep if prefix is None else int(prefix)
        dtype = next(_mod.parameters()).dtype
        four_d = torch.cat([prefix_sliding_attention_mask(seq, plen, window, prefill_len=seq - keep,
                                                          padding_mask=mask[i:i + 1], dtype=dtype)
                            for i in range(mask.size(0))], dim=0)
        kwargs = dict(kwargs, attention_mask=four_d, position_ids=(mask.long().cumsum(-1) - 1).clamp(min=0))
        return args, kwargs

    module.register_forward_pre_hook(hook, with_kwargs=True)

    def patched(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, *args: Any, **kwargs: Any):
        state["keep"] = int(logits_to_keep)
        try:
            return original(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        finally:
            state["keep"] = None

    trainer._get_per_token_logps_and_entropies = patched
