"""GPU check of the self-play trainer (driver of benchmarks/gpu_selfplay.sh).

Two parts, each ONE self-play round driven through :class:`SelfPlayTrainer`:

1. ``gpu-tiny``: the tiny random Llama with vLLM colocated;
2. ``gpu-4b`` shapes: a random-weight Qwen3 model with Qwen3-4B's shape (36 layers,
   hidden 2560, 32 query / 8 key-value heads of 128, MLP 9728; the packaged SmolLM2
   tokenizer and its vocabulary), built offline on first use, bf16, vLLM colocated,
   SPADE-like step shapes cut to one short round.

For each part it reports: whether the completions within each GRPO group differ
(per-request sampling seeds), whether the weights changed in the round and by how
much, and whether one more agent step with a scripted reward (a random model never wins)
moves them, the CUDA
memory peak, rollout tokens/s on generation alone (model tokens / generation seconds of
the agent loop), and the round's wall time. ``--cpu-dry-run`` runs part 1 on CPU without
vLLM (to check the script itself). One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

QWEN3_4B_SHAPE = dict(num_hidden_layers=36, hidden_size=2560, num_attention_heads=32, num_key_value_heads=8,
                      head_dim=128, intermediate_size=9728, max_position_embeddings=40960, rope_theta=1_000_000.0,
                      rms_norm_eps=1e-6, tie_word_embeddings=True)


def build_4b_shape(folder: Path) -> Path:
    """A random Qwen3 with Qwen3-4B's shape and the packaged tokenizer, saved in bf16."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from spade_envs.agents.models import model_path

    tok = AutoTokenizer.from_pretrained(str(model_path("tiny-random")))
    cfg = Qwen3Config(vocab_size=len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, torch_dtype="bfloat16", **QWEN3_4B_SHAPE)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    del model
    return folder


def _weights(model) -> dict:
    return {k: v.detach().float().cpu().clone() for k, v in model.named_parameters() if v.ndim >= 1 and v.numel() < 50_000_000}


def one_round(name: str, cfg, out: Path) -> dict:
    import torch

    from spade_envs.selfplay.trainer import SelfPlayTrainer

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    tr = SelfPlayTrainer(cfg)
    build_s = time.perf_counter() - t0
    before = _weights(tr.model)
    row = tr.run_round()
    after = _weights(tr.model)
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    delta = max((float((after[k] - before[k]).abs().max()) for k in moved), default=0.0)
    groups, distinct = 0, 0
    eps = tr.rollout.last_episodes
    g = cfg.agent_group_size
    for i in range(0, len(eps) - g + 1, g):
        comps = {tuple(t for t, m in zip(ep.token_ids, ep.mask) if m) for ep in eps[i:i + g]}
        groups += 1
        distinct += int(len(comps) == g)
    res = {
        "part": name, "model": cfg.model, "build_s": round(build_s, 1), "round_s": row.get("round_s"),
        "groups": groups, "groups_all_distinct": distinct, "completions_differ": groups > 0 and distinct == groups,
        "weights_changed": bool(moved), "params_changed": len(moved), "max_abs_weight_delta": delta,
        "agent_advantages_nonzero": sum(1 for a in row.get("agent_advantages") or [] if abs(a) > 1e-9),
        "generation_tokens_per_s": row.get("generation_tokens_per_s"), "rollout_tokens": row.get("rollout_tokens"),
        "generation_s": row.get("generation_s"), "agent_micro_batches": row.get("agent_micro_batches"),
        "memory_peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None,
        "proposed": row.get("proposed"), "valid": row.get("valid"),
    }
    # a random model never wins, so the real round may carry no learning signal: one more
    # agent step with a scripted reward (parity of the completion's token sum, which
    # differs between distinct completions) checks that the GPU path moves the weights
    from spade_envs.selfplay.rollout import agent_prompt

    tr.rollout.reward_of = lambda ep: float(sum(ep.token_ids) % 2)
    rows = [{"prompt": agent_prompt("spade/Env-00001", 123 + i // g, max_turns=1, kwargs={"difficulty": 0})}
            for i in range(2 * g)]
    w0 = _weights(tr.model)
    t1 = time.perf_counter()
    step = tr._grpo_step(rows, g)
    w1 = _weights(tr.model)
    res["scripted_step_s"] = round(time.perf_counter() - t1, 2)
    res["scripted_advantages_nonzero"] = sum(1 for a in step["advantages"] if abs(a) > 1e-9)
    res["weights_changed_with_signal"] = any(not torch.equal(w0[k], w1[k]) for k in w0)
    if torch.cuda.is_available():
        res["memory_peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    try:
        tr.agent.close()
    except Exception:
        pass
    del tr
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/spade-gpu-selfplay")
    ap.add_argument("--cpu-dry-run", action="store_true")
    ap.add_argument("--skip-4b", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from spade_envs.selfplay import build_config

    common = dict(rounds=1, registry_path=str(out / "registry.sqlite3"), tensorboard=False, plot=False,
                  seed_levels="easiest", seed_games=False)
    results = []
    if args.cpu_dry_run:
        tiny = build_config("cpu-tiny", out_dir=str(out / "tiny"), envs_per_round=2, agent_group_size=4,
                            max_turns=1, agent_max_new_tokens=8, designer_prompts=1, params_share=1.0, **common)
    else:
        tiny = build_config("gpu-tiny", out_dir=str(out / "tiny"), params_share=1.0, **common)
    results.append(one_round("gpu-tiny", tiny, out))
    if not args.cpu_dry_run and not args.skip_4b:
        folder = build_4b_shape(out / "qwen3-4b-shape")
        big = build_config("gpu-4b", out_dir=str(out / "4b"), model=str(folder), envs_per_round=4,
                           agent_group_size=4, hint_plays=2, designer_prompts=1, designer_group_size=2,
                           max_turns=2, agent_max_new_tokens=256, designer_max_new_tokens=512, max_context=4096,
                           designer_prompt_tokens=3072, micro_batch_size=4, params_share=0.0,
                           vllm_gpu_memory_utilization=0.3, **common)
        results.append(one_round("gpu-4b-shape", big, out))
    ok = all(r["completions_differ"] and r["weights_changed_with_signal"] for r in results)
    print(json.dumps({"bench": "gpu_selfplay", "ok": ok, "parts": results}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
