"""One self-play GRPO optimizer step through TRL (:func:`grpo_step`, the loop the package
docstring describes), the set-up ``Trainer.train()`` would do first (:func:`prepare`),
and teacher-forced logprobs under the current weights.
"""

from __future__ import annotations

import contextlib
from statistics import fmean
from typing import Any, Sequence

from .grpo_trainer import shard, split_count
from .weights import mark_synced, sync_generation_weights


def prepare(trainer: Any, use_vllm: bool) -> None:
    """Wrap model and optimizer as ``Trainer.train()`` does (the autocast forward; DDP or the
    DeepSpeed engine with several processes) and set the fields TRL reads from them."""
    wrapped, trainer.optimizer = trainer.accelerator.prepare(trainer.model, trainer.optimizer)
    trainer.model_wrapped = wrapped
    if trainer.is_deepspeed_enabled:
        trainer.deepspeed = wrapped
    if use_vllm:  # vLLM loaded the same weights from disk: in sync at step 0
        mark_synced(trainer)



def set_engine_accumulation(engine: Any, k: int) -> None:
    """Make the DeepSpeed engine's ``gradient_accumulation_steps`` the ``k`` micro-batches
    of this step (it was fixed from the GRPOConfig at init): its public
    ``set_train_batch_size`` (micro-batch per rank x k x data-parallel ranks)."""
    if int(engine.gradient_accumulation_steps()) != int(k):
        engine.set_train_batch_size(int(engine.train_micro_batch_size_per_gpu()) * int(k) * int(engine.dp_world_size))


def grpo_step(trainer: Any, rows: list[dict], group_size: int, *, micro_batch: int, max_grad_norm: float = 0.0,
              behaviour: bool = False) -> dict[str, Any]:
    """One GRPO optimizer step over ``rows`` (ALL ranks' rows, group-major); see the package
    docstring. Rows are padded with inert copies of the last group so that every rank holds
    whole groups. Returns ``loss`` (this rank's, summed over micro-batches), ``advantages``
    (ALL ranks' rows, the ``rows_padded`` inert copies included, advantage 0),
    ``rows_filtered`` (all ranks), ``grad_norm`` (before clipping; DeepSpeed's own under
    DeepSpeed) and TRL's logged metrics averaged. Under DeepSpeed the engine's
    accumulation count is set to this step's ``k`` first (:func:`set_engine_accumulation`)."""
    import torch
    from accelerate.utils import DistributedType

    tr, acc = trainer, trainer.accelerator
    if len(rows) % group_size:
        raise ValueError(f"{len(rows)} rows do not form groups of {group_size}")
    world = acc.num_processes
    pad = (-len(rows)) % (group_size * world)
    rows = [dict(r) for r in rows] + [dict(r, spade_inert=True) for r in rows[-group_size:]] * (pad // group_size)
    local = shard(rows, acc)
    k = split_count(len(rows), micro_batch, world)
    tr.num_generations = group_size
    tr.args.steps_per_generation = k
    tr.current_gradient_accumulation_steps = k
    tr._step = 0
    tr._buffered_inputs = None
    tr.spade_behaviour = bool(behaviour)
    deepspeed = acc.distributed_type == DistributedType.DEEPSPEED
    model = tr.model_wrapped
    if deepspeed:
        set_engine_accumulation(model, k)
    model.train()
    total = 0.0
    marker = torch.tensor(1)
    try:
        for i in range(k):
            last = i == k - 1
            acc.gradient_state._set_sync_gradients(last)  # as Trainer._inner_training_loop
            sync = contextlib.nullcontext() if (last or deepspeed) else acc.no_sync(model)
            with sync:
                total += float(tr.training_step(model, local, marker))
    finally:
        tr.spade_behaviour = False
        acc.gradient_state._set_sync_gradients(True)
    grad_norm = None
    if max_grad_norm and not deepspeed:  # DeepSpeed clips in its engine (gradient_clipping)
        grad_norm = float(acc.clip_grad_norm_(model.parameters(), max_grad_norm))
    tr.optimizer.step()  # the accelerate wrapper makes it a no-op under DeepSpeed
    tr.optimizer.zero_grad(set_to_none=True)
    if deepspeed:  # the engine clipped and stepped in the last backward: its norm (before clipping)
        norm = model.get_global_grad_norm()
        grad_norm = None if norm is None else float(norm)
    tr.state.global_step += 1
    sync_generation_weights(tr)
    logged = {key: fmean(v) for key, v in tr._metrics["train"].items() if v and isinstance(v[0], (int, float))}
    tr._metrics["train"].clear()
    from ..dist import gather_rows

    local_adv = [a for b in (tr._buffered_inputs or []) for a in b["advantages"].flatten().tolist()]
    filtered = [int(getattr(tr, "spade_rows_filtered", 0))]
    advantages = gather_rows(acc, local_adv)  # every rank's rows (a collective at this fixed point)
    return {"loss": total, "advantages": advantages, "micro_batches": k, "grad_norm": grad_norm,
            "rows_padded": pad, "rows_filtered": sum(gather_rows(acc, filtered)), **logged}


def teacher_forced_logps(trainer: Any, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
    """Per-token logprobs of ``completion_ids`` after ``prompt_ids`` under the current weights
    (no gradient), temperature-scaled as in the GRPO loss: :func:`teacher_forced_logps_batch`
    of one row."""
    return teacher_forced_logps_batch(trainer, [(prompt_ids, completion_ids)])[0]


def teacher_forced_logps_batch(trainer: Any, rows: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[list[float]]:
    """:func:`teacher_forced_logps` of each ``(prompt_ids, completion_ids)`` row. Rows with the
    same prompt (a group) are scored in one batch, completions right-padded, so their
    prompt runs once (:mod:`~spade_envs.selfplay.shared_prompt`); a batch never holds more than one group.
    Under ZeRO-3 a forward is a collective: call it on every rank with the same rows."""
    import torch

    out: list[list[float]] = [[] for _ in rows]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (prompt, completion) in enumerate(rows):
        if completion:
            groups.setdefault(tuple(int(t) for t in prompt), []).append(i)
    if not groups:
        return out
    model = trainer.model
    device = next(model.parameters()).device
    pad = getattr(getattr(trainer, "processing_class", None), "pad_token_id", None) or 0
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            for prompt, members in groups.items():
                comps = [[int(t) for t in rows[i][1]] for i in members]
                keep = max(map(len, comps))
                ids = torch.tensor([[*prompt, *c, *[pad] * (keep - len(c))] for c in comps], device=device)
                mask = torch.tensor([[1] * (len(prompt) + len(c)) + [0] * (keep - len(c)) for c in comps],
                                    device=device)
                logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, keep)
                for row, i in enumerate(members):
                    out[i] = [float(x) for x in logps[row, :len(comps[row])].tolist()]
    finally:
        model.train(was)
    return out
