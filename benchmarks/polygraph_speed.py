"""The per-token baselines and the head from our one pass vs LM-Polygraph computing the same.

Greedy generation for KJV verses (chat template) with the embedded SmolLM2-135M, batches
of prompts, all through one polygraph ``WhiteboxModel`` (so both sides tokenize the same
prompts). Variants, interleaved batch by batch (``common.interleaved_items``):

* ``ours``: :class:`sigmoid_head.integrations.polygraph.SigmoidHeadCalculator` (one
  generation; the head, softmax, BoostedProb and entropy per token) and its estimators:
  product, geometric mean and minimum of the sigmoid, softmax and BoostedProb token
  probabilities (9) plus the mean entropy;
* ``polygraph``: polygraph's own ``GreedyProbsCalculator`` (attentions and hidden states
  off, its lightest setting) and ``EntropyCalculator``, then its estimators of the same
  baselines: MaximumSequenceProbability (softmax product), Perplexity (softmax geometric
  mean), MeanTokenEntropy, BoostedProbSequence. polygraph has no Sigmoid Head and no
  min aggregation: ``ours`` computes more;
* ``generate``: plain Hugging Face ``generate`` of the same batch (the floor).

It also reports how many outputs were token-identical between the two and the largest
difference of the softmax sequence log-probability (MSP) on those.

    python benchmarks/polygraph_speed.py [--quick] [--threads 1] [--new-tokens 32]
"""

from __future__ import annotations

import gzip
import json
import time

import common
import numpy as np
import torch


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--new-tokens", type=int, default=32)
    args = p.parse_args()
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.new_tokens = 2, 1, 4, 8
    common.setup_threads(args)

    from lm_polygraph.estimators import (
        BoostedProbSequence,
        MaximumSequenceProbability,
        MeanTokenEntropy,
        Perplexity,
    )
    from lm_polygraph.stat_calculators import EntropyCalculator, GreedyProbsCalculator
    from lm_polygraph.utils.generation_parameters import GenerationParameters
    from lm_polygraph.utils.model import WhiteboxModel

    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.integrations.polygraph import (
        SigmoidHeadCalculator,
        SigmoidHeadMeanEntropy,
        SigmoidHeadSequence,
        aggregations,
    )
    from sigmoid_head.registry.methods import names

    backbone, _ = common.load(1)
    shm = SigmoidHeadModel.from_base(backbone)
    backbone.tokenizer.padding_side = "left"  # as polygraph's WhiteboxModel.from_pretrained sets it
    wb = WhiteboxModel(backbone.model, backbone.tokenizer, model_path="smollm2",
                       generation_parameters=GenerationParameters(), instruct=True)
    n = args.batches * args.batch_size
    with gzip.open(common.DATA, "rt") as f:
        records = [json.loads(line) for _, line in zip(range(n), f, strict=False)]
    texts = [common.PROMPT.format(source=r["source"]) for r in records]
    batches = [texts[i:i + args.batch_size] for i in range(0, n, args.batch_size)]

    ours_calc = SigmoidHeadCalculator(shm)
    ours_est = [SigmoidHeadSequence(m, a) for m in names() if m != "rauq" for a in aggregations()]
    ours_est.append(SigmoidHeadMeanEntropy())
    poly_calcs = [GreedyProbsCalculator(output_attentions=False, output_hidden_states=False),
                  EntropyCalculator()]
    poly_est = [MaximumSequenceProbability(), Perplexity(), MeanTokenEntropy(),
                BoostedProbSequence()]
    last: dict[str, dict[int, dict]] = {"ours": {}, "polygraph": {}}

    # time spent inside Hugging Face generate, per variant: the rest is what each side adds
    in_generate: dict[str, list[float]] = {"ours": [], "polygraph": [], "generate": []}
    current = ["generate"]
    hf_generate = backbone.model.generate

    def timed_generate(*a, **k):
        t0 = time.perf_counter()
        try:
            return hf_generate(*a, **k)
        finally:
            in_generate[current[0]].append(time.perf_counter() - t0)

    backbone.model.generate = timed_generate

    def ours(i: int) -> None:
        current[0] = "ours"
        stats = ours_calc({}, batches[i], wb, args.new_tokens)
        stats["estimates"] = {str(e): e(stats) for e in ours_est}
        last["ours"][i] = stats

    def polygraph(i: int) -> None:
        current[0] = "polygraph"
        stats: dict = {}
        for calc in poly_calcs:  # what polygraph's UEManager does per batch
            stats.update(calc(stats, batches[i], wb, args.new_tokens))
        stats["estimates"] = {str(e): e(stats) for e in poly_est}
        last["polygraph"][i] = stats

    def generate(i: int) -> None:
        current[0] = "generate"
        enc = wb.tokenize(batches[i])
        with torch.no_grad():
            backbone.model.generate(**enc, max_new_tokens=args.new_tokens, do_sample=False,
                                    pad_token_id=backbone.tokenizer.pad_token_id)

    common.header(args, f"prompts={n} batch_size={args.batch_size} new_tokens={args.new_tokens}")
    times = common.interleaved_items({"ours": ours, "polygraph": polygraph, "generate": generate},
                                     len(batches), args.repeats)
    med = {k: common.median(v) for k, v in times.items()}
    # one generate call per batch and variant; the first is the untimed warm-up
    assert all(len(v) == 1 + args.repeats * len(batches) for v in in_generate.values())
    outside = {k: sum(times[k]) - sum(in_generate[k][1:]) for k in times}
    print("| variant | estimators | seconds per pass (median) | vs ours | seconds outside HF generate "
          "(all timed passes) |")
    print("|---|---:|---:|---:|---:|")
    counts = {"ours": len(ours_est), "polygraph": len(poly_est), "generate": 0}
    for k in ("ours", "polygraph", "generate"):
        print(f"| {k} | {counts[k]} | {med[k]:.2f} | {med[k] / med['ours']:.2f}x | {outside[k]:.2f} |")
    print(f"polygraph / ours = {med['polygraph'] / med['ours']:.2f}x; "
          f"ours / plain generate = {med['ours'] / med['generate']:.3f}x")

    same, diffs = 0, []
    for i in range(len(batches)):
        a, b = last["ours"][i], last["polygraph"][i]
        for j, (ta, tb) in enumerate(zip(a["greedy_tokens"], b["greedy_tokens"], strict=True)):
            if list(ta) == list(tb):
                same += 1
                diffs.append(abs(a["estimates"]["SigmoidHeadSequence_softmax_product"][j]
                                 - b["estimates"]["MaximumSequenceProbability"][j]))
    print(f"identical outputs: {same}/{n}; max |MSP difference| on them: "
          f"{max(diffs) if diffs else float('nan'):.2e} (polygraph suppresses EOS for the first "
          "2 tokens and renormalises)")
    print(json.dumps({"median_s": med, "outside_generate_s": outside, "identical_outputs": same, "n": n,
                      "max_msp_diff": float(np.max(diffs)) if diffs else None}))


if __name__ == "__main__":
    main()
