"""Eval Other scoring throughput against the frozen forward pass, side by side.

Variants over the same real examples (KJV -> WEB candidates, batches of 16):

* ``body``: the frozen body alone (no LM head);
* ``fwd_scored``: body + LM head at the scored positions (the floor of full scoring);
* ``full_scores``: ``score_examples``: sigmoid, softmax, BoostedProb, entropy, dominant sets;
* ``sigmoid_only``: ``score_examples(sigmoid_only=True)``: body + one gathered head row per token.

    python benchmarks/scoring.py [--quick] [--threads 1] [--model olmo2-1b --device cuda]
"""

from __future__ import annotations

import common
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.force_decode import length_batches, score_examples


def main(argv: list[str] | None = None) -> None:
    args = common.parser(__doc__).parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size = 2, 1, 8
    common.setup_threads(args)
    backbone, examples = common.load(None, args)
    model = SigmoidHeadModel.from_base(backbone)
    examples = examples[: args.batches * args.batch_size]
    collate = Collator(backbone.tokenizer.pad_token_id, False)
    groups = length_batches(examples, args.batch_size)
    batches = [collate([examples[i] for i in idx]) for idx in groups]
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    for b in batches:
        b["trained_index"] = backbone.trained_index(b["labels"])
    batches = [common.to_device(b, args.device) for b in batches]

    @torch.no_grad()
    def body(i):
        backbone.final_hidden(batches[i])

    @torch.no_grad()
    def fwd_scored(i):
        backbone.positions(batches[i], with_logits=True)

    def full_scores(i):
        score_examples(model, [examples[j] for j in groups[i]], batch_size=args.batch_size,
                       progress=False)

    def sigmoid_only(i):
        score_examples(model, [examples[j] for j in groups[i]], batch_size=args.batch_size,
                       sigmoid_only=True, progress=False)

    variants = {"body": body, "fwd_scored": fwd_scored, "full_scores": full_scores,
                "sigmoid_only": sigmoid_only}
    common.header(args, f"examples={len(examples)} tokens={tokens}")
    med = {k: common.median(v) for k, v in common.interleaved_items(
        variants, len(batches), args.repeats, device=args.device).items()}
    print(f"\n{'variant':14s} {'tokens/s':>9s} {'vs fwd_scored':>14s} {'vs body':>9s}")
    for name in variants:
        print(f"{name:14s} {tokens / med[name]:9.1f} {med['fwd_scored'] / med[name]:13.3f}x "
              f"{med['body'] / med[name]:8.3f}x")


if __name__ == "__main__":
    main()
