#!/usr/bin/env bash
# GPU check of the self-play trainer on ONE H200, at most 10 minutes, no network:
#   1. gpu-tiny: one round with the tiny random Llama, vLLM colocated;
#   2. the gpu-4b preset (bf16 autocast over fp32 masters, its context and vLLM share) on a random
#      Qwen3 of Qwen3-4B's shape and vocabulary (built offline
#      on first use under $OUT, ~8 GB bf16): a short round, then one full-length step.
# Checks per part: completions within each GRPO group differ, the fraction of weights a step
# with a learning signal changes (> 0.5), CUDA memory peak vs `spade selfplay --plan`, tokens/s
# of generation alone. `python benchmarks/gpu_selfplay.py --cpu-dry-run` checks the script on CPU.
#
#   bash benchmarks/gpu_selfplay.sh [OUT_DIR]        (exit 0 when every check passes)
#
# Needs the repo's .venv (or python with the pinned stack) plus vllm==0.31.0 and the
# cached offline models (SPADE_MODELS, default ~/.cache/spade/models).
set -euo pipefail
OUT="${1:-${OUT:-/tmp}/spade-gpu-selfplay}"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false TRL_EXPERIMENTAL_SILENCE=1
export SPADE_HOME="${SPADE_HOME:-$OUT/home}"
mkdir -p "$OUT" "$SPADE_HOME"
rm -rf "$OUT/tiny" "$OUT/4b" "$OUT/registry.sqlite3"
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
timeout 570 "$PY" benchmarks/gpu_selfplay.py --out "$OUT" | tee "$OUT/summary.json"
