"""RAUQ's cost over the plain scoring pass, side by side in one run.

RAUQ needs attention weights, which only eager attention returns, so two costs are told
apart. Force-decoding (Eval Other: KJV -> WEB chat examples, batches of 16), variants
interleaved batch by batch (``common.interleaved_items``):

* ``sdpa``: ``score_examples`` as it runs by default (the model's own attention, SDPA);
* ``eager``: the same with the model switched to eager attention, no RAUQ;
* ``eager+rauq``: ``score_examples(rauq=RauqConfig())``: eager attention for the pass,
  the attention diagonals of the selected layers kept, and the recurrence.

``eager+rauq`` against ``eager`` is RAUQ's own computation; ``eager`` against ``sdpa`` is
the price of the attention implementation it needs. On a shared machine that difference
of two whole passes is noisier than RAUQ's own work, so that work is also timed where it
runs, inside the ``eager+rauq`` passes: the attention hooks (``AttentionDiagonals``), the
recurrence (``rauq_log_confidence``, which both paths reach through ``rauq_values``) and
the switches of attention implementation, as a share of those passes' wall time (a host clock: on CUDA, where
kernels run asynchronously, read the side-by-side ratios instead). With ``--generate``
the same three variants run greedy generation (Eval Self: ``generate_outputs``, RAUQ
read from the generation steps).

    python benchmarks/rauq_overhead.py [--quick] [--threads 1] [--generate --new-tokens 32]
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import common

from sigmoid_head.scoring import rauq
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.force_decode import length_batches, score_examples
from sigmoid_head.scoring.generate import generate_outputs
from sigmoid_head.scoring.rauq import RauqConfig

SPENT = {"hooks": 0.0, "recurrence": 0.0, "switch": 0.0}
"""Seconds spent in RAUQ's own code, accumulated by :func:`instrument`."""


def _timed(key: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[key] += time.perf_counter() - t0
    return wrapper


def instrument() -> None:
    """Time RAUQ's own pieces where the scoring paths call them (once per process)."""
    if getattr(rauq, "_benchmark_timed", False):
        return
    rauq._benchmark_timed = True
    hook = rauq.AttentionDiagonals.hook
    rauq.AttentionDiagonals.hook = lambda self, k: _timed("hooks", hook(self, k))
    # both scoring paths reach the recurrence through rauq.rauq_values -> rauq_log_confidence
    rauq.rauq_log_confidence = _timed("recurrence", rauq.rauq_log_confidence)
    rauq._set_attention = _timed("switch", rauq._set_attention)


def measure(backbone, run: Callable, n_items: int, repeats: int, device: str
            ) -> tuple[dict[str, float], dict[str, float]]:
    """Median pass time of ``sdpa``, ``eager`` and ``eager+rauq`` of ``run(i, rauq)``, and the
    share of the ``eager+rauq`` calls' wall time spent in each piece of RAUQ's own code."""
    model, own = backbone.model, backbone.model.config._attn_implementation
    inside = dict.fromkeys(SPENT, 0.0) | {"wall": 0.0}

    def eager(i):
        model.set_attn_implementation("eager")
        try:
            run(i, None)
        finally:
            model.set_attn_implementation(own)

    def with_rauq(i):
        before, t0 = dict(SPENT), time.perf_counter()
        run(i, RauqConfig())
        common.sync(device)
        inside["wall"] += time.perf_counter() - t0
        for k in SPENT:
            inside[k] += SPENT[k] - before[k]

    fns = {"sdpa": lambda i: run(i, None), "eager": eager, "eager+rauq": with_rauq}
    times = common.interleaved_items(fns, n_items, repeats, device=device)
    wall = inside.pop("wall")
    return {k: common.median(v) for k, v in times.items()}, {k: v / wall for k, v in inside.items()}


def report(title: str, med: dict[str, float], shares: dict[str, float], unit: str,
           per: float) -> None:
    print(f"\n{title}\n{'variant':12s} {unit:>10s} {'vs sdpa':>9s} {'vs eager':>9s}")
    for name, t in med.items():
        print(f"{name:12s} {per / t:10.2f} {t / med['sdpa']:8.3f}x {t / med['eager']:8.3f}x")
    print(f"side by side: eager vs sdpa {100 * (med['eager'] / med['sdpa'] - 1):+.2f}% (the "
          f"attention implementation); eager+rauq vs eager "
          f"{100 * (med['eager+rauq'] / med['eager'] - 1):+.2f}%; eager+rauq vs sdpa "
          f"{100 * (med['eager+rauq'] / med['sdpa'] - 1):+.2f}%")
    parts = ", ".join(f"{k} {100 * v:.3f}%" for k, v in shares.items())
    print(f"RAUQ's own code inside the eager+rauq passes: {parts}; "
          f"total {100 * sum(shares.values()):.3f}% of their wall time")


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--generate", action="store_true", help="also time greedy generation")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens generated per prompt")
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.new_tokens = 2, 1, 8, 8
    common.setup_threads(args)
    backbone, examples = common.load(None, args)
    examples = examples[: args.batches * args.batch_size]
    groups = length_batches(examples, args.batch_size)
    batches = [[examples[j] for j in g] for g in groups]
    tokens = sum(len(e["input_ids"]) for e in examples)
    scored = sum(sum(t != -100 for t in e["labels"]) for e in examples)
    common.header(args, f"examples={len(examples)} tokens={tokens} scored={scored}")
    instrument()

    def score(i, cfg):
        score_examples(backbone, batches[i], batch_size=args.batch_size, rauq=cfg, progress=False)

    report("force-decoding (score_examples)",
           *measure(backbone, score, len(batches), args.repeats, args.device), "tokens/s", tokens)
    if args.generate:
        prompts = [[t for t, y in zip(e["input_ids"], e["labels"], strict=True) if y == -100]
                   for e in examples]
        cfg, size = DecodingConfig(max_new_tokens=args.new_tokens), args.batch_size

        def gen(i, rauq_cfg):
            generate_outputs(backbone, prompts[i * size:(i + 1) * size], cfg, batch_size=size,
                             rauq=rauq_cfg, progress=False)

        report(f"greedy generation (generate_outputs, at most {args.new_tokens} new tokens)",
               *measure(backbone, gen, len(batches), args.repeats, args.device), "prompts/s",
               len(prompts))


if __name__ == "__main__":
    main()
