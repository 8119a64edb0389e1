"""``spade bench rollout``: multi-turn rollout throughput with the default model on CPU.

The workload is multi-turn: the tool-use and multi-step seed environments (ids 13-24,
which answer a tool call or a move and go on), ``max_turns`` turns (3; quick: 3) of
``max_new_tokens`` tokens each (128, half the agents' default of 256: a tool call with
a line of reasoning; quick: 24), greedy, cycling through the ids with seeds 0, 1, ...
The same episodes are played:

- at batch 1 and batch 8 (the first ``n_small`` episodes; batch 1 in two halves, before
  and after batch 8), and at batch 32 (all, in the sandbox when it is available), with
  the KV cache kept across turns and the shared prompt prefix encoded once
  (:mod:`.kv_session`);
- at batch 8 through the naive baseline (``reuse_cache=False``: every turn re-encodes the
  whole conversation, no shared prefix), in the same run;
- at batch 8 with Prefix Sliding (``prefix_sliding=(SLIDING_PREFIX, SLIDING_WINDOW)``),
  whose session applies the window across turns (:mod:`.session_window`).

Figures: ``episodes_per_s_b{1,8,32}``, ``generated_tokens_per_s_b*`` (generated tokens
over wall time), ``share_outside_generation_b*``, ``mean_turns_b*``,
``episodes_per_s_b8_reencode``, ``ratio_eps_b8_vs_b1`` (target >= 2.5),
``ratio_reuse_vs_reencode_b8`` (target >= 2), ``encoded_tokens_b8`` / ``_reencode``
(prompt tokens the model actually encoded), ``computed_tokens_b*`` (prefill positions
computed, padding included), ``share_prefill_b*`` (wall share of turn prefills, the
compute-bound part that batching cannot amortise), ``cache_growths_b*`` (KV buffer reallocations, summed over
layers), ``share_outside_generation_b32`` (< 10 %), ``peak_kv_columns_b8`` / ``_b8_sliding`` (the
widest the KV cache got, columns per row; with the window that is the longest first
prompt, encoded whole, after which a row holds at most P + W + 64) and
``ratio_kv_columns_b8_vs_sliding``, and ``load_avg_1m_start`` /
``load_avg_1m_end`` (the machine's load average around the run: the figures are only
comparable within one run when other jobs share the cores).

Both the reusing and the re-encoding runs use the same backend (growing KV cache, GQA
attention without the K/V copy); they differ only in what is encoded each turn.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from spade_envs.agents.api import PlayTask
from spade_envs.registry.ids import format_env_id

MULTI_TURN_IDS = tuple(range(13, 25))
SLIDING_PREFIX, SLIDING_WINDOW = 256, 512  # as in ``spade bench prefix-sliding``


def _tasks(n: int, max_turns: int) -> list[PlayTask]:
    ids = [format_env_id(i) for i in MULTI_TURN_IDS]
    return [PlayTask(ids[i % len(ids)], seed=i // len(ids), max_turns=max_turns) for i in range(n)]


def _sandbox_available() -> bool:
    try:
        from spade_envs.sandbox import SandboxRuntime  # noqa: F401
    except ImportError:
        return False
    return True


TIMING_KEYS = ("wall_s", "generation_s", "environment_s", "encoded_tokens", "computed_tokens", "cache_growths",
               "prefill_s", "peak_width")


def _merged(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """Timings of two runs together: sums, except the peak width (the larger)."""
    return {k: max(a.get(k, 0.0), b.get(k, 0.0)) if k == "peak_width" else a.get(k, 0.0) + b.get(k, 0.0)
            for k in TIMING_KEYS}


def _play(agent: Any, workload: list[PlayTask], batch: int) -> tuple[list[Any], dict[str, float]]:
    episodes: list[Any] = []
    timings: dict[str, float] = {}
    for start in range(0, len(workload), batch):
        episodes += agent.play(workload[start: start + batch])
        timings = _merged(timings, agent.last_timings)
    return episodes, timings


def _encoded_without_reuse(episodes: list[Any]) -> int:
    """Prompt tokens a re-encoding loop feeds: the whole history before every turn."""
    return sum(i for e in episodes for i, m in enumerate(e.mask) if m == 1 and (i == 0 or e.mask[i - 1] == 0))


def run(quick: bool = False, model: str = "default") -> dict[str, Any]:
    from spade_envs.agents.backend_transformers import TransformersBackend
    from spade_envs.agents.rollout import LLMAgent

    max_new_tokens, max_turns, n_small, n_big = (24, 3, 8, 32) if quick else (128, 3, 8, 32)
    t = time.perf_counter()
    backend = TransformersBackend(model, device="cpu")
    figures: dict[str, Any] = {
        "model": f"transformers:{model}", "max_new_tokens": max_new_tokens, "max_turns": max_turns,
        "model_load_s": round(time.perf_counter() - t, 3), "episodes_small": n_small, "episodes_b32": n_big,
        "load_avg_1m_start": round(os.getloadavg()[0], 2),
    }
    LLMAgent(backend, max_new_tokens=2, temperature=0.0).play(_tasks(1, 1))  # warm-up
    workload = _tasks(n_big, max_turns)
    half = n_small // 2
    # batch 1 runs in two halves around batch 8, so that a drift of the machine's speed
    # during the run (this one's drifts by 10-20 %) moves both sides of their ratio alike
    sliding = TransformersBackend(model, device="cpu", prefix_sliding=(SLIDING_PREFIX, SLIDING_WINDOW),
                                  model=backend.model, tokenizer=backend.tokenizer)
    runs = [("b1", 1, True, False, workload[:half]), ("b8", 8, True, False, workload[:n_small]),
            ("b1", 1, True, False, workload[half:n_small]), ("b8_reencode", 8, False, False, workload[:n_small]),
            ("b8_sliding", 8, True, False, workload[:n_small]), ("b32", 32, True, _sandbox_available(), workload)]
    played: dict[str, tuple[list[Any], dict[str, float], bool, bool]] = {}
    for name, batch, reuse, sandbox, tasks in runs:
        agent = LLMAgent(sliding if name == "b8_sliding" else backend, max_new_tokens=max_new_tokens, temperature=0.0,
                         sandbox=sandbox, reuse_cache=reuse)
        episodes, timings = _play(agent, tasks, batch)
        print(f"bench rollout: {name}: {len(episodes)} episodes in {timings['wall_s']:.1f} s", file=sys.stderr, flush=True)
        if name in played:
            episodes = played[name][0] + episodes
            timings = _merged(played[name][1], timings)
        played[name] = (episodes, timings, reuse, sandbox)
    for name, (episodes, timings, reuse, sandbox) in played.items():
        wall = timings["wall_s"]
        figures[f"episodes_per_s_{name}"] = round(len(episodes) / wall, 4)
        figures[f"wall_s_{name}"] = round(wall, 3)
        figures[f"generated_tokens_per_s_{name}"] = round(sum(sum(e.mask) for e in episodes) / wall, 2)
        figures[f"share_outside_generation_{name}"] = round(1.0 - timings["generation_s"] / wall, 4)
        figures[f"mean_turns_{name}"] = round(sum(e.turns for e in episodes) / max(1, len(episodes)), 3)
        figures[f"errors_{name}"] = sum(e.error is not None for e in episodes)
        figures[f"encoded_tokens_{name}"] = int(timings["encoded_tokens"]) if reuse else _encoded_without_reuse(episodes)
        if reuse:
            figures[f"computed_tokens_{name}"] = int(timings.get("computed_tokens", 0))
            figures[f"cache_growths_{name}"] = int(timings.get("cache_growths", 0))
            figures[f"share_prefill_{name}"] = round(timings["prefill_s"] / wall, 4)
            figures[f"peak_kv_columns_{name}"] = int(timings["peak_width"])
        if name == "b32":
            figures["sandboxed_b32"] = sandbox
    figures["load_avg_1m_end"] = round(os.getloadavg()[0], 2)
    figures["episodes_per_s_b8_reencode"] = figures.pop("episodes_per_s_b8_reencode")
    figures["ratio_eps_b8_vs_b1"] = round(figures["episodes_per_s_b8"] / figures["episodes_per_s_b1"], 3)
    figures["ratio_reuse_vs_reencode_b8"] = round(figures["episodes_per_s_b8"] / figures["episodes_per_s_b8_reencode"], 3)
    figures["ratio_eps_b32_vs_b1"] = round(figures["episodes_per_s_b32"] / figures["episodes_per_s_b1"], 3)
    figures["sliding_prefix_tokens"], figures["sliding_window_tokens"] = SLIDING_PREFIX, SLIDING_WINDOW
    figures["ratio_kv_columns_b8_vs_sliding"] = round(
        figures["peak_kv_columns_b8"] / max(1, figures["peak_kv_columns_b8_sliding"]), 3)
    figures["targets"] = {"b8_vs_b1_ge_2.5": figures["ratio_eps_b8_vs_b1"] >= 2.5,
                          "reuse_vs_reencode_ge_2": figures["ratio_reuse_vs_reencode_b8"] >= 2.0,
                          "outside_generation_b32_lt_10pct": figures["share_outside_generation_b32"] < 0.10}
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv)))
