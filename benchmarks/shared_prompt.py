"""What running a group's prompt once buys the designer's step (spade_envs/selfplay/shared_prompt.py).

The designer bench's step on the default model (SmolLM2-135M, CPU) at its shapes:
``--prompts`` prompts of ``--prompt-len`` tokens x ``--group`` completions of
``--completion-len`` tokens (the params prompt is ~650 tokens, a variant ~53). Each part
is timed on the same trainer, weights and rows, in this one run, and printed as a ratio:

- the GRPO step (``trl_bridge.grpo_step``: loss forward, backward, optimizer step):
  **baseline** = the bench's old setting (TRL's forward per row, gradient checkpointing,
  micro-batches of 4), **shared** = the shared-prompt forward; with ``--trl-one-batch``
  also TRL's forward without checkpointing in one micro-batch (what sharing alone adds;
  off by default: on 2 cores it did not finish in 5 minutes);
- the behaviour logprobs (``teacher_forced_logps`` row by row, as before, vs
  ``teacher_forced_logps_batch``);
- generation (``TransformersBackend._generate_batch``: duplicate prompts prefilled per
  row, as before, vs once per distinct prompt).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/shared_prompt.py [--json]

Token ids are random (cost depends on shapes, not on the text); the gradients of the
baseline and shared steps are compared too (max relative difference).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from typing import Any


def _rows(args: argparse.Namespace, vocab: int) -> list[tuple[list[int], list[int]]]:
    rng = random.Random(0)
    prompts = [[rng.randrange(100, vocab) for _ in range(args.prompt_len)] for _ in range(args.prompts)]
    return [(p, [rng.randrange(100, vocab) for _ in range(args.completion_len - rng.randrange(0, 4))])
            for p in prompts for _ in range(args.group)]


class _Stored:
    """A ``rollout_func`` replaying fixed rows with rewards that differ within each group."""

    def __init__(self, rows: list[tuple[list[int], list[int]]], group: int) -> None:
        self.rows, self.group = rows, group

    def __call__(self, prompts: list, trainer: Any) -> dict:
        return {"prompt_ids": [p for p, _ in self.rows], "completion_ids": [c for _, c in self.rows],
                "logprobs": [[-1.0] * len(c) for _, c in self.rows],
                "reward": [float(i % 2) for i in range(len(self.rows))]}


def _step(tr: Any, rows: list, group: int, micro: int, share: bool, ckpt: bool) -> tuple[float, dict]:
    from spade_envs.selfplay.trl_bridge import grpo_step

    model = tr.accelerator.unwrap_model(tr.model)
    model.gradient_checkpointing_enable() if ckpt else model.gradient_checkpointing_disable()
    tr.spade_share_prompts = share
    tr.rollout_func = _Stored(rows, group)
    grads: dict = {}
    real = tr.optimizer.step

    def keep(*a: Any, **k: Any) -> None:  # the same weights for every variant
        grads.update({n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None})

    tr.optimizer.step = keep
    try:
        t = time.perf_counter()
        grpo_step(tr, [{"prompt": "{}"}] * len(rows), group, micro_batch=micro)
        return time.perf_counter() - t, grads
    finally:
        tr.optimizer.step = real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=650)
    ap.add_argument("--completion-len", type=int, default=53)
    ap.add_argument("--trl-one-batch", action="store_true", help="also time TRL's per-row forward in one micro-batch")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from spade_envs.agents import backend_transformers as bt
    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import teacher_forced_logps, teacher_forced_logps_batch

    grpo.seed_everything(0)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = build_config("cpu-smol", out_dir=tmp, tensorboard=False, designer_prompts=args.prompts,
                           designer_group_size=args.group, gradient_checkpointing=False)
        tr = grpo.build_trainer(cfg)
        rows = _rows(args, int(tr.model.config.vocab_size))
        n = len(rows)
        out: dict[str, Any] = {"settings": vars(args)}
        print("step: baseline (TRL per row, checkpointing, micro 4) ...", file=sys.stderr, flush=True)
        base_s, base_g = _step(tr, rows, args.group, 4, share=False, ckpt=True)
        one_s = None
        if args.trl_one_batch:
            print("step: TRL per row, one micro-batch ...", file=sys.stderr, flush=True)
            one_s, _ = _step(tr, rows, args.group, n, share=False, ckpt=False)
        print("step: shared prompt, one micro-batch ...", file=sys.stderr, flush=True)
        shared_s, shared_g = _step(tr, rows, args.group, n, share=True, ckpt=False)
        diff = max(float((shared_g[k] - base_g[k]).abs().max() / (base_g[k].abs().max() + 1e-12)) for k in base_g)
        out["step"] = {"baseline_s": base_s, "trl_one_batch_s": one_s, "shared_s": shared_s,
                       "ratio_vs_baseline": base_s / shared_s, "ratio_vs_trl_one_batch": None if one_s is None else one_s / shared_s,
                       "max_rel_grad_diff": diff}
        print("behaviour logprobs ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        for p, c in rows:
            teacher_forced_logps(tr, p, c)
        rowwise = time.perf_counter() - t
        t = time.perf_counter()
        teacher_forced_logps_batch(tr, rows)
        batched = time.perf_counter() - t
        out["behaviour_logprobs"] = {"row_by_row_s": rowwise, "batched_s": batched, "ratio": rowwise / batched}
        print("generation ...", file=sys.stderr, flush=True)
        backend = bt.TransformersBackend("default", model=tr.model, tokenizer=tr.processing_class)
        prompts = [p for p, _ in rows]
        real = bt.distinct_rows
        times = {}
        for name, fn in (("per_row", lambda ps: (list(range(len(ps))), None)), ("distinct", real)):
            bt.distinct_rows = fn
            try:
                import torch

                t = time.perf_counter()
                backend._generate_batch(prompts, args.completion_len, 0.6, torch.Generator().manual_seed(0),
                                        [None] * n)
                times[name] = time.perf_counter() - t
            finally:
                bt.distinct_rows = real
        out["generation"] = {"per_row_s": times["per_row"], "distinct_s": times["distinct"],
                             "ratio": times["per_row"] / times["distinct"]}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        s, b, g = out["step"], out["behaviour_logprobs"], out["generation"]
        one = "" if s["trl_one_batch_s"] is None else (
            f"; TRL one batch {s['trl_one_batch_s']:.1f} s: {s['ratio_vs_trl_one_batch']:.1f}x")
        print(f"GRPO step ({n} rows): baseline {s['baseline_s']:.1f} s, shared {s['shared_s']:.1f} s: "
              f"{s['ratio_vs_baseline']:.1f}x vs baseline{one} (max rel. gradient diff {s['max_rel_grad_diff']:.1e})")
        print(f"behaviour logprobs: row by row {b['row_by_row_s']:.1f} s, batched {b['batched_s']:.1f} s: {b['ratio']:.1f}x")
        print(f"generation ({args.completion_len} tokens): per-row prefill {g['per_row_s']:.1f} s, "
              f"distinct prompts {g['distinct_s']:.1f} s: {g['ratio']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
