"""Head update cost: dense AdamW versus lazy SparseAdam, side by side in one run.

One training step of the head alone (gathered BCE over 1 + k rows, backward, optimizer
step) at SmolLM2-135M's size, from random hidden states, so only the head's cost shows.

    python benchmarks/optimizer_step.py [--vocab 49152 --hidden 576 --positions 1024 --steps 20]
"""

from __future__ import annotations

import argparse
import time

import torch

from sigmoid_head.head import SigmoidHead, sigmoid_bce


def run(optimizer: str, args: argparse.Namespace) -> float:
    gen = torch.Generator().manual_seed(0)
    head = SigmoidHead.from_lm_head(torch.randn(args.vocab, args.hidden, generator=gen) * 0.02)
    head.sparse = optimizer == "sparse_adam"
    opt = (torch.optim.SparseAdam(head.parameters(), lr=1e-3) if head.sparse
           else torch.optim.AdamW(head.parameters(), lr=1e-3, weight_decay=0.0))
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
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=int, default=49152)
    parser.add_argument("--hidden", type=int, default=576)
    parser.add_argument("--positions", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    dense, sparse = run("adamw", args), run("sparse_adam", args)
    print(f"V={args.vocab} d={args.hidden} positions={args.positions} k=10 "
          f"threads={torch.get_num_threads()}")
    print(f"adamw (dense)      median step {dense * 1000:8.1f} ms")
    print(f"sparse_adam (lazy) median step {sparse * 1000:8.1f} ms")
    print(f"ratio dense/sparse {dense / sparse:.2f}x")


if __name__ == "__main__":
    main()
