"""Scoring completions that share a prompt with ONE forward of that prompt.

A GRPO group is ``G`` completions of one prompt. TRL scores a batch (the loss forward,
old or reference logprobs) by running every row's ``prompt + completion`` through the
model, so a designer group of 8 proposals of a 650-token prompt costs 8 prompt forwards
(and their backward) for ~50 scored tokens each. Here the distinct prompts of the batch
run once, with a KV cache; the cache is gathered out to the rows (a differentiable
index, so each prompt's gradient is the sum of its rows') and only the completions run
per row. Same tokens, positions, masks and fused LM head as TRL's forward
(:func:`trl.trainer.utils.add_fused_lm_head`: temperature-scaled logprobs without
materialising the logits), so the figures are TRL's up to float rounding
(``tests/test_selfplay_shared_prompt.py`` checks logprobs, entropies and gradients).

Layout of one batch of ``N`` rows of length ``L`` whose last ``K`` columns are scored:

- the prompt part is columns ``0 .. L-K-2`` (``P = L-K-1`` tokens): rows with equal ids
  and mask there form one of ``U`` distinct prompts, run once (positions ``0 .. P-1``,
  as TRL's forward numbers them: padding included);
- each row then runs columns ``P .. L-1`` (``K+1`` tokens: the last prompt token predicts
  the first completion token) over its prompt's cache, labels the same columns with the
  prompt token set to -100; the fused head's shift leaves exactly the ``K`` logprobs.

:func:`plan` says whether a batch qualifies (``None``: score it as TRL does): at least
one prompt shared by several rows, a prompt part of at least one token, and a model
whose layers keep a cache in this mode (gradient checkpointing drops ``past_key_values``
in training: it would replay the cache update). The caller checks the rest (one
process, no multimodal inputs, no Prefix Sliding): :meth:`.trl_bridge.SelfPlayGRPOTrainer._get_per_token_logps_and_entropies`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class SharedPlan:
    """How one batch splits: ``first`` (U,) the first row of each distinct prompt,
    ``inverse`` (N,) each row's prompt, ``prompt_len`` the P cached tokens."""

    first: Any
    inverse: Any
    prompt_len: int


def caches_in_training(model: Any) -> bool:
    """Whether ``model``'s layers keep ``past_key_values`` in its current mode (not while
    training under gradient checkpointing)."""
    return not (bool(getattr(model, "training", False)) and bool(getattr(model, "is_gradient_checkpointing", False)))


def plan(input_ids: Any, attention_mask: Any, logits_to_keep: int) -> SharedPlan | None:
    """The split of a batch (module docstring), or None when no prompt is shared."""
    import torch

    rows, length = input_ids.shape
    p = length - int(logits_to_keep) - 1
    if rows < 2 or p < 1 or int(logits_to_keep) < 1:
        return None
    key = torch.cat([input_ids[:, :p], attention_mask[:, :p].to(input_ids.dtype)], dim=1)
    uniq, inverse = torch.unique(key, dim=0, return_inverse=True)
    if uniq.size(0) >= rows:
        return None
    first = torch.full((uniq.size(0),), rows, dtype=torch.long, device=input_ids.device)
    first = first.scatter_reduce(0, inverse, torch.arange(rows, device=input_ids.device), reduce="amin")
    return SharedPlan(first=first, inverse=inverse, prompt_len=p)


def prompt_cache(model: Any, input_ids: Any, attention_mask: Any, split: SharedPlan, *,
                 autocast: Callable[[], AbstractContextManager]) -> tuple[Any, Any]:
    """``(cache, tail)``: the KV cache of the batch's distinct prompts, run once and
    gathered out to the rows, and the columns each row still runs (``P .. L-1``)."""
    from transformers import DynamicCache

    p = split.prompt_len
    config = getattr(model, "config", None)
    cache = DynamicCache(config=config) if config is not None else DynamicCache()
    with autocast():
        # the distinct prompts once; only the last position's logits are projected (unused)
        model(input_ids=input_ids[split.first, :p], attention_mask=attention_mask[split.first, :p],
              past_key_values=cache, use_cache=True, logits_to_keep=1)
    cache.batch_select_indices(split.inverse)  # each row's prompt (a gather: gradients add up per prompt)
    return cache, input_ids[:, p:]


def shared_prompt_logps(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, split: SharedPlan,
                        *, autocast: Callable[[], AbstractContextManager], compute_entropy: bool = False
                        ) -> tuple[Any, Any]:
    """``(logps, entropies or None)``, each ``(N, logits_to_keep)``, of a batch laid out as
    the module docstring says, through ``model``'s fused LM head, each forward under
    ``autocast()`` (the accelerator's mixed precision)."""
    keep = int(logits_to_keep)
    cache, tail = prompt_cache(model, input_ids, attention_mask, split, autocast=autocast)
    labels = tail.masked_fill(attention_mask[:, split.prompt_len:] == 0, -100)
    labels[:, 0] = -100  # the last prompt token: only its prediction of the next one is scored
    with autocast():
        out = model(input_ids=tail, attention_mask=attention_mask, past_key_values=cache, labels=labels,
                    fused_lm_head=True)
    logps = out.log_probs[:, -keep:]
    entropies = out.entropy[:, -keep:] if compute_entropy else None
    return logps, entropies


def score_in_chunks(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, split: SharedPlan, *,
                    batch_size: int | None, autocast: Callable[[], AbstractContextManager], compute_entropy: bool,
                    fallback: Callable[[Any, Any, bool], tuple[Any, Any]]) -> tuple[Any, Any]:
    """:func:`shared_prompt_logps` in chunks of ``batch_size`` rows, as TRL chunks a batch
    (``split`` is the whole batch's plan; each smaller chunk is planned again, and a chunk
    sharing no prompt goes to ``fallback(ids, mask, compute_entropy)``: TRL's forward)."""
    import torch

    size = int(batch_size or input_ids.size(0))
    parts = []
    for start in range(0, input_ids.size(0), size):
        ids, mask = input_ids[start:start + size], attention_mask[start:start + size]
        chunk = split if size >= input_ids.size(0) else plan(ids, mask, logits_to_keep)
        if chunk is None:
            parts.append(fallback(ids, mask, compute_entropy))
        else:
            parts.append(shared_prompt_logps(model, ids, mask, logits_to_keep, chunk, autocast=autocast,
                                             compute_entropy=compute_entropy))
    logps = torch.cat([p[0] for p in parts], dim=0)
    return logps, (torch.cat([p[1] for p in parts], dim=0) if compute_entropy else None)
