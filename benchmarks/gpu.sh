#!/usr/bin/env bash
# Training, scoring, generation and memory benchmarks on a GPU, every figure in one file.
#
#   bash benchmarks/gpu.sh [--device cuda] [--out gpu_benchmarks.txt]
#   bash benchmarks/gpu.sh --device cpu --tiny     # a dry run on tiny models (the test suite)
#   bash benchmarks/gpu.sh --deadline 420 --models smollm2-random,olmo2-1b   # other options
#                                                   # go to gpu_suite.py
#
# Models: random-init SmolLM2-135M, OLMo-2-1B and OLMo-2-7B shapes (bf16 on CUDA, no
# download; the tokenizer is the embedded SmolLM2's, or $SIGMOID_HEAD_BENCH_TOKENIZER's
# folder); --tiny swaps in one tiny random-init model. Per model:
#   train_throughput.py --memory  training tokens/s vs forward-only (target >= 0.9x), and
#                                 max allocated vs forward + head + optimizer state;
#   scoring.py                    full scoring vs the forward pass;
#   generation.py                 generation with scores vs plain generate;
#   rerank.py                     best-of-N reranking beyond generation vs a forward pass;
#   rauq_overhead.py --generate   RAUQ: eager attention vs SDPA, and RAUQ's own cost.
# First, step_ops.py: operators and host syncs of one step at 256 / 1,024 / 4,096 positions.
# Then train_throughput.py and scoring.py with the body under torch.compile (default;
# reduce-overhead is refused: unbounded CUDA-graph warm-up). All of it runs in one process (gpu_suite.py); the header
# names the card, driver and versions. Set PYTHON to choose the interpreter.
set -euo pipefail

device=cuda
tiny=0
out=gpu_benchmarks.txt
passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --out) out="$2"; shift 2 ;;
    *) passthrough+=("$1"); shift ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
py="${PYTHON:-python}"
extra=()
if [ "$tiny" = 1 ]; then extra=(--tiny); fi

{
  echo "# sigmoid-head benchmarks: device=$device tiny=$tiny $(date -u +%Y-%m-%dT%H:%MZ)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  fi
  "$py" -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
  cd "$here" && "$py" gpu_suite.py --device "$device" "${extra[@]}" "${passthrough[@]}"
} 2>&1 | tee "$out"
