"""RAUQ's cost over the plain scoring pass, side by side in one run.

RAUQ needs attention weights, which only eager attention returns, so two costs are told
apart. Force-decoding (Eval Other: KJV -> WEB chat examples, batches of 16), variants
interleaved batch by batch (``common.interleaved_items``):

* ``sdpa``: ``score_examples`` as it runs by default (the model's own attention, SDPA);
* ``eager``: the same with the model switched to eager attention, no RAUQ;
* ``eager+rauq``: ``score_examples(rauq=RauqConfig())``: eager attention for the pass,
  the attention diagonals of the selected layers kept, and the recurrence.

``eager+rauq`` against ``eager`` is RAUQ's own computation (hooks and recurrence);
``eager`` against ``sdpa`` is the price of the attention implementation it needs. The
recurrence alone is also timed on the batches' recorded diagonals. With ``--generate``
the same three variants run greedy generation (Eval Self: ``generate_outputs``, RAUQ
read from the generation steps).

    python benchmarks/rauq_overhead.py [--quick] [--threads 1] [--generate --new-tokens 32]
"""

from __future__ import annotations

import time

import common
import torch

from sigmoid_head.scoring.force_decode import length_batches, score_examples
from sigmoid_head.scoring.generate import DecodingConfig, generate_outputs
from sigmoid_head.scoring.rauq import RauqConfig, capture_self_attention, rauq_positions


def variants(backbone, run) -> dict:
    """``sdpa``, ``eager`` and ``eager+rauq`` of ``run(i, rauq)``."""
    model, own = backbone.model, backbone.model.config._attn_implementation

    def eager(i):
        model.set_attn_implementation("eager")
        try:
            run(i, None)
        finally:
            model.set_attn_implementation(own)

    return {"sdpa": lambda i: run(i, None), "eager": eager,
            "eager+rauq": lambda i: run(i, RauqConfig())}


def recurrence_seconds(backbone, batches: list[list[dict]], repeats: int) -> float:
    """Median seconds per pass over all batches of the recurrence alone (on recorded weights)."""
    from sigmoid_head.data.batching import Collator

    collate, inputs = Collator(backbone.tokenizer.pad_token_id, False), []
    with capture_self_attention(backbone.model, RauqConfig()) as attn, torch.no_grad():
        for examples in batches:
            attn.clear()
            batch = {k: v.to(backbone.device) for k, v in collate(examples).items()}
            pos = backbone.positions(batch, with_logits=True)
            log_p = torch.log_softmax(pos.logits, -1).gather(1, pos.targets[:, None])[:, 0]
            inputs.append((log_p, attn.at(pos.row, pos.col - 1), pos.row, len(examples)))
    times = []
    for _ in range(repeats):
        common.sync(str(backbone.device))
        t0 = time.perf_counter()
        for log_p, a, row, n in inputs:
            rauq_positions(log_p, a, row, n, 0.2)
        common.sync(str(backbone.device))
        times.append(time.perf_counter() - t0)
    return common.median(times)


def report(med: dict[str, float], unit: str, per: float) -> None:
    print(f"\n{'variant':12s} {unit:>10s} {'vs sdpa':>9s} {'vs eager':>9s}")
    for name, t in med.items():
        print(f"{name:12s} {per / t:10.1f} {t / med['sdpa']:8.3f}x {t / med['eager']:8.3f}x")
    own = med["eager+rauq"] / med["eager"] - 1
    print(f"RAUQ's own cost (eager+rauq vs eager): {100 * own:+.2f}%; eager attention "
          f"(eager vs sdpa): {100 * (med['eager'] / med['sdpa'] - 1):+.2f}%; "
          f"RAUQ in all (eager+rauq vs sdpa): {100 * (med['eager+rauq'] / med['sdpa'] - 1):+.2f}%")


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--generate", action="store_true", help="also time greedy generation")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens generated per prompt")
    args = p.parse_args()
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

    def score(i, rauq):
        score_examples(backbone, batches[i], batch_size=args.batch_size, rauq=rauq, progress=False)

    med = {k: common.median(v) for k, v in common.interleaved_items(
        variants(backbone, score), len(batches), args.repeats, device=args.device).items()}
    print("\nforce-decoding (score_examples)")
    report(med, "tokens/s", tokens)
    alone = recurrence_seconds(backbone, batches, max(args.repeats, 3))
    print(f"the recurrence alone: {1e3 * alone / len(batches):.2f} ms per batch, "
          f"{100 * alone / med['eager']:.2f}% of the eager pass")

    if args.generate:
        prompts = [[t for t, y in zip(e["input_ids"], e["labels"], strict=True) if y == -100]
                   for e in examples]
        cfg = DecodingConfig(max_new_tokens=args.new_tokens)
        size = args.batch_size

        def generate(i, rauq):
            generate_outputs(backbone, prompts[i * size:(i + 1) * size], cfg, batch_size=size,
                             rauq=rauq, progress=False)

        med = {k: common.median(v) for k, v in common.interleaved_items(
            variants(backbone, generate), len(batches), args.repeats, device=args.device).items()}
        print(f"\ngreedy generation (generate_outputs, {args.new_tokens} new tokens at most)")
        report(med, "prompts/s", len(prompts))


if __name__ == "__main__":
    main()
