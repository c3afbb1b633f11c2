"""Head update cost: AdamW (default, fused), lazy SparseAdam, row-sparse and deferred AdamW, side by side.

One training step of the head alone (gathered BCE over 1 + k rows, backward, optimizer
step) at SmolLM2-135M's size, from random hidden states, so only the head's cost shows.
``deferred_adamw`` includes its read hook (the skipped steps of the rows a step reads are
applied before it reads them); its flush of every row before a validation (once per
``--eval-every`` steps in training) is timed on its own.

    python benchmarks/optimizer_step.py [--quick] [--threads 1] [--vocab 49152 --hidden 576 --positions 1024 --steps 20]
"""

from __future__ import annotations

import argparse
import time

import torch

from sigmoid_head.head.layer import SigmoidHead, sigmoid_bce
from sigmoid_head.training.deferred_adamw import DeferredAdamW
from sigmoid_head.training.optim import RowSparseAdamW


def run(optimizer: str, args: argparse.Namespace) -> tuple[float, float]:
    """(median step seconds, seconds of one flush of every row: deferred_adamw only, else 0)."""
    gen = torch.Generator().manual_seed(0)
    head = SigmoidHead.from_lm_head(torch.randn(args.vocab, args.hidden, generator=gen) * 0.02)
    head.sparse = optimizer in ("sparse_adam", "sparse_adamw", "deferred_adamw")
    if optimizer == "sparse_adam":
        opt = torch.optim.SparseAdam(head.parameters(), lr=1e-3)
    elif optimizer == "sparse_adamw":
        opt = RowSparseAdamW(head.parameters(), lr=1e-3, weight_decay=0.0)
    elif optimizer == "deferred_adamw":
        opt = DeferredAdamW(head.parameters(), lr=1e-3, weight_decay=0.0)
        head.before_read = opt.read_hook(head.row_parameters())
    else:
        opt = torch.optim.AdamW(head.parameters(), lr=1e-3, weight_decay=0.0,
                                fused=optimizer == "adamw_fused" or None)
    hidden = torch.randn(args.positions, args.hidden, generator=gen)
    times = []
    for step in range(args.steps + 2):
        targets = torch.randint(0, args.vocab, (args.positions,), generator=gen)
        negatives = torch.randint(0, args.vocab, (args.positions, 10), generator=gen)
        t0 = time.perf_counter()
        sigmoid_bce(head, hidden, targets, negatives).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= 2:  # skip warm-up steps (lazy state allocation)
            times.append(time.perf_counter() - t0)
    flush = 0.0
    if optimizer == "deferred_adamw":
        t0 = time.perf_counter()
        opt.flush()
        flush = time.perf_counter() - t0
    return sorted(times)[len(times) // 2], flush


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=int, default=49152)
    parser.add_argument("--hidden", type=int, default=576)
    parser.add_argument("--positions", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="0 = torch's default")
    parser.add_argument("--quick", action="store_true", help="4 steps (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.steps = 4
    if args.threads:
        torch.set_num_threads(args.threads)
    names = ("adamw", "adamw_fused", "sparse_adam", "sparse_adamw", "deferred_adamw")
    times = {n: [] for n in names}
    flushes = []
    for _ in range(3):  # alternate the variants, keep the median of the medians
        for n in names:
            step, flush = run(n, args)
            times[n].append(step)
            if n == "deferred_adamw":
                flushes.append(flush)
    med = {n: sorted(t)[1] for n, t in times.items()}
    print(f"V={args.vocab} d={args.hidden} positions={args.positions} k=10 "
          f"threads={torch.get_num_threads()}")
    for n in names:
        print(f"{n:14s} median step {med[n] * 1000:8.1f} ms   {med['adamw'] / med[n]:5.2f}x faster "
              "than default adamw")
    print(f"deferred_adamw flush of every row (before a validation): {sorted(flushes)[1] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
