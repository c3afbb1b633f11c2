"""Count-based AP and ROC-AUC over many resamples: a few rows at a time against one block.

On a committed Bible word table (``recipes/bible/data``; by default ``mt_self_words_test``:
64,936 words of 323 verses, about 43,000 distinct scores per method), the resamples' (B, N)
multiplicities of the bootstrap are drawn once; then ``span_metrics._ap_weighted`` and
``auc_counts._roc_auc_weighted`` are timed with ``metric_inputs.ROW_BLOCK_CELLS`` as shipped
and with a block holding every row of a chunk (as before ``row_blocks``), interleaved, and
the two results are checked equal to the last bit.

    python benchmarks/row_blocks.py [--table mt_self_words_test] [--resamples 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # the recipes are a package

from recipes.bible import tables  # noqa: E402
from sigmoid_head.evaluation import auc_counts, metric_inputs, span_metrics  # noqa: E402
from sigmoid_head.evaluation.resampling import Clusters, _weights  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--table", default="mt_self_words_test")
    p.add_argument("--resamples", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    d = tables.load(tables.DATA / f"{args.table}.json.gz")
    bad, clusters = np.asarray(d["gold"], dtype=float), Clusters(np.asarray(d["groups"]))
    method = next(iter(d["scores"]))
    score = -np.asarray(d["scores"][method], dtype=float)
    chunks = list(_weights(args.resamples, 0, clusters))
    print(f"{args.table}: {bad.size} words, {clusters.n_groups} sources, {len(np.unique(score))} "
          f"distinct scores of {method}; {args.resamples} resamples in chunks of "
          f"{chunks[0].shape[0]} rows; {args.repeats} repeats, interleaved", flush=True)
    shipped = metric_inputs.ROW_BLOCK_CELLS
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for name, fn in (("AP", span_metrics._ap_weighted), ("ROC-AUC", auc_counts._roc_auc_weighted)):
            out = {}
            for blocks, cells in (("row blocks", shipped), ("one block", 2**62)):
                metric_inputs.ROW_BLOCK_CELLS = cells
                t0 = time.perf_counter()
                out[blocks] = np.concatenate([fn(score, bad, w) for w in chunks])
                times.setdefault((name, blocks), []).append(time.perf_counter() - t0)
            metric_inputs.ROW_BLOCK_CELLS = shipped
            assert np.array_equal(out["row blocks"], out["one block"], equal_nan=True), name
    print("identical values both ways\n")
    print(f"{'metric':8s} {'one block s':>12s} {'row blocks s':>13s} {'speed-up':>9s}")
    for name in ("AP", "ROC-AUC"):
        one = statistics.median(times[(name, "one block")])
        rows = statistics.median(times[(name, "row blocks")])
        print(f"{name:8s} {one:12.3f} {rows:13.3f} {one / rows:8.1f}x")


if __name__ == "__main__":
    main()
