"""Dominant tokens and BoostedProb: ours vs the published boostedprob package.

1,024 real positions x 49,152 vocabulary (SmolLM2-135M log-softmax over KJV verses),
side by side in one run:

* ``ours find_dominant``: block screening + a small top-k (this library);
* ``topk-201``: exp of the whole matrix then ``topk(201)`` (our previous method);
* ``boostedprob.find_dominant``: the reference package, given a clone (it mutates);
* ``ours boosted_prob`` / ``boostedprob.calculate_boostedprob`` (per-position loop).

    python benchmarks/dominant_speed.py [--quick] [--threads 1] [--positions 1024]
"""

from __future__ import annotations

import common
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.lm.dominant import DominantConfig, boosted_prob, find_dominant


def real_log_probs(n_positions: int) -> torch.Tensor:
    """(n_positions, V) log-softmax of the real model at the first verses' positions."""
    backbone, examples = common.load(64)
    collate = Collator(backbone.tokenizer.pad_token_id, False)
    rows, have, i = [], 0, 0
    while have < n_positions:
        batch = collate(examples[i : i + 8])
        hidden, _ = backbone.final_hidden(batch)  # (B, T, d)
        h = hidden[batch["attention_mask"].bool()]  # (n, d) non-padding positions
        rows.append(h)
        have, i = have + h.shape[0], i + 8
    with torch.no_grad():
        return torch.log_softmax(backbone.lm_logits(torch.cat(rows)[:n_positions]), -1)


def topk201(lp: torch.Tensor) -> torch.Tensor:
    p, _ = torch.topk(lp.exp(), DominantConfig().topk(lp.shape[-1]), -1)
    diff = p[:, :-1] - p[:, 1:]
    drop = (diff > 0.3 * p[:, :-1]) & (diff > 0.005)
    return torch.where(drop, torch.arange(drop.shape[1]), -1).amax(-1) + 1


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--positions", type=int, default=1024)
    args = p.parse_args()
    if args.quick:
        args.positions, args.repeats = 128, 1
    common.setup_threads(args)
    import boostedprob

    lp = real_log_probs(args.positions)
    targets = lp.argmax(-1)  # the argmax: the case where BoostedProb boosts
    ours = find_dominant(lp)
    ref = boostedprob.find_dominant(lp.clone())
    same = all({int(i) for i in ours.top_ids[n, : ours.n_dominant[n]]}
               == {int(i) for i in ref[n] if i != -1} for n in range(lp.shape[0]))
    common.header(args, f"positions={lp.shape[0]} vocab={lp.shape[1]} sets_equal_reference={same} "
                  f"mean_dominant={ours.n_dominant.float().mean():.2f}")
    variants = {
        "ours find_dominant": lambda: find_dominant(lp),
        "topk-201 (previous)": lambda: topk201(lp),
        "boostedprob.find_dominant": lambda: boostedprob.find_dominant(lp.clone()),
        "ours boosted_prob": lambda: boosted_prob(lp, targets),
        "boostedprob.calculate_boostedprob": lambda: boostedprob.calculate_boostedprob(
            lp.clone()[None], targets[None]),
    }
    med = {k: common.median(v) for k, v in common.interleaved(variants, args.repeats).items()}
    print()
    for name, t in med.items():
        print(f"{name:36s} {t * 1000:9.1f} ms")
    print(f"\nfind_dominant: ours is {med['boostedprob.find_dominant'] / med['ours find_dominant']:.1f}x"
          f" faster than boostedprob, {med['topk-201 (previous)'] / med['ours find_dominant']:.1f}x "
          "than topk-201")
    print(f"BoostedProb: ours is {med['boostedprob.calculate_boostedprob'] / med['ours boosted_prob']:.1f}x"
          " faster than boostedprob.calculate_boostedprob")


if __name__ == "__main__":
    main()
