"""A KV cache whose layers preallocate room and grow geometrically (transformers ``Cache`` API).

transformers' ``DynamicLayer`` appends with ``torch.cat`` on every forward, so each decode
step copies the whole cache of every layer: O(width) per step, O(width^2) per turn, and at
batch 32 with ~1500-token rows gigabytes of allocation per step. A :class:`GrowingLayer`
keeps ``[batch, kv_heads, capacity, head_dim]`` buffers, writes new states in place and
returns views of the valid part; when full it reallocates to ``max(needed, 1.5 x
capacity)``, so appends cost amortised O(1) copies. ``reserve(n)`` grows once up front
when the caller knows the width it is about to reach.

Contracts:

* ``layer.keys`` / ``layer.values`` are always views ``[:, :, :length]`` of the buffers
  (so code that reads them, e.g. ``DynamicCache.__iter__``-style consumers, still works);
  the tensors returned by ``update`` are such views and stay valid until the next update.
* Buffer columns at and beyond ``length`` are zero (allocated with ``zeros``, cleared on
  crop): a masked column is multiplied by a zero attention weight, and uninitialised
  memory could hold NaN, which would poison that product.
* ``batch_repeat_interleave`` / ``batch_select_indices`` / ``reorder_cache`` / ``crop``
  behave as on ``DynamicLayer`` (rows repeated, selected, reordered; tokens dropped).
* :meth:`GrowingCache.swap_rows` exchanges rows in place (the decode loop keeps the
  rows still generating at the front of the batch);
* :meth:`GrowingCache.gather_columns` re-lays every row's columns (Prefix Sliding drops
  the columns no query will see again, :mod:`.session_window`);
* :meth:`GrowingCache.rows` gives a cache view over some rows that writes a forward's
  states at a given column: a prefill chunk of similar-length rows computes only its own
  width and lands right-aligned in the shared layout (see :mod:`.kv_session`).

:func:`growing_cache_for` returns None for models whose layers are not all plain full
attention (sliding window, linear attention...): those keep ``DynamicCache``.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, CacheLayerMixin, DynamicCache, DynamicLayer

__all__ = ["GrowingCache", "GrowingLayer", "growing_cache_for"]

GROWTH = 1.5
MIN_CAPACITY = 64


class GrowingLayer(DynamicLayer):
    """One layer of a :class:`GrowingCache` (see the module docstring)."""

    is_sliding = False
    is_croppable = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.length = 0
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None
        self.growths = 0
        self.hint = 0  # capacity of the first allocation (set by GrowingCache.reserve)

    # -- storage ------------------------------------------------------------------
    def _init_buffers(self, batch: int, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device) -> None:
        self.dtype, self.device = dtype, device
        self._k = torch.zeros((batch, heads, self.hint, head_dim), dtype=dtype, device=device)
        self._v = torch.zeros_like(self._k)
        self.length = 0
        self.is_initialized = True
        self._sync()

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        b, h, _, d = key_states.shape
        self._init_buffers(b, h, d, key_states.dtype, key_states.device)

    def _sync(self) -> None:
        self.keys = self._k[:, :, : self.length]
        self.values = self._v[:, :, : self.length]

    @property
    def capacity(self) -> int:
        return 0 if self._k is None else int(self._k.shape[2])

    def reserve(self, needed: int) -> None:
        """Make room for ``needed`` columns (geometric growth; the whole old buffer is kept,
        so columns written beyond ``length`` by a row view survive a growth)."""
        cap = self.capacity
        if needed <= cap:
            return
        new_cap = max(int(needed), int(cap * GROWTH), MIN_CAPACITY)
        b, h, _, d = self._k.shape
        k = self._k.new_zeros((b, h, new_cap, d))
        v = self._v.new_zeros((b, h, new_cap, d))
        k[:, :, :cap] = self._k
        v[:, :, :cap] = self._v
        self._k, self._v = k, v
        self.growths += 1
        self._sync()

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
               ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized or (self.length == 0 and self._k.shape[0] != key_states.shape[0]):
            self.lazy_initialization(key_states, value_states)
        n = key_states.shape[-2]
        self.reserve(self.length + n)
        self._k[:, :, self.length: self.length + n] = key_states
        self._v[:, :, self.length: self.length + n] = value_states
        self.length += n
        self._sync()
        return self.keys, self.values

    # -- DynamicLayer surface -------------------------------------------------------------
    def get_seq_length(self) -> int:
        return self.length if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        """Drop tokens: a negative value removes that many from the end, a positive one keeps
        that many (the legacy absolute form ``DynamicLayer`` still accepts)."""
        if not self.is_initialized:
            return
        keep = tokens_to_remove if tokens_to_remove > 0 else self.length + tokens_to_remove
        keep = max(0, min(self.length, keep))
        self._k[:, :, keep: self.length] = 0
        self._v[:, :, keep: self.length] = 0
        self.length = keep
        self._sync()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.is_initialized:
            self._k = self._k.repeat_interleave(repeats, dim=0)
            self._v = self._v.repeat_interleave(repeats, dim=0)
            self._sync()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self._k = self._k[indices.to(self._k.device)]
            self._v = self._v[indices.to(self._v.device)]
            self._sync()

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        if self.is_initialized:
            self._k = self._k.index_select(0, beam_idx.to(self._k.device))
            self._v = self._v.index_select(0, beam_idx.to(self._v.device))
            self._sync()

    def reset(self) -> None:
        if self.is_initialized:
            self._k.zero_()
            self._v.zero_()
            self.length = 0
            self._sync()

    def offload(self) -> None:
        if self.is_initialized:
            self._k, self._v = self._k.to("cpu", non_blocking=True), self._v.to("cpu", non_blocking=True)
            self._sync()

    def prefetch(self) -> None:
        if self.is_initialized and self._k.device != self.device:
            self._k = self._k.to(self.device, non_blocking=True)
            self._v = self._v.to(self.device, non_blocking=True)
            self._sync()


class _RowsLayer(CacheLayerMixin):
    """A view of some rows of a :class:`GrowingLayer` that writes at column ``start``."""

    is_sliding = False
    is_croppable = False

    def __init__(self, parent: GrowingLayer, rows: slice | torch.Tensor, start: int, batch: int) -> None:
        super().__init__()
        self.parent, self.rows, self.start, self.batch = parent, rows, int(start), int(batch)
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        pass

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
               ) -> tuple[torch.Tensor, torch.Tensor]:
        p = self.parent
        if not p.is_initialized:
            _, h, _, d = key_states.shape
            p._init_buffers(self.batch, h, d, key_states.dtype, key_states.device)
        end = self.start + key_states.shape[-2]
        p.reserve(end)
        p._k[self.rows, :, self.start: end] = key_states
        p._v[self.rows, :, self.start: end] = value_states
        if isinstance(self.rows, slice):
            return p._k[self.rows, :, :end], p._v[self.rows, :, :end]
        return p._k[:, :, :end].index_select(0, self.rows), p._v[:, :, :end].index_select(0, self.rows)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.start + query_length, 0

    def get_seq_length(self) -> int:
        return self.start

    def get_max_length(self) -> int:
        return -1


class GrowingCache(Cache):
    """A cache of :class:`GrowingLayer` s, one per decoder layer."""

    def __init__(self, num_layers: int) -> None:
        super().__init__(layers=[GrowingLayer() for _ in range(int(num_layers))])

    def reserve(self, needed: int) -> None:
        """Room for ``needed`` columns in every layer (now, or at its first allocation)."""
        for layer in self.layers:
            if layer.is_initialized:
                layer.reserve(needed)
            else:
                layer.hint = max(layer.hint, int(needed))

    @property
    def growths(self) -> int:
        return sum(layer.growths for layer in self.layers)

    def set_length(self, length: int) -> None:
        """Declare the columns up to ``length`` valid (after writes through :meth:`rows`)."""
        for layer in self.layers:
            if layer.is_initialized:
                layer.reserve(length)
                layer.length = int(length)
                layer._sync()

    def copy_rows(self, src: torch.Tensor, dst: torch.Tensor, start: int, end: int) -> None:
        """Copy columns ``start:end`` of rows ``src`` onto rows ``dst`` in every layer."""
        for layer in self.layers:
            if layer.is_initialized:
                layer.reserve(end)
                layer._k[dst, :, start:end] = layer._k[src, :, start:end]
                layer._v[dst, :, start:end] = layer._v[src, :, start:end]

    def swap_rows(self, a: torch.Tensor, b: torch.Tensor, width: int) -> None:
        """Exchange rows ``a[i]`` and ``b[i]`` (their first ``width`` columns: the rest is
        zero in every row) in every layer."""
        for layer in self.layers:
            if layer.is_initialized:
                for buf in (layer._k, layer._v):
                    held = buf[a, :, :width].clone()
                    buf[a, :, :width] = buf[b, :, :width]
                    buf[b, :, :width] = held

    def gather_columns(self, src: torch.Tensor, pad: torch.Tensor, width: int) -> None:
        """Re-lay every row: new column ``j`` of row ``r`` is old column ``src[r, j]`` (zero
        where ``pad[r, j]``); the columns from ``src.shape[1]`` to ``width`` are cleared
        and the length becomes ``src.shape[1]`` (Prefix Sliding's compaction)."""
        new_width = int(src.shape[1])
        for layer in self.layers:
            if not layer.is_initialized:
                continue
            for buf in (layer._k, layer._v):
                b, h, _, d = buf.shape
                moved = buf.gather(2, src[:, None, :, None].expand(b, h, new_width, d))
                moved.masked_fill_(pad[:, None, :, None], 0)
                buf[:, :, :new_width] = moved
                buf[:, :, new_width:width] = 0
            layer.length = new_width
            layer._sync()

    def rows(self, rows: list[int], start: int, batch: int, device: torch.device) -> Cache:
        """A cache over ``rows`` (of ``batch`` in all) whose forward writes its states at
        columns ``start...`` of those rows and attends to columns ``< start`` plus its own."""
        if rows == list(range(rows[0], rows[0] + len(rows))):
            index: slice | torch.Tensor = slice(rows[0], rows[0] + len(rows))
        else:
            index = torch.tensor(rows, dtype=torch.long, device=device)
        return Cache(layers=[_RowsLayer(layer, index, start, batch) for layer in self.layers])


def growing_cache_for(config: Any) -> GrowingCache | None:
    """A :class:`GrowingCache` for a model whose decoder layers are all plain full
    attention (what ``DynamicCache(config=...)`` would build as ``DynamicLayer``); else None."""
    try:
        layers = DynamicCache(config=config).layers
    except (KeyError, AttributeError, TypeError, ValueError):  # a config transformers cannot map to cache layers: keep its default
        return None
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return None
    return GrowingCache(len(layers))
