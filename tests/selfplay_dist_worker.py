"""Worker of tests/test_selfplay_dist_ranks.py, run as ``torchrun --nproc_per_node 2
tests/selfplay_dist_worker.py OUT`` on CPU (gloo). Each rank writes ``OUT/rank<R>.json``
(and ``OUT/grads<R>.pt``) with what the test compares:

1. ``grads``: the gradient of one GRPO step over 4 scripted rows (2 per rank) after the
   DDP all-reduce, captured at ``optimizer.step``;
2. ``server``: server-mode generation where rank 0 calls ``generate`` once and rank 1
   three times (unequal turn counts), then a designer-style ``map_sharded`` over ONE
   prompt (rank 1 gets none), then a barrier: it must finish;
3. ``harness``: one ``cpu-harness`` round through ``loop.run``: the replay buffer and
   the designer ledger of this rank, the registered ids.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

PROMPT = [5, 6, 7, 8]
COMPLETIONS = [[11, 12, 13, 2], [21, 22, 2], [31, 32, 33, 34, 2], [41, 2]]
REWARDS = [1.0, 0.0, 0.0, 1.0]


def scripted(prompts, trainer):
    idx = [json.loads(p)["i"] for p in prompts]
    comps = [COMPLETIONS[i] for i in idx]
    return {"prompt_ids": [PROMPT] * len(idx), "completion_ids": comps, "logprobs": [[-1.0] * len(c) for c in comps],
            "reward": [REWARDS[i] for i in idx]}


def step_grads(out: Path) -> dict:
    import torch

    from spade_envs.selfplay import build_config, grpo
    from spade_envs.selfplay.trl_bridge import grpo_step

    grpo.seed_everything(0)
    tr = grpo.build_trainer(build_config("cpu-tiny", out_dir=str(out / "grads"), tensorboard=False,
                                         learning_rate=1e-2))
    tr.rollout_func = scripted
    seen = {}

    def capture(*a, **k):
        for name, p in tr.accelerator.unwrap_model(tr.model).named_parameters():
            if p.grad is not None:
                seen[name] = p.grad.detach().clone()

    tr.optimizer.step = capture
    res = grpo_step(tr, [{"prompt": json.dumps({"i": i})} for i in range(4)], 2, micro_batch=1, max_grad_norm=0.0)
    torch.save(seen, out / f"grads{tr.accelerator.process_index}.pt")
    return {"micro_batches": res["micro_batches"], "world": tr.accelerator.num_processes}


class FakeClient:
    def __init__(self):
        self.calls = 0

    def generate(self, prompts, n=1, temperature=1.0, max_tokens=16, logprobs=0, generation_kwargs=None):
        self.calls += 1
        ids = [[10 + self.calls, 2] for _ in prompts for _ in range(n)]
        return {"completion_ids": ids, "logprobs": [[[-0.5]] * len(x) for x in ids]}


def server_generation(rank: int) -> dict:
    from accelerate import PartialState

    from spade_envs.selfplay import dist
    from spade_envs.selfplay.policy import TrainerVLLMServerBackend

    state = PartialState()
    acc = SimpleNamespace(num_processes=state.num_processes, process_index=state.process_index,
                          is_main_process=state.is_main_process)
    tok = SimpleNamespace(eos_token_id=2, get_vocab=lambda: {"<|im_end|>": 3},
                          decode=lambda ids, skip_special_tokens=False: " ".join(map(str, ids)))
    trainer = SimpleNamespace(processing_class=tok, state=SimpleNamespace(global_step=0), _last_loaded_step=0,
                              accelerator=acc, vllm_generation=SimpleNamespace(sync_weights=lambda: None))
    client = FakeClient()
    backend = TrainerVLLMServerBackend(trainer, name="m", client=client)
    t0 = time.time()
    for _turn in range(1 if rank == 0 else 3):  # episodes of different lengths per rank
        backend.generate([[1, 2, 3]] * 2, max_new_tokens=4, seed=5)
    sharded = dist.ShardedBackend(backend, acc).generate([[7, 7]], max_new_tokens=4, seed=1)
    state.wait_for_everyone()
    return {"calls": client.calls, "sharded_rows": len(sharded), "seconds": round(time.time() - t0, 2)}


def harness_round(out: Path) -> dict:
    from spade_envs.selfplay import build_config
    from spade_envs.selfplay.loop import run

    held = {}
    cfg = build_config("cpu-harness", out_dir=str(out / "run"), registry_path=str(out / "registry.sqlite3"),
                       rounds=1, envs_per_round=2, agent_group_size=2, hint_plays=1, max_turns=1,
                       agent_max_new_tokens=4, tensorboard=False, plot=False)
    summary = run(cfg, on_start=lambda tr: held.setdefault("tr", tr))
    tr = held["tr"]
    return {"buffer": tr.buffer.to_json(), "ledger": tr.ledger.to_json(), "round": tr.round,
            "generations": summary["generations"], "registered": summary["registered"],
            "global_step": tr.grpo.state.global_step}


def main() -> None:
    out = Path(sys.argv[1])
    rank = int(os.environ["RANK"])
    result = {"rank": rank, "grads": step_grads(out), "server": server_generation(rank)}
    result["harness"] = harness_round(out)
    (out / f"rank{rank}.json").write_text(json.dumps(result, sort_keys=True, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
