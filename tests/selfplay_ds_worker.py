"""Worker of tests/test_selfplay_deepspeed.py, launched with real DeepSpeed on CPU:
``DS_ACCELERATOR=cpu accelerate launch --config_file spade_envs/selfplay/accelerate/zeroN.yaml
--cpu --num_processes 2 tests/selfplay_ds_worker.py MODE OUT`` (or one plain process with
MODE ``ref``). Modes:

- ``step`` / ``ref``: one GRPO step over 8 scripted rows (4 groups of 2) with micro-batch 1
  (k = 4 per rank under 2 ranks) / the full batch in one process; the full parameters
  after the step go to ``OUT/params.pt`` and the step's figures to ``OUT/rank<R>.json``;
- ``save``: that step, a gathered checkpoint (``checkpoint.save``), a second step; the
  parameters after it in ``OUT/params.pt``;
- ``resume``: the checkpoint loaded (``checkpoint.load_into``), the second step; its
  parameters in ``OUT/params.pt`` (equal to ``save``'s).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]
REWARDS = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.25]


def scripted(prompts, trainer):
    idx = [json.loads(p)["i"] for p in prompts]
    comps = [COMPLETIONS[i % 4] for i in idx]
    return {"prompt_ids": [PROMPT] * len(idx), "completion_ids": comps, "logprobs": [[-1.0] * len(c) for c in comps],
            "reward": [REWARDS[i] for i in idx]}


def full_params(tr):
    """Every parameter in full on every rank (gathered under ZeRO-3)."""
    import torch

    state = tr.accelerator.get_state_dict(tr.model_wrapped)
    return {k: v.detach().float().cpu().clone() for k, v in state.items()} if state else {}


def main(mode: str, out: Path) -> None:
    import torch

    from spade_envs.selfplay import build_config, checkpoint, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step

    # the scripted rollout never generates with the model, so the ZeRO-3 refusal of
    # transformers generation (grpo.check_zero3_generation) does not concern this worker
    grpo.check_zero3_generation = lambda config: None
    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(out / "run"), tensorboard=False, learning_rate=1e-2))
    tr.rollout_func = scripted
    # DeepSpeed and several processes score rows with TRL's own forward; the one-process
    # reference must too, or AdamW's first step (about LR * sign(g)) turns the rounding
    # between the two equal objectives into whole steps on near-zero gradients. The shared
    # prompt forward is checked against TRL's in tests/test_selfplay_shared_prompt.py.
    tr.spade_share_prompts = False
    acc = tr.accelerator
    rows = [{"prompt": json.dumps({"i": i})} for i in range(8)]
    micro = 8 if mode == "ref" else 1
    info = {"world": acc.num_processes, "distributed_type": str(acc.distributed_type)}
    if mode == "resume":
        ck = checkpoint.latest(out / "ck")
        checkpoint.load_into(ck, model=tr.model_wrapped, optimizer=tr.optimizer, rng=random.Random(), accelerator=acc)
    else:
        res = grpo_step(tr, rows, 2, micro_batch=micro, max_grad_norm=1.0)
        engine = tr.model_wrapped
        info.update(micro_batches=res["micro_batches"], grad_norm=res["grad_norm"], advantages=res["advantages"],
                    engine_gas=int(engine.gradient_accumulation_steps()) if hasattr(engine, "gradient_accumulation_steps") else None)
    if mode in ("save", "resume"):
        if mode == "save":
            checkpoint.save(out / "ck", 0, model=tr.model_wrapped, tokenizer=tr.processing_class,
                            optimizer=tr.optimizer, rng=random.Random(0), state={}, accelerator=acc)
        grpo_step(tr, rows, 2, micro_batch=micro, max_grad_norm=1.0)
    params = full_params(tr)
    if acc.is_main_process:
        torch.save(params, out / f"params-{mode}.pt")
    (out / f"rank{acc.process_index}-{mode}.json").write_text(json.dumps(info))
    acc.wait_for_everyone()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
