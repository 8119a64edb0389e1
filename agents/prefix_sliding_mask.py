"""The Prefix Sliding attention pattern for a whole sequence (training-time logprobs).

A query at absolute position ``t`` sees key position ``j`` iff::

    j <= t  and  (t < prefill_len  or  j < prefix_len  or  j >= t - window)

i.e. the prefix, the ``window`` positions just before ``t``, and ``t`` itself — except for
the ``prefill_len`` positions that were pushed through the model in one first forward
(the prompt), which attend causally to everything before them. This is exactly what
:class:`spade_envs.agents.prefix_sliding.PrefixSlidingCache` lets a token see when the
prompt is prefilled in one call and the rest is generated one step at a time. With the
cache's ``prefix_len=None`` the prefix *is* the prompt: pass the prompt length as
``prefix_len`` (``prefill_len`` then changes nothing). With an explicit, shorter
``prefix_len`` and a prompt longer than ``prefix_len + window``, pass the prompt length
as ``prefill_len``. One forward pass over the whole sequence with
:func:`prefix_sliding_attention_mask` as ``attention_mask`` then gives the logprobs
generation under the cache produced (positions are the plain ``0..seq_len-1``).
"""

from __future__ import annotations

import torch

__all__ = ["prefix_sliding_allowed", "prefix_sliding_attention_mask", "to_attention_dtype"]


def prefix_sliding_allowed(
    q_pos: torch.Tensor, kv_pos: torch.Tensor, prefix_len: int | torch.Tensor, window: int,
    prefill_len: int | torch.Tensor = 0,
) -> torch.Tensor:
    """``[..., len(q_pos), len(kv_pos)]`` bool: True where query ``q`` may attend to key
    ``k`` (absolute positions; rule in the module docstring). Leading dimensions of
    ``q_pos``/``kv_pos`` broadcast (e.g. one row each of a batch, ``[rows, Q]`` and
    ``[rows, K]``), and so may ``prefix_len``/``prefill_len`` as tensors (``[rows, 1, 1]``)."""
    q = q_pos[..., :, None]
    k = kv_pos[..., None, :]
    return (k <= q) & ((q < prefill_len) | (k < prefix_len) | (k >= q - window))


def to_attention_dtype(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Bool mask as is, or an additive float mask (0 where allowed, dtype minimum elsewhere)."""
    if dtype == torch.bool:
        return allowed
    if not dtype.is_floating_point:
        raise TypeError(f"mask dtype must be torch.bool or a float dtype, got {dtype}")
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    low = torch.full((), torch.finfo(dtype).min, dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, low)


def prefix_sliding_attention_mask(
    seq_len: int,
    prefix_len: int,
    window: int,
    *,
    prefill_len: int = 0,
    padding_mask: torch.Tensor | None = None,
    dtype: torch.dtype = torch.bool,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """4-D attention mask ``[batch, 1, seq_len, seq_len]`` (batch 1 without padding) that
    makes one forward pass compute every token as if generated under Prefix Sliding.

    ``prefill_len``: length of the prompt that was prefilled in one forward (see the
    module docstring; 0 = every token as if decoded one at a time after the prefix).
    ``padding_mask`` (``[batch, seq_len]``, 1 = real token) additionally hides padding keys;
    a padding query row that would see nothing sees itself (avoids NaN; its outputs are
    meaningless anyway). ``dtype=torch.bool`` (True = attend) suits sdpa; a float dtype
    gives the additive form for eager attention. With left padding, give the model
    ``position_ids`` counting real tokens only, as ``generate`` does, and count
    ``prefix_len`` in columns (padding included), as the cache does.
    """
    if seq_len < 0 or prefix_len < 0 or window < 1:
        raise ValueError(f"need seq_len >= 0, prefix_len >= 0, window >= 1; got {seq_len}, {prefix_len}, {window}")
    if padding_mask is not None and device is None:
        device = padding_mask.device
    pos = torch.arange(seq_len, device=device)
    allowed = prefix_sliding_allowed(pos, pos, prefix_len, window, prefill_len)[None, None]
    if padding_mask is not None:
        if padding_mask.shape[-1] != seq_len:
            raise ValueError(f"padding_mask has {padding_mask.shape[-1]} columns, expected {seq_len}")
        allowed = allowed & padding_mask.to(dtype=torch.bool, device=pos.device)[:, None, None, :]
        eye = torch.eye(seq_len, dtype=torch.bool, device=pos.device)[None, None]
        allowed = allowed | (eye & ~allowed.any(-1, keepdim=True))
    return to_attention_dtype(allowed, dtype)
