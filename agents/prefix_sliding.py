"""Prefix Sliding: a transformers KV cache that keeps the prompt prefix and a recent window.

Semantics (shared with :mod:`spade_envs.agents.prefix_sliding_mask`, which computes the
same attention pattern for a whole sequence in one forward pass):

* ``P`` (``prefix_len``) is the number of leading positions that are never dropped. With
  ``prefix_len=None`` it is the length of the first update the cache receives, i.e. the
  prompt that ``model.generate`` (or your own first forward) prefills.
* ``W`` (``window``) is the number of most recent *non-prefix* positions the cache keeps
  between two forward passes.
* A query at absolute position ``t`` attends to key position ``j`` iff
  ``j <= t and (j < P or j >= t - W)``: the prefix, the ``W`` positions just before it,
  and itself. The cache holds at most ``P + W`` positions after every update, so its
  memory is flat once ``P + W`` tokens have been seen.

Keys are stored exactly as the model produced them, already rotated (RoPE) with their
absolute position: nothing is re-rotated. ``get_seq_length()`` keeps counting absolute
positions, so models and ``generate`` assign the right ``position_ids`` to new tokens.

Mask bookkeeping (transformers 5): the KV tensors handed back to attention are laid out
as ``[kept prefix | kept window | new tokens]``. ``get_mask_sizes`` returns that length
with offset 0, and :meth:`PrefixSlidingCache.get_query_offset` returns the number of
stored slots, so the standard causal mask built by ``create_causal_mask`` has exactly the
KV length of the returned tensors, every stored slot is visible and the new tokens are
causal among themselves. The 2-D padding mask is looked up by slot index; that is correct
when padding only occurs inside the prefix (left padding of the prompt, the ``generate``
case) and every later column of the 2-D mask is 1.

Single-token decode steps follow the rule above exactly. A multi-token update sees every
stored slot plus its own tokens causally: the first update (the prompt prefill) is thus
plain causal attention even when it is longer than ``P + W`` (the mask module's
``prefill_len``), and a later chunk gets the window at chunk granularity unless you pass
the exact 4-D mask from :meth:`PrefixSlidingCache.attention_mask` as ``attention_mask``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

from spade_envs.errors import AgentError

from .prefix_sliding_mask import prefix_sliding_allowed, to_attention_dtype

__all__ = ["PrefixSlidingCache", "PrefixSlidingLayer"]


class PrefixSlidingLayer(DynamicLayer):
    """One layer of a :class:`PrefixSlidingCache` (see the module docstring for semantics).

    ``keys``/``values`` hold ``[batch, kv_heads, stored, head_dim]`` with
    ``stored <= prefix_len + window``; ``cumulative_length`` counts every position seen.
    """

    is_sliding = False  # the mask is built by the standard causal path (see module doc)
    is_croppable = False

    def __init__(self, window: int, prefix_len: int | None = None, **kwargs: Any) -> None:
        super().__init__()
        if window < 1:
            raise AgentError(f"window must be >= 1, got {window}")
        if prefix_len is not None and prefix_len < 0:
            raise AgentError(f"prefix_len must be >= 0, got {prefix_len}")
        self.window = int(window)
        self.prefix_len = prefix_len
        self.cumulative_length = 0

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append new states, return ``[kept prefix | kept window | new]`` for attention,
        then keep only the prefix and the last ``window`` non-prefix positions."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if self.prefix_len is None:
            self.prefix_len = key_states.shape[-2]
        full_keys = torch.cat([self.keys, key_states], dim=-2)
        full_values = torch.cat([self.values, value_states], dim=-2)
        self.cumulative_length += key_states.shape[-2]
        p, w, n = self.prefix_len, self.window, full_keys.shape[-2]
        if n > p + w:
            self.keys = torch.cat([full_keys[..., :p, :], full_keys[..., n - w :, :]], dim=-2)
            self.values = torch.cat([full_values[..., :p, :], full_values[..., n - w :, :]], dim=-2)
        else:
            self.keys, self.values = full_keys, full_values
        return full_keys, full_values

    def stored_length(self) -> int:
        """Number of positions physically held (``<= prefix_len + window``)."""
        if not self.is_initialized or self.keys.numel() == 0:
            return 0
        return self.keys.shape[-2]

    def stored_positions(self) -> torch.Tensor:
        """Absolute positions of the stored slots, in storage order (1-D long tensor)."""
        stored = self.stored_length()
        p = min(self.prefix_len or 0, stored)
        tail = stored - p
        device = self.keys.device if self.is_initialized else "cpu"
        head = torch.arange(p, device=device)
        rest = torch.arange(self.cumulative_length - tail, self.cumulative_length, device=device)
        return torch.cat([head, rest])

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """KV length of the tensors ``update`` will return, and offset 0 (module doc)."""
        return self.stored_length() + query_length, 0

    def get_seq_length(self) -> int:
        """Absolute number of positions seen (not the number stored)."""
        return self.cumulative_length

    def get_max_length(self) -> int:
        """No maximum: positions keep counting while memory stays bounded."""
        return -1

    def reset(self) -> None:
        """Forget every position (the prefix length is kept)."""
        super().reset()
        if self.is_initialized and self.keys.dim() == 4:
            self.keys, self.values = self.keys[..., :0, :], self.values[..., :0, :]
        self.cumulative_length = 0

    def crop(self, tokens_to_remove: int) -> None:
        """Only possible while nothing has been dropped (needed by assisted decoding)."""
        if self.cumulative_length != self.stored_length():
            raise AgentError("cannot crop a Prefix Sliding cache after it dropped tokens")
        super().crop(tokens_to_remove)
        self.cumulative_length = self.stored_length()


class PrefixSlidingCache(Cache):
    """A transformers ``Cache`` keeping the first ``prefix_len`` and the last ``window``
    positions of every layer, with their original (absolute, already rotated) positions.

    Use it like any cache: ``model.generate(ids, past_key_values=PrefixSlidingCache(512))``
    or a manual loop ``model(ids, past_key_values=cache)``. ``prefix_len=None`` makes the
    first update (the prompt) the prefix. Pass ``config`` (or ``num_layers``) to create the
    layers eagerly; otherwise they are created on first use.
    """

    def __init__(
        self,
        window: int,
        prefix_len: int | None = None,
        config: Any = None,
        num_layers: int | None = None,
    ) -> None:
        make = partial(PrefixSlidingLayer, window, prefix_len)
        make()  # validate arguments now rather than at the first forward
        if config is not None and num_layers is None:
            text_config = config.get_text_config(decoder=True)
            kinds = set(getattr(text_config, "layer_types", None) or ["full_attention"])
            if kinds != {"full_attention"}:
                raise AgentError(f"Prefix Sliding supports full-attention models only, got {sorted(kinds)}")
            num_layers = text_config.num_hidden_layers
        if num_layers is not None:
            super().__init__(layers=[make() for _ in range(num_layers)])
        else:
            super().__init__(layer_class_to_replicate=make)
        self.window = int(window)
        self._prefix_len = prefix_len

    @property
    def prefix_len(self) -> int | None:
        """The prefix length in force (``None`` until the first update when auto)."""
        return self.layers[0].prefix_len if self.layers else self._prefix_len

    def get_query_offset(self, layer_idx: int = 0) -> int:
        """Slot index of the first new token in the mask (= stored slots), see module doc."""
        if layer_idx >= len(self.layers):
            return 0
        return self.layers[layer_idx].stored_length()

    def stored_length(self, layer_idx: int = 0) -> int:
        """Positions physically held by ``layer_idx``."""
        return self.layers[layer_idx].stored_length() if layer_idx < len(self.layers) else 0

    def attention_mask(
        self,
        query_length: int,
        attention_mask: torch.Tensor | None = None,
        dtype: torch.dtype = torch.bool,
        layer_idx: int = 0,
    ) -> torch.Tensor:
        """The exact 4-D mask ``[batch, 1, query_length, stored + query_length]`` for the
        next forward of ``query_length`` tokens, window applied inside the chunk too.

        ``attention_mask`` is an optional 2-D padding mask over absolute positions
        (``[batch, seen + query_length]``). ``dtype=torch.bool`` gives True = attend (sdpa);
        a float dtype gives an additive mask (0 or the dtype's minimum; eager attention).
        Pass the result as ``attention_mask=`` to the model's forward.
        """
        if self.prefix_len is None:
            raise AgentError("the prefix length is unknown until the first update; pass prefix_len")
        seen = self.get_seq_length(layer_idx)
        if layer_idx < len(self.layers) and self.layers[layer_idx].is_initialized:
            layer = self.layers[layer_idx]
            device = layer.keys.device
            past = layer.stored_positions()
        else:
            device, past = "cpu", torch.arange(0)
        new = torch.arange(seen, seen + query_length, device=device)
        kv_pos = torch.cat([past.to(device), new])
        allowed = prefix_sliding_allowed(new, kv_pos, self.prefix_len, self.window)[None, None]
        if attention_mask is not None:
            padding = attention_mask.to(device=device, dtype=torch.bool)[:, kv_pos]
            allowed = allowed & padding[:, None, None, :]
            # a fully masked (padding) query row would give NaN: let it see itself
            diag = kv_pos[None, :] == new[:, None]
            allowed = allowed | (diag[None, None] & ~allowed.any(-1, keepdim=True))
        return to_attention_dtype(allowed, dtype)


def kv_bytes(cache: Any) -> int:
    """Bytes held by the key and value tensors of a transformers ``Cache`` (this module's
    :class:`PrefixSlidingCache` or a full ``DynamicCache``): what a cache costs in memory."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers if layer.is_initialized)
