"""``spade bench rollout``: batched rollout throughput with the default model on CPU.

Plays the same 32 episodes of single-agent seed environments (cycling through the
suite, seeds 0, 1, ...) in batches of 1, 8 and 32 with ``transformers:default`` (greedy, short turns so a 2-core CPU finishes) and
reports episodes/s at each batch size, the speed-up of batch 32 over batch 1
(``ratio_eps_b32_vs_b1``, baseline: one episode at a time), and the share of wall time
spent outside generation (environment steps, sandbox, parsing, prompt building) at
batch 32 — the target is below 10%. The batch-32 run uses the sandbox when it is
available (``sandboxed_b32``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from .api import PlayTask


def _tasks(n: int, max_turns: int) -> list[PlayTask]:
    from ..games import is_multiplayer
    from ..registry.catalog import seed_records

    ids = [rec.env_id.base for rec in seed_records() if not is_multiplayer(rec)]
    return [PlayTask(ids[i % len(ids)], seed=i // len(ids), max_turns=max_turns) for i in range(n)]


def _sandbox_available() -> bool:
    try:
        from ..sandbox import SandboxRuntime  # noqa: F401
    except ImportError:
        return False
    return True


def run(quick: bool = False, model: str = "default") -> dict[str, Any]:
    from .backend_transformers import TransformersBackend
    from .rollout import LLMAgent

    max_new_tokens, max_turns = (8, 1) if quick else (32, 2)
    t = time.perf_counter()
    backend = TransformersBackend(model, device="cpu")
    load_s = time.perf_counter() - t
    figures: dict[str, Any] = {
        "model": f"transformers:{model}", "max_new_tokens": max_new_tokens, "max_turns": max_turns,
        "model_load_s": round(load_s, 3),
    }
    # warm-up (first forward pays one-off costs)
    LLMAgent(backend, max_new_tokens=2, temperature=0.0).play(_tasks(1, 1))
    workload = _tasks(32, max_turns)  # the same 32 episodes at every batch size
    for batch in (1, 8, 32):
        sandbox = batch == 32 and _sandbox_available()
        agent = LLMAgent(backend, max_new_tokens=max_new_tokens, temperature=0.0, sandbox=sandbox)
        episodes, timings = [], {"wall_s": 0.0, "generation_s": 0.0, "environment_s": 0.0}
        for start in range(0, len(workload), batch):
            episodes += agent.play(workload[start : start + batch])
            for key in timings:
                timings[key] += agent.last_timings[key]
        wall = timings["wall_s"]
        print(f"bench rollout: batch {batch}: {wall:.1f} s", file=sys.stderr, flush=True)
        figures[f"episodes_per_s_b{batch}"] = round(len(episodes) / wall, 4)
        figures[f"wall_s_b{batch}"] = round(wall, 3)
        figures[f"generated_tokens_per_s_b{batch}"] = round(
            sum(sum(e.mask) for e in episodes) / max(timings["generation_s"], 1e-9), 2)
        figures[f"share_outside_generation_b{batch}"] = round(1.0 - timings["generation_s"] / wall, 4)
        figures[f"environment_s_b{batch}"] = round(timings["environment_s"], 4)
        if batch == 32:
            figures["sandboxed_b32"] = sandbox
            figures["errors_b32"] = sum(e.error is not None for e in episodes)
    figures["ratio_eps_b32_vs_b1"] = round(figures["episodes_per_s_b32"] / figures["episodes_per_s_b1"], 3)
    figures["outside_generation_under_10pct_b32"] = figures["share_outside_generation_b32"] < 0.10
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv)))
