"""Prefix Sliding across the turns of a :class:`~.kv_session.DecodeSession`.

A session made with a window (``DecodeSession(window=W, prefix=P)``, what
``TransformersBackend(prefix_sliding=(P, W)).new_session()`` gives) keeps its KV cache
across turns like any session, and bounds it over the WHOLE episode: a row never holds
more than ``P + W + SLACK`` columns, however many turns it plays. The attention rule is
that of :mod:`.prefix_sliding_mask` with ``prefill_len`` = the row's first prompt:

    a query at position t sees key position j  iff  j <= t and
    (t is inside the first prompt  or  j < prefix_end  or  j >= t - W)

where ``prefix_end`` is ``P``, or the row's first prompt length when ``P`` is None (the
first prompt is the prefix: system prompt, tool specs, task). So the logprobs equal one
forward pass over the whole episode with
``prefix_sliding_attention_mask(len, prefix_end, W, prefill_len=first prompt)``.

State: besides the session's usual layout, ``pos`` gives the absolute position of every
cache column (-1 for a pad) and ``prefix_end`` is ``[rows, 1]``. :func:`visible` turns
the rule into the mask part a forward needs; :func:`compact` drops the columns no later
query can see (pads, and positions past the prefix more than ``W`` behind the next
query) and right-aligns what is left. It runs at the start of every continued turn and
whenever a decode step would take the width past ``max(prefix_end) + W + SLACK``, so a
compaction (one copy of the cache) comes at most once per ``SLACK`` steps.
"""

from __future__ import annotations

from typing import Any

import torch

from .prefix_sliding_mask import prefix_sliding_allowed

__all__ = ["SLACK", "compact", "visible", "width_bound"]

SLACK = 64  # columns a row may grow past its bound before a compaction


def visible(pos: torch.Tensor, prefix_end: torch.Tensor, query_pos: torch.Tensor, window: int) -> torch.Tensor:
    """``[rows, q, K]`` bool: key columns at positions ``pos`` (``[rows, K]``, -1 for a
    pad) that the queries at ``query_pos`` (``[rows, q]``) may see by the window rule
    (padding is the caller's mask)."""
    return prefix_sliding_allowed(query_pos, pos, prefix_end[:, :, None], window)


def width_bound(session: Any) -> int:
    """Columns after which a decode step compacts first."""
    return int(session.prefix_end.max()) + int(session.window) + SLACK


def compact(session: Any) -> None:
    """Keep only the columns a later query of each row can see, right-aligned (see the
    module docstring); positions, mask and cache move together."""
    s, width = session, session.width
    if width == 0:
        return
    pos = s.pos[:, :width]
    keep = s.mask[:, :width] & ((pos < s.prefix_end) | (pos >= s.last_pos + 1 - s.window))
    new_width = int(keep.sum(1).max())
    if new_width == width:
        return
    cols = torch.arange(width, device=pos.device)
    # kept columns in their order, after the -1s that right-align them
    order = torch.where(keep, cols, torch.full_like(cols, -1)).sort(dim=1).values[:, width - new_width:]
    pad = order < 0
    src = order.clamp(min=0)
    s.cache.gather_columns(src, pad, width)
    moved_pos = torch.where(pad, torch.full_like(src, -1), pos.gather(1, src))
    s.pos[:, :new_width] = moved_pos
    s.pos[:, new_width:width] = -1
    s.mask[:, :new_width] = ~pad
    s.mask[:, new_width:width] = False
    s.width = new_width
    s.stats["compactions"] += 1
