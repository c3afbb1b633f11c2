#!/usr/bin/env bash
# Everything issue 52 asks of a lent GPU, in one time-boxed run from the repository root:
#
#   bash benchmarks/gpu_lent.sh OUT [SUITE_DEADLINE_S]
#
# 1. the CUDA tests (tests/test_devices.py, the CUDA cases of tests/test_training_loop.py,
#    tests/test_gpu_bench.py)                                         -> OUT/tests.txt
# 2. the human-label harness --quick on CUDA, with the committed tiny base and head
#    (tests/data/head_v0_1_0) and with a random-init SmolLM2-135M-shaped base and its
#    untrained head                                                   -> OUT/harness.txt
# 3. benchmarks/gpu.sh (gpu_suite.py) with --deadline SUITE_DEADLINE_S (default 360)
#                                                                     -> OUT/gpu_benchmarks.txt
#
# The machine holds no model weights and reaches no network: the random-init models take
# their tokenizer from .gpu/tokenizer (the embedded SmolLM2's tokenizer*.json,
# chat_template.jinja and config.json, copied there beforehand; git ignores it), and Python
# packages the machine lacks travel as wheels in .whl/ (installed with --no-deps into a
# private folder put first on PYTHONPATH). Both folders are named in the device tool's carry.
# A dry run on a CPU: GPU_LENT_DEVICE=cpu GPU_LENT_SUITE_ARGS=--tiny GPU_LENT_NO_WHEELS=1.
# GPU_LENT_SKIP_CHECKS=1 runs only step 3 (once the tests and the harness have passed there);
# GPU_LENT_SUITE_ARGS passes options to gpu_suite.py (--models, --compile-models).
#
# GPU_LENT_ISSUE60=1 runs issue 60's table instead, in one call of at most GPU_LENT_BUDGET
# seconds (default 470: under 8 minutes), without the tests and the harness -> OUT/issue60.txt:
#   per model of GPU_LENT_MODELS (default smollm2-random,olmo2-1b,olmo2-7b, in that order)
#   train_throughput.py --memory (ours_tf dense fused AdamW, ours_tf_sparse row-sparse AdamW,
#   ours_tf_deferred deferred AdamW,
#   ours_tf_no_update, ours_mixed, side by side) and scoring.py (every method, sigmoid only);
#   then rerank.py on the first model; then the one line --compile reduce-overhead answers.
#   Sections that would start too late are skipped and named, so the call always ends with
#   every finished figure. Dry run on a CPU: GPU_LENT_ISSUE60=1 GPU_LENT_DEVICE=cpu
#   GPU_LENT_MODELS=tiny GPU_LENT_SUITE_ARGS=--tiny GPU_LENT_NO_WHEELS=1.
set -uo pipefail
out="${1:?usage: gpu_lent.sh OUT [SUITE_DEADLINE_S]}"
deadline="${2:-360}"
mkdir -p "$out"
py="${PYTHON:-python3}"
case "$py" in */*) py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")" ;; esac  # gpu.sh cds
device="${GPU_LENT_DEVICE:-cuda}"
read -r -a suite_args <<<"${GPU_LENT_SUITE_ARGS:-}"
root="$(pwd)"
site="$(mktemp -d)"
if [ -z "${GPU_LENT_NO_WHEELS:-}" ] && compgen -G ".whl/*.whl" >/dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl || exit 3
fi
export PYTHONPATH="$site:$root/src:$root${PYTHONPATH:+:$PYTHONPATH}"
export SIGMOID_HEAD_BENCH_TOKENIZER="${SIGMOID_HEAD_BENCH_TOKENIZER:-$root/.gpu/tokenizer}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
t0=$(date +%s)
stamp() { echo "[t=$(( $(date +%s) - t0 )) s] $*"; }

if [ -n "${GPU_LENT_ISSUE60:-}" ]; then
  models="${GPU_LENT_MODELS:-smollm2-random,olmo2-1b,olmo2-7b}"
  budget="${GPU_LENT_BUDGET:-470}"
  left() { local n=$(( budget - ($(date +%s) - t0) )); echo $(( n > 30 ? n : 30 )); }
  log="$out/issue60.txt"
  stamp "issue 60: train_throughput.py and scoring.py on $models" | tee "$log"
  # leave 150 s for rerank and the refusal: no section starts after left - 240 s
  (cd benchmarks && timeout $(( $(left) - 150 )) "$py" gpu_suite.py --device "$device" \
    --models "$models" --only train_throughput,scoring --compile-models none \
    --deadline $(( $(left) - 240 )) "${suite_args[@]}") >>"$log" 2>&1
  echo "exit status: $?" >>"$log"
  stamp "issue 60: rerank.py on ${models%%,*}" | tee -a "$log"
  (cd benchmarks && timeout $(( $(left) - 15 )) "$py" gpu_suite.py --device "$device" \
    --models "${models%%,*}" --only rerank --compile-models none "${suite_args[@]}") >>"$log" 2>&1
  echo "exit status: $?" >>"$log"
  stamp "issue 60: scoring.py --compile reduce-overhead" | tee -a "$log"
  (cd benchmarks && timeout 10 "$py" scoring.py --compile reduce-overhead --device "$device") \
    >>"$log" 2>&1
  echo "exit status: $? (1: refused, as intended)" >>"$log"
  stamp "done" | tee -a "$log"
  exit 0
fi

if [ -z "${GPU_LENT_SKIP_CHECKS:-}" ]; then
stamp "1. CUDA tests" | tee "$out/tests.txt"
timeout 150 "$py" -m pytest -q -p no:cacheprovider -n 4 tests/test_devices.py \
  tests/test_gpu_bench.py "tests/test_training_loop.py" -k "cuda or test_devices or gpu" \
  >>"$out/tests.txt" 2>&1
echo "pytest exit status: $?" >>"$out/tests.txt"

stamp "2. harness --quick on $device" | tee "$out/harness.txt"
work="$(mktemp -d)"
timeout 60 "$py" - "$work" >>"$out/harness.txt" 2>&1 <<'EOF'
import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, "benchmarks")
import common  # noqa: E402

from sigmoid_head.head.model import SigmoidHeadModel  # noqa: E402

work = Path(sys.argv[1])
tok = AutoTokenizer.from_pretrained(common.tokenizer_dir())
shape = {k: v for k, v in common.SIZES["smollm2-random"].items() if k != "arch"}
torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(**shape, pad_token_id=tok.pad_token_id,
                                     eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id))
model.save_pretrained(work / "base")
tok.save_pretrained(work / "base")
SigmoidHeadModel.from_base(str(work / "base")).save_pretrained(work / "head")
print("random-init SmolLM2-shaped base and untrained head written")
EOF
for set in mlqe-roen-word mqm-ted-zhen; do
  for pair in "tests/data/head_v0_1_0/base tests/data/head_v0_1_0/head tiny" \
              "$work/base $work/head smollm2-random"; do
    read -r base head name <<<"$pair"
    stamp "harness $set $name" >>"$out/harness.txt"
    timeout 120 "$py" -m recipes.human_qe.run --set "$set" --quick --model "$base" \
      --head "$head" --device "$device" --batch-size 4 --out "$work/run-$set-$name" \
      >>"$out/harness.txt" 2>&1
    echo "exit status: $?" >>"$out/harness.txt"
    if [ -f "$work/run-$set-$name/report.md" ]; then
      head -40 "$work/run-$set-$name/report.md" >>"$out/harness.txt"
    fi
  done
done
fi

stamp "3. gpu.sh --deadline $deadline" | tee -a "$out/harness.txt"
PYTHON="$py" timeout $((deadline + 240)) bash benchmarks/gpu.sh --device "$device" \
  --out "$out/gpu_benchmarks.txt" --deadline "$deadline" "${suite_args[@]}" >/dev/null 2>&1
echo "gpu.sh exit status: $?" >>"$out/gpu_benchmarks.txt"
stamp "done"
