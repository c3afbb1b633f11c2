"""Operators and host calls of one scoring pass (every method), at 4, 16 and 64 rows.

The scoring counterpart of ``step_ops.py`` (its counters): ``score_examples`` with every
built-in method and dominant sets, on a tiny random-init Llama (V = 16,384), the
accelerator path forced (``device_profile("cuda")``). On a GPU a pass whose operator count
grows with the rows it holds spends host time per row while the device waits; the H100 run
of 2026-11-28 measured scoring with every method at 0.76x the forward pass (SmolLM2 shape,
64 rows a batch). Printed per batch size: operators dispatched, and the calls that would
read from the device or index with a mask (``Tensor.numpy`` of a host tensor is counted
too; it waits for nothing). The verdict: operators(64 rows) / operators(4 rows) <= 1.1.

    python benchmarks/scoring_ops.py [--rows 4 16 64] [--positions 40]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from types import SimpleNamespace

import step_ops
import torch

from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.lm.profiles import device_profile
from sigmoid_head.scoring.force_decode import score_examples


def examples(n: int, length: int, vocab: int, seed: int = 0) -> list[dict]:
    """``n`` random causal examples of ``length`` tokens, the first 10 unscored."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(5, vocab, (length,), generator=g).tolist()
        out.append({"input_ids": ids, "attention_mask": [1] * length,
                    "labels": [-100] * 10 + ids[10:]})
    return out


def count(model, batch: list[dict]) -> tuple[int, Counter]:
    """(operators, host calls by kind) of one scoring pass over ``batch`` (after a warm-up)."""
    def run():
        score_examples(model, batch, batch_size=len(batch), dominant=DominantConfig(),
                       progress=False)

    with device_profile("cuda"):
        run()
        counter = step_ops.Counting()
        with counter, step_ops.python_syncs(counter):
            run()
    calls: Counter = Counter()
    for (_, what), k in counter.syncs.items():
        calls[what] += k
    return sum(counter.ops.values()), calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[4, 16, 64])
    p.add_argument("--positions", type=int, default=40, help="tokens per example")
    p.add_argument("--vocab", type=int, default=16384)
    args = p.parse_args(argv)
    model = step_ops.tiny_model(args.vocab, "cpu")
    model.backbone.tokenizer = SimpleNamespace(pad_token_id=0, eos_token_id=2)
    ops = {}
    print(f"{'rows':>5s} {'operators':>10s} {'host calls':>11s}  by kind")
    for n in args.rows:
        ops[n], calls = count(model, examples(n, args.positions, args.vocab))
        kinds = ", ".join(f"{w} x{k}" for w, k in calls.most_common())
        print(f"{n:5d} {ops[n]:10d} {sum(calls.values()):11d}  {kinds}")
    lo, hi = min(args.rows), max(args.rows)
    ratio = ops[hi] / ops[lo]
    ok = ratio <= 1.1
    print(f"ops({hi} rows) / ops({lo} rows) = {ratio:.3f} (must be <= 1.1): "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
