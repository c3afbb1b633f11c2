"""Scoring's softmax statistics: one exponential per logit versus the plain way, side by side.

The per-position statistics of every scoring pass (the scored token's log-probability,
BoostedProb with its dominant set, the entropy) from (N, V) logits, computed in the
slices the scoring path uses (16 rows on CPU):

* ``plain``: ``log_softmax``, the dominant sets screened on it, ``exp`` of it again for
  the entropy (scoring before issue 60);
* ``one_exp``: :func:`sigmoid_head.scoring.softmax_stats.softmax_stats` (``softmax`` once,
  the dominant sets screened on the probabilities, the normaliser from the top one).

Random logits at SmolLM2's vocabulary, interleaved repeats, the median of each variant,
in wall time and in the CPU time of this thread (``time.thread_time``: on a shared machine
it does not count the time other processes hold the core).

    python benchmarks/softmax_stats.py [--quick] [--threads 1] [--positions 1024 --vocab 49152]
"""

from __future__ import annotations

import argparse
import time

import torch

from sigmoid_head.lm.dominant import DominantConfig, boosted_prob, find_dominant
from sigmoid_head.lm.profiles import slice_rows
from sigmoid_head.scoring.softmax_stats import softmax_stats
from sigmoid_head.scoring.token_scores import entropy


def plain(z: torch.Tensor, t: torch.Tensor, config: DominantConfig) -> tuple[torch.Tensor, ...]:
    logp = torch.log_softmax(z, -1)  # (R, V)
    dom = find_dominant(logp, config)
    return (logp.gather(-1, t[:, None]).squeeze(-1), boosted_prob(logp, t, dominant=dom),
            entropy(logp), dom.n_dominant)


def one_exp(z: torch.Tensor, t: torch.Tensor, config: DominantConfig) -> tuple[torch.Tensor, ...]:
    s = softmax_stats(z, t, config)
    return s.target_logp, s.boosted_prob(t), s.entropy, s.dominant.n_dominant


def run(fn, z: torch.Tensor, t: torch.Tensor, rows: int) -> tuple[float, float]:
    """(wall seconds, this thread's CPU seconds) for every slice of ``z``."""
    config = DominantConfig()
    t0, c0 = time.perf_counter(), time.thread_time()
    for r in range(0, z.shape[0], rows):
        fn(z[r : r + rows], t[r : r + rows], config)
    return time.perf_counter() - t0, time.thread_time() - c0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--positions", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=49152)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--threads", type=int, default=0, help="0 = torch's default")
    p.add_argument("--quick", action="store_true", help="128 positions, 3 repeats (a smoke run)")
    args = p.parse_args(argv)
    if args.quick:
        args.positions, args.repeats = 128, 3
    if args.threads:
        torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    z = torch.randn(args.positions, args.vocab, generator=g) * 4  # (N, V)
    t = torch.randint(0, args.vocab, (args.positions,), generator=g)
    rows = slice_rows(args.vocab, z.device)
    variants = {"plain": plain, "one_exp": one_exp}
    for fn in variants.values():  # warm-up
        run(fn, z[: rows * 2], t[: rows * 2], rows)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name, fn in variants.items():
            times[name].append(run(fn, z, t, rows))
    wall = {k: sorted(w for w, _ in v)[len(v) // 2] for k, v in times.items()}
    cpu = {k: sorted(c for _, c in v)[len(v) // 2] for k, v in times.items()}
    print(f"N={args.positions} V={args.vocab} slice={rows} rows threads={torch.get_num_threads()} "
          f"repeats={args.repeats}")
    for name in variants:
        print(f"{name:8s} median wall {wall[name] * 1000:8.1f} ms ({wall['plain'] / wall[name]:5.2f}x plain)"
              f"   thread CPU {cpu[name] * 1000:8.1f} ms ({cpu['plain'] / cpu[name]:5.2f}x plain)")


if __name__ == "__main__":
    main()
