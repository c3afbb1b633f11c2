"""Head-guided decoding: its cost per token against plain ``generate``, side by side.

Greedy decoding of KJV verses (chat template) with the embedded SmolLM2-135M, every
output forced to the same length (``min_new_tokens`` = ``max_new_tokens``), so every
variant runs the same number of steps:

- ``plain``: Hugging Face ``generate`` only;
- ``scored``: :func:`sigmoid_head.scoring.generate.generate_outputs` (per-token head,
  softmax, BoostedProb and entropy read during generation), the unguided default;
- ``guided``: the same with ``head_weight`` 1 (the head's log-probabilities over the whole
  vocabulary mixed into every step's scores);
- ``guided+mask``: ``head_weight`` 1 and ``head_mask_below`` 0.5.

Interleaved, repeated; medians and their ratios to ``plain`` (and guided to scored).

    python benchmarks/guided_generation.py [--quick] [--threads 1] [--new-tokens 32]
"""

from __future__ import annotations

import dataclasses

import common
import torch

from sigmoid_head.data.batching import pad_with_mask
from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.model import SigmoidHeadModel
from sigmoid_head.scoring.force_decode import length_batches
from sigmoid_head.scoring.generate import DecodingConfig, generate_outputs


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--new-tokens", type=int, default=32)
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.new_tokens = 1, 1, 4, 8
    common.setup_threads(args)
    import gzip
    import json

    backbone, _ = common.load(1, args)
    model = SigmoidHeadModel.from_base(backbone)
    with gzip.open(common.DATA, "rt") as f:
        records = [json.loads(line) for _, line in zip(range(args.batches * args.batch_size), f,
                                                       strict=False)]
    prompts = prompt_ids([{"source": r["source"]} for r in records], backbone.tokenizer,
                         is_encoder_decoder=False, prompt_template=common.PROMPT,
                         use_chat_template=True)
    n = args.new_tokens
    base = DecodingConfig(max_new_tokens=n, extra={"min_new_tokens": n})
    configs = {"scored": base,
               "guided": dataclasses.replace(base, head_weight=1.0),
               "guided+mask": dataclasses.replace(base, head_weight=1.0, head_mask_below=0.5)}
    groups = sorted(length_batches([{"input_ids": q, "labels": [0]} for q in prompts],
                                   args.batch_size), key=min)
    pid = backbone.tokenizer.pad_token_id

    @torch.no_grad()
    def plain():
        for idx in groups:
            ids, mask = pad_with_mask([prompts[i] for i in idx], pid, "left")
            backbone.model.generate(input_ids=ids.to(args.device), attention_mask=mask.to(args.device),
                                    pad_token_id=pid, **base.generate_kwargs())

    def variant(cfg):
        return lambda: generate_outputs(model, prompts, cfg, batch_size=args.batch_size, progress=False)

    common.header(args, f"prompts={len(prompts)} new tokens per output={n} (forced)")
    runs = {"plain": plain, **{k: variant(c) for k, c in configs.items()}}
    med = {k: common.median(v) for k, v in
           common.interleaved(runs, args.repeats, device=args.device).items()}
    tokens = len(prompts) * n
    print()
    for k, t in med.items():
        extra = f"   {t / med['scored']:.3f}x scored" if k.startswith("guided") else ""
        print(f"{k:<12} {t:8.2f} s  {1000 * t / tokens:7.2f} ms/token   {t / med['plain']:.3f}x plain{extra}")


if __name__ == "__main__":
    main()
