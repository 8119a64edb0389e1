"""Linear layers on oneDNN with weights packed once, for generation on CPU.

On CPU, PyTorch's float32 ``linear`` calls MKL's sgemm, which lays the weight matrix out
again on every call. For the few rows of a decode step this costs far more than reading
the weights: on the 2-core AMD EPYC (Zen 4) machines this project runs on, all the
linear layers of SmolLM2-135M take about 50 ms for one row (MKL's gemv) and 85-115 ms
for 2 to 8 rows (the weights are 540 MB; 8 rows should cost about what one does).
oneDNN with the weights reordered once into its blocked layout takes 40-48 ms for 2 to 8
rows and is faster at every size measured up to 512 rows (prefill), e.g. 600 ms against
747 ms. For ONE row MKL's gemv stays the faster inside the model (a whole decode step:
84-87 ms against 101-137 ms), so one-row forwards keep ``F.linear``. (Loops over the
model's weight shapes and over whole decode steps; ``spade bench rollout`` shows the
effect on the whole rollout.)

:func:`packed_linears` is a context manager: inside it, every ``nn.Linear`` of the model
whose forward runs without gradients, on CPU, in float32, on at least ``MIN_ROWS`` rows,
multiplies through oneDNN with a packed copy of its weight. Contracts:

* outputs agree with ``F.linear`` to float rounding (about 1e-6 on the default model);
* a forward with gradients enabled, on another device or dtype, is ``F.linear`` itself,
  so training and autograd are untouched;
* the packed copy is made on a layer's first packed forward in each outermost block and
  never outlives it into the next one, so a model trained in the same process between
  two generations is never run with stale weights. The version counter cannot tell:
  ``torch.optim.AdamW(fused=True)`` (transformers' default ``adamw_torch_fused``)
  writes the parameters in place without moving it. Inside a block the copy is made
  again when the counter or the storage moves (a ``load_state_dict``-style write, ``.to()``);
* packed copies cost a second copy of the weights in memory (540 MB for the default
  model), held only inside the block (a training step between two generations does
  not carry them);
* the block may be entered again (nested, or from another generation): the layers are
  switched on the first entry and restored on the last exit;
* when this torch build lacks the oneDNN ops, or they fail a check against ``F.linear``
  on first use, the block changes nothing.

The two ops (``mkldnn._reorder_linear_weight``, ``mkldnn._linear_pointwise``) are the
ones PyTorch's own compiler uses for frozen CPU linears; eager PyTorch has no public API
for a prepacked linear (``torch.utils.mkldnn.to_mkldnn`` converts activations on every
call and is slower than MKL here).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["available", "packed_linears"]

PACK_ROWS = 8  # the row count oneDNN's layout is chosen for (decode batches); any count runs
MIN_ROWS = 2  # one row is a matrix-vector product, where MKL's gemv is the faster

_packed: "weakref.WeakKeyDictionary[torch.nn.Linear, tuple[tuple, torch.Tensor]]" = weakref.WeakKeyDictionary()
_depth: "weakref.WeakKeyDictionary[torch.nn.Module, int]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_checked: bool | None = None


def _ops_work() -> bool:
    """Whether the oneDNN ops exist and agree with ``F.linear`` (checked once)."""
    global _checked
    if _checked is None:
        try:
            gen = torch.Generator().manual_seed(0)
            w, b = torch.randn(24, 40, generator=gen), torch.randn(24, generator=gen)
            x = torch.randn(3, 5, 40, generator=gen)
            with torch.no_grad():
                packed = torch.ops.mkldnn._reorder_linear_weight(w, PACK_ROWS)
                got = torch.ops.mkldnn._linear_pointwise(x, packed, b, "none", [], "")
            _checked = bool(torch.allclose(got, F.linear(x, w, b), atol=1e-4, rtol=1e-4))
        except (AttributeError, RuntimeError, NotImplementedError):
            _checked = False
    return _checked


def available() -> bool:
    """Whether :func:`packed_linears` has an effect in this torch build."""
    return torch.backends.mkldnn.is_available() and _ops_work()


def _weight_for(layer: torch.nn.Linear) -> torch.Tensor:
    w = layer.weight
    key = (w._version, w.data_ptr(), tuple(w.shape), w.dtype)
    held = _packed.get(layer)
    if held is not None and held[0] == key:
        return held[1]
    with torch.inference_mode(False), torch.no_grad():
        packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), PACK_ROWS)
    _packed[layer] = (key, packed)
    return packed


def _forward(layer: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    w = layer.weight
    if (torch.is_grad_enabled() or x.device.type != "cpu" or x.dtype != torch.float32 or w.dtype != torch.float32
            or w.device.type != "cpu" or x.shape[-1] != w.shape[1] or x.numel() < MIN_ROWS * w.shape[1]):
        return F.linear(x, w, layer.bias)
    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), _weight_for(layer), layer.bias, "none", [], "")


def _switch(model: torch.nn.Module, on: bool) -> None:
    for module in model.modules():
        if type(module) is not torch.nn.Linear:  # subclasses (LoRA, quantized) keep their own forward
            continue
        if on:
            module.forward = _forward.__get__(module)  # an instance attribute: nn.Module.__call__ finds it first
        elif "forward" in module.__dict__:
            del module.forward


@contextmanager
def packed_linears(model: Any) -> Iterator[None]:
    """Run the block with the model's linear layers on packed oneDNN weights (see the
    module docstring); a no-op for anything that is not an ``nn.Module`` or when
    :func:`available` is False."""
    if not isinstance(model, torch.nn.Module) or not available():
        yield
        return
    with _lock:
        depth = _depth.get(model, 0)
        if depth == 0:
            _switch(model, True)
        _depth[model] = depth + 1
    try:
        yield
    finally:
        with _lock:
            _depth[model] -= 1
            if _depth[model] == 0:
                _switch(model, False)
                for module in model.modules():  # the weights may change before the next block
                    _packed.pop(module, None)
