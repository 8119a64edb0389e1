"""``spade selfplay --plan [--gpu h200:8]``: per-device memory of a self-play run, by reading.

For one training device it adds up, in bytes (decimal GB in the table):

- ``weights``: float32 master weights (4 B/param) plus, with bf16 compute, the bf16 copies
  autocast caches during a forward (2 B/param); ZeRO-3 (``zero_stage=3``) partitions the
  masters over the training processes and gathers a few layers at a time;
- ``gradients``: float32, 4 B/param (partitioned under ZeRO-3);
- ``optimizer``: AdamW's two float32 moments, 8 B/param (partitioned under ZeRO-3);
- ``activations``: with gradient checkpointing each layer's input (float32 residual
  stream) for ``micro_batch_size`` rows of the longest sequence, plus one layer's
  recomputed intermediates; without it, every layer's;
- ``logits``: TRL 1.16 scores completions through a fused LM head that projects at most
  32768 positions at a time, never the whole ``(rows, sequence, vocabulary)`` tensor:
  ``min(micro_batch_size x sequence, 32768) x vocabulary`` at 12 B each (the bf16 tile,
  its float32 log-softmax and the gradient of the tile);
- ``vllm``: colocated vLLM reserves ``vllm_gpu_memory_utilization`` of the device; in
  server mode the server runs on other GPUs (0 here).

With vLLM colocated it also says how many sequences of the full context the engine's KV
cache holds at once (``kv_sequences``: the reserve minus the bf16 weights, over
``2 x layers x kv_heads x head_dim x 2`` bytes per token) against the rows one rank has
in flight (``rows_per_rank``: the round's plays over the ranks); fewer is a run whose
generation waits on preemption (vLLM swaps or recomputes sequences), reported, not refused.

The sequence is the longest either role produces (``grpo.context_length``). A run that
does not fit (total above 95 % of the device) is refused before anything loads. The
figures are estimates for planning: ``benchmarks/gpu_selfplay.py`` compares one with a
measured CUDA peak.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpadeError
from .config import SelfPlayConfig

GB = 1e9
FUSED_TILE = 32_768  #: positions per tile of TRL's fused LM head (trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE)
HEADROOM = 0.95  #: share of device memory a plan may use (allocator fragmentation, CUDA context)

#: device memory in bytes (as CUDA reports it)
GPUS = {"h200": 143_771 * 2**20, "h100": 81_559 * 2**20, "a100": 81_920 * 2**20, "l40s": 46_068 * 2**20}

#: shapes of the models the GPU presets name (their config.json, for planning without the files)
SHAPES: dict[str, dict[str, Any]] = {
    "Qwen3-4B": dict(params=4.02e9, hidden=2560, layers=36, vocab=151_936, intermediate=9728, kv_heads=8, head_dim=128),
    "Qwen3-8B": dict(params=8.19e9, hidden=4096, layers=36, vocab=151_936, intermediate=12_288, kv_heads=8,
                     head_dim=128),
    "Qwen3-30B-A3B": dict(params=30.5e9, hidden=2048, layers=48, vocab=151_936, intermediate=768 * 8, kv_heads=4,
                          head_dim=128),
}


class PlanError(SpadeError):
    """A plan cannot be made (unknown GPU or model shape) or the run does not fit."""


@dataclass
class Plan:
    model: str
    gpu: str
    devices: int
    device_bytes: int
    parts: dict[str, float]  #: bytes per device
    kv_sequences: float | None = None  #: full-context sequences colocated vLLM's KV cache holds (None: no engine here)
    rows_per_rank: int = 0  #: generation rows one rank has in flight in a round
    context: int = 0  #: the longest sequence (tokens)

    @property
    def preemption_bound(self) -> bool:
        return self.kv_sequences is not None and self.kv_sequences < self.rows_per_rank

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool:
        return self.total <= HEADROOM * self.device_bytes

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "gpu": self.gpu, "devices": self.devices, "fits": self.fits,
                "device_gb": round(self.device_bytes / GB, 1), "total_gb": round(self.total / GB, 1),
                **{f"{k}_gb": round(v / GB, 2) for k, v in self.parts.items()},
                "kv_sequences": None if self.kv_sequences is None else round(self.kv_sequences, 1),
                "rows_per_rank": self.rows_per_rank, "preemption_bound": self.preemption_bound}

    def table(self) -> str:
        rows = [(k, v) for k, v in self.parts.items()] + [("total", self.total)]
        lines = [f"memory plan per device: {self.model} on {self.devices} x {self.gpu} "
                 f"({self.device_bytes / GB:.1f} GB each)"]
        lines += [f"  {k:<12} {v / GB:8.2f} GB" for k, v in rows]
        verdict = "fits" if self.fits else "does NOT fit"
        lines.append(f"  -> {verdict} ({self.total / self.device_bytes:.0%} of the device, limit {HEADROOM:.0%})")
        if self.kv_sequences is not None:
            lines.append(f"  vLLM KV cache: {self.kv_sequences:.1f} sequences of {self.context} tokens at once, "
                         f"{self.rows_per_rank} rows per rank in a round"
                         + (" -> preemption-bound (raise vllm_gpu_memory_utilization or lower max_context)"
                            if self.preemption_bound else ""))
        return "\n".join(lines)


def parse_gpu(spec: str) -> tuple[str, int, int]:
    """``"h200:8"`` -> ``("h200", 8, bytes)``; ``"h200"`` = one device."""
    name, _, count = spec.strip().lower().partition(":")
    if name not in GPUS:
        raise PlanError(f"unknown GPU {name!r}; choose one of: {', '.join(GPUS)} (e.g. --gpu h200:8)")
    try:
        n = int(count or 1)
    except ValueError:
        raise PlanError(f"--gpu expects NAME[:COUNT], got {spec!r}") from None
    if n < 1:
        raise PlanError("--gpu COUNT must be >= 1")
    return name, n, GPUS[name]


def model_shape(model: str) -> dict[str, Any]:
    """The shape of ``model``: its folder's ``config.json`` when there is one, else :data:`SHAPES`."""
    folder = Path(model).expanduser()
    if model in ("default", "tiny-random"):
        from ..agents.models import model_path

        folder = model_path(model)
    cfg_file = folder / "config.json"
    if cfg_file.is_file():
        c = json.loads(cfg_file.read_text(encoding="utf-8"))
        c = c.get("text_config", c)
        hidden, layers, vocab = int(c["hidden_size"]), int(c["num_hidden_layers"]), int(c["vocab_size"])
        inter = int(c.get("moe_intermediate_size", 0) * c.get("num_experts_per_tok", 0) or c["intermediate_size"])
        experts = int(c.get("num_experts", 0) or 1)
        ffn = int(c.get("moe_intermediate_size") or c["intermediate_size"]) * 3 * hidden * experts
        heads, kv = int(c["num_attention_heads"]), int(c.get("num_key_value_heads", c["num_attention_heads"]))
        head_dim = int(c.get("head_dim") or hidden // heads)
        attn = hidden * head_dim * (2 * heads + 2 * kv)
        emb = vocab * hidden * (1 if c.get("tie_word_embeddings") else 2)
        return dict(params=float(layers * (attn + ffn) + emb), hidden=hidden, layers=layers, vocab=vocab,
                    intermediate=inter, kv_heads=kv, head_dim=head_dim)
    name = Path(model).name
    if name in SHAPES:
        return SHAPES[name]
    raise PlanError(f"no shape known for model {model!r}: give a local folder with a config.json "
                    f"(or one of {', '.join(SHAPES)})")


def plan(config: SelfPlayConfig, gpu: str = "h200:1") -> Plan:
    """The memory :class:`Plan` of ``config`` on ``gpu`` (``NAME[:COUNT]``)."""
    from .grpo import context_length

    name, devices, device_bytes = parse_gpu(gpu)
    s = model_shape(config.model)
    p = float(s["params"])
    shards = devices if int(config.zero_stage) == 3 else 1
    bf16 = config.dtype == "bfloat16"
    micro, seq = int(config.micro_batch_size), context_length(config)
    layer_params = (p - s["vocab"] * s["hidden"]) / s["layers"]
    gathered = 2 * layer_params * 2 if shards > 1 else 0.0  # ZeRO-3 gathers ~2 layers in bf16 at a time
    weights = 4 * p / shards + (2 * p / shards if bf16 else 0.0) + gathered
    saved = micro * seq * s["hidden"] * 4 * (s["layers"] if config.gradient_checkpointing else 0)
    per_layer = micro * seq * (s["hidden"] * 10 + s["intermediate"] * 4) * (2 if bf16 else 4)
    activations = saved + per_layer * (1 if config.gradient_checkpointing else s["layers"])
    colocated = config.use_vllm and config.vllm_mode == "colocate"
    parts = {"weights": weights, "gradients": 4 * p / shards, "optimizer": 8 * p / shards,
             "activations": float(activations), "logits": float(min(micro * seq, FUSED_TILE) * s["vocab"] * 12),
             "vllm": float(config.vllm_gpu_memory_utilization * device_bytes) if colocated else 0.0}
    kv_seqs = None
    if colocated:
        per_token = 2 * s["layers"] * s["kv_heads"] * s["head_dim"] * 2  # K and V, bf16
        kv_seqs = max(0.0, parts["vllm"] - 2 * p) / (per_token * seq)
    rows = -(-int(config.envs_per_round) * int(config.agent_group_size) // devices)
    return Plan(config.model, name, devices, device_bytes, parts, kv_seqs, rows, seq)


def check_fits(config: SelfPlayConfig, gpu: str) -> Plan:
    """The plan, or :class:`PlanError` saying what does not fit and what to change."""
    pl = plan(config, gpu)
    if not pl.fits:
        big = max(pl.parts, key=pl.parts.get)
        raise PlanError(f"preset {config.preset!r} ({config.model}) needs {pl.total / GB:.0f} GB per device on "
                        f"{pl.devices} x {pl.gpu} ({pl.device_bytes / GB:.0f} GB): does not fit; largest part: "
                        f"{big} {pl.parts[big] / GB:.0f} GB (see spade selfplay --plan; lower micro_batch_size, "
                        f"max_context or vllm_gpu_memory_utilization, or use more GPUs with zero_stage=3)")
    return pl


def local_gpu() -> str | None:
    """``NAME:COUNT`` of this launch (the visible device's memory, WORLD_SIZE processes), None without CUDA."""
    import os

    import torch

    if not torch.cuda.is_available():
        return None
    total = torch.cuda.get_device_properties(0).total_memory
    GPUS.setdefault("local", int(total))
    GPUS["local"] = int(total)
    return f"local:{int(os.environ.get('WORLD_SIZE', '1'))}"
