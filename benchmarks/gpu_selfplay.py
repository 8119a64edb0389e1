"""GPU check of the self-play trainer (driver of benchmarks/gpu_selfplay.sh), ONE H200,
at most 10 minutes, no network.

Parts (one JSON object on stdout, ``ok`` when every check passes):

1. ``gpu-tiny``: one self-play round with the tiny random Llama, vLLM colocated;
2. ``gpu-4b``: the ``gpu-4b`` preset as it would run (bf16 autocast over float32 master
   weights, micro-batches of 1, its ``max_context`` and vLLM share) on a random-weight
   Qwen3 of Qwen3-4B's shape WITH its real vocabulary (151 936: the packaged tokenizer
   padded with added tokens), built offline on first use: one short self-play round, then
   one GRPO step on scripted rows of the full ``max_context`` length.

Checks per part: after the step, a weight push (``trl_bridge.sync_generation_weights``) and
the engine's sampling logprobs against the trainer's own forward on the same tokens (max and
mean gap within ``SYNC_MAX_ABS`` / ``SYNC_MEAN_ABS``); generation tokens/s of our backend
against the raw ``vllm.LLM.generate`` on the same prompts (``generation_vs_raw``); the rows of each GRPO group differ (per-request sampling seeds); the
FRACTION of weight entries that one step with a learning signal changes (> 0.5, not
"any": bf16 weights without fp32 masters move ~2 % at lr 1e-6); the CUDA memory peak
against ``spade selfplay --plan``'s estimate for this device (peak <= 1.15 x plan);
rollout tokens/s on generation alone (``backend.generate`` timed by itself) besides the
round's own figure. ``--cpu-dry-run`` runs part 1 and a short full-length step on CPU
with the tiny model (no vLLM, no memory figures) to check the script itself. Figures go
to ``OUT/gpu_selfplay.json`` (and stdout); the exit status is 1 when a check fails.
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
QWEN3_VOCAB = 151_936


def build_4b_shape(folder: Path) -> Path:
    """A random Qwen3 with Qwen3-4B's shape and vocabulary, the packaged tokenizer padded
    with added tokens to that vocabulary, saved in bf16 (vLLM serves it in bf16)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from spade_envs.agents.models import model_path

    tok = AutoTokenizer.from_pretrained(str(model_path("tiny-random")))
    tok.add_tokens([f"<|pad_{i}|>" for i in range(QWEN3_VOCAB - len(tok))], special_tokens=True)
    cfg = Qwen3Config(vocab_size=QWEN3_VOCAB, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id, torch_dtype="bfloat16", **QWEN3_4B_SHAPE)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    del model
    return folder


def _sample(model, per_tensor: int = 1_000_000) -> dict:
    """The first ``per_tensor`` entries of every parameter (enough for a changed fraction)."""
    return {k: v.detach().flatten()[:per_tensor].clone() for k, v in model.named_parameters()}


def _changed(before: dict, model) -> float:
    after = _sample(model)
    moved = sum(int((after[k] != before[k]).sum()) for k in before)
    return moved / max(1, sum(v.numel() for v in before.values()))


def _cuda_peak() -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None


def _plan_gib(cfg) -> dict | None:
    from spade_envs.selfplay.plan import local_gpu, plan

    here = local_gpu()
    if here is None:
        return None
    p = plan(cfg, here)
    return {"plan_total_gib": round(p.total / 2**30, 2), "plan_fits": p.fits,
            **{f"plan_{k}_gib": round(v / 2**30, 2) for k, v in p.parts.items()}}


def _generation_only(tr, n_prompts: int, max_new: int) -> dict:
    """Tokens/s of ``backend.generate`` alone: ``n_prompts`` distinct prompts, ``max_new`` tokens."""
    prompts = [[1 + (i % 50), 2 + i % 7, 30 + i] for i in range(n_prompts)]
    tr.backend.generate(prompts[:2], max_new_tokens=4, temperature=0.6, seed=1)  # warm
    t0 = time.perf_counter()
    gens = tr.backend.generate(prompts, max_new_tokens=max_new, temperature=0.6, seed=2)
    dt = time.perf_counter() - t0
    toks = sum(len(g.token_ids) for g in gens)
    return {"generation_only_tokens": toks, "generation_only_s": round(dt, 2),
            "generation_only_tokens_per_s": round(toks / dt, 1) if dt > 0 else None}


SYNC_MAX_ABS = 0.25  # nats: one token's worst gap, bf16 engine against the fp32-master forward
SYNC_MEAN_ABS = 0.02  # nats: the mean gap over every sampled token


def sync_check(tr, cfg) -> dict:
    """After the step(s), push the weights (``trl_bridge.sync_generation_weights``: a no-op
    without vLLM), sample, and score the same tokens with the trainer's forward
    (``teacher_forced_logps``): the engine must sample from the weights just trained."""
    from spade_envs.selfplay.trl_bridge import sync_generation_weights, teacher_forced_logps

    sync_generation_weights(tr.grpo)
    prompt = [1, 450, 3681, 310, 278, 3186, 338, 263]
    gens = tr.backend.generate([prompt] * 4, max_new_tokens=16, temperature=float(cfg.temperature), seed=9)
    gaps = []
    for g in gens:
        if g.logprobs:
            ref = teacher_forced_logps(tr.grpo, g.prompt_token_ids, g.token_ids)
            gaps += [abs(a - b) for a, b in zip(ref, g.logprobs)]
    worst = max(gaps) if gaps else None
    mean = sum(gaps) / len(gaps) if gaps else None
    return {"sync_tokens_scored": len(gaps), "sync_logprob_max_abs": worst, "sync_logprob_mean_abs": mean,
            "sync_logprobs_match": bool(gaps) and worst <= SYNC_MAX_ABS and mean <= SYNC_MEAN_ABS}


def raw_baseline(tr, cfg, n_prompts: int, max_new: int) -> dict:
    """Tokens/s of the raw engine on the same prompts as :func:`_generation_only` (vLLM's
    ``LLM.generate`` itself; without vLLM the inner transformers backend), and our
    backend's figure as a ratio of it, measured in the same run."""
    prompts = [[1 + (i % 50), 2 + i % 7, 30 + i] for i in range(n_prompts)]
    if cfg.use_vllm:
        import vllm

        from spade_envs.selfplay.trl_bridge import vllm_engine

        llm = vllm_engine(tr.grpo)
        params = [vllm.SamplingParams(temperature=0.6, max_tokens=max_new, seed=2 + i) for i in range(n_prompts)]
        t0 = time.perf_counter()
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        dt = time.perf_counter() - t0
        toks = sum(len(o.outputs[0].token_ids) for o in outs)
    else:
        inner = getattr(tr.backend, "_inner", None) or getattr(getattr(tr.backend, "inner", None), "_inner", None)
        if inner is None:
            return {}
        t0 = time.perf_counter()
        toks = sum(len(g.token_ids) for g in inner.generate(prompts, max_new_tokens=max_new, temperature=0.6, seed=2))
        dt = time.perf_counter() - t0
    return {"raw_tokens_per_s": round(toks / dt, 1) if dt > 0 else None}


def full_length_step(tr, cfg) -> dict:
    """One agent GRPO step on scripted rows as long as ``max_context`` (prompt <= 256 tokens),
    rewards differing within the group: the peak memory of a real-length step, and the
    fraction of weights the step changes."""
    import random

    from spade_envs.selfplay.trl_bridge import grpo_step

    vocab = tr.model.config.vocab_size
    rng = random.Random(0)
    length = int(cfg.max_context)
    prompt = min(256, length // 4)

    def rollout(prompts, trainer):
        comps = [[rng.randrange(10, vocab - 1) for _ in range(length - prompt)] for _ in prompts]
        return {"prompt_ids": [[rng.randrange(10, vocab - 1) for _ in range(prompt)] for _ in prompts],
                "completion_ids": comps, "logprobs": [[-1.0] * len(c) for c in comps],
                "reward": [float(i % 2) for i in range(len(prompts))]}

    saved = tr.grpo.rollout_func
    tr.grpo.rollout_func = rollout
    before = _sample(tr.model)
    t0 = time.perf_counter()
    try:
        step = grpo_step(tr.grpo, [{"prompt": "{}"}] * 2, 2, micro_batch=cfg.micro_batch_size,
                         max_grad_norm=cfg.max_grad_norm)
    finally:
        tr.grpo.rollout_func = saved
    return {"full_length_tokens": length, "full_length_step_s": round(time.perf_counter() - t0, 2),
            "full_length_micro_batches": step["micro_batches"], "fraction_weights_changed": round(_changed(before, tr.model), 4)}


def one_part(name: str, cfg, *, full_length: bool) -> dict:
    import torch

    from spade_envs.selfplay.trainer import SelfPlayTrainer

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    tr = SelfPlayTrainer(cfg)
    res: dict = {"part": name, "model": cfg.model, "build_s": round(time.perf_counter() - t0, 1),
                 "vocab": tr.model.config.vocab_size, "max_context": cfg.max_context, "dtype": cfg.dtype,
                 "master_dtype": str(next(tr.model.parameters()).dtype), **(_plan_gib(cfg) or {})}
    row = tr.run_round()
    groups = distinct = 0
    eps, g = tr.last_plain_episodes, cfg.agent_group_size
    for i in range(0, len(eps) - g + 1, g):
        comps = {tuple(t for t, m in zip(ep.token_ids, ep.mask) if m) for ep in eps[i:i + g]}
        groups += 1
        distinct += int(len(comps) == g)
    res.update(round_s=row.get("round_s"), groups=groups, groups_all_distinct=distinct,
               completions_differ=groups > 0 and distinct == groups,
               round_generation_tokens_per_s=row.get("generation_tokens_per_s"),
               rollout_tokens=row.get("rollout_tokens"), agent_micro_batches=row.get("agent_micro_batches"),
               proposed=row.get("proposed"), valid=row.get("valid"))
    res.update(_generation_only(tr, n_prompts=32, max_new=min(256, cfg.agent_max_new_tokens)))
    res.update(raw_baseline(tr, cfg, n_prompts=32, max_new=min(256, cfg.agent_max_new_tokens)))
    if res.get("raw_tokens_per_s") and res.get("generation_only_tokens_per_s"):
        res["generation_vs_raw"] = round(res["generation_only_tokens_per_s"] / res["raw_tokens_per_s"], 3)
    if full_length:
        res.update(full_length_step(tr, cfg))
    res.update(sync_check(tr, cfg))
    res["memory_peak_gib"] = _cuda_peak()
    if res["memory_peak_gib"] is not None and res.get("plan_total_gib"):
        res["peak_over_plan"] = round(res["memory_peak_gib"] / res["plan_total_gib"], 3)
    res["ok"] = bool(res["completions_differ"] and res.get("fraction_weights_changed", 1.0) > 0.5
                     and res.get("peak_over_plan", 0.0) <= 1.15 and res["sync_logprobs_match"])
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
    ap.add_argument("--cpu-dry-run", action="store_true", help="part 1 and a short full-length step on CPU")
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
                            max_turns=1, agent_max_new_tokens=8, designer_prompts=1, params_share=1.0,
                            max_context=256, micro_batch_size=1, dtype="bfloat16", learning_rate=1e-6, **common)
        results.append(one_part("cpu-dry-run", tiny, full_length=True))
    else:
        tiny = build_config("gpu-tiny", out_dir=str(out / "tiny"), params_share=1.0, **common)
        results.append(one_part("gpu-tiny", tiny, full_length=False))
    if not args.cpu_dry_run and not args.skip_4b:
        folder = build_4b_shape(out / "qwen3-4b-shape")
        # the gpu-4b preset's model-side settings (dtype, micro-batch, max_context, vLLM
        # share), with a round cut short: few environments, turns and tokens
        big = build_config("gpu-4b", out_dir=str(out / "4b"), model=str(folder), envs_per_round=4,
                           agent_group_size=4, hint_plays=2, designer_prompts=1, designer_group_size=2,
                           max_turns=2, agent_max_new_tokens=256, designer_max_new_tokens=512, params_share=0.0,
                           **common)
        results.append(one_part("gpu-4b", big, full_length=True))
    ok = all(r["ok"] for r in results)
    summary = json.dumps({"bench": "gpu_selfplay", "ok": ok, "parts": results})
    (out / "gpu_selfplay.json").write_text(summary + "\n")
    print(summary)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
