"""Eval Self: generation with per-token head scores vs plain ``generate``, same outputs.

Greedy decoding of KJV verses (chat template) with the embedded SmolLM2-135M, batches
of prompts padded on the left; ``plain`` calls Hugging Face ``generate`` only,
``scored`` is :func:`sigmoid_head.scoring.generate.generate_outputs` (hidden states captured
at the LM head, sigmoid/softmax/BoostedProb/entropy per token). Interleaved, repeated.

    python benchmarks/generation.py [--quick] [--threads 1] [--new-tokens 32]
        [--model olmo2-1b --device cuda]
"""

from __future__ import annotations

import common
import torch

from sigmoid_head.data.batching import pad_with_mask
from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.force_decode import length_batches
from sigmoid_head.scoring.generate import generate_outputs


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
        records = [json.loads(line) for _, line in zip(range(args.batches * args.batch_size), f, strict=False)]
    prompts = prompt_ids([{"source": r["source"]} for r in records], backbone.tokenizer,
                         is_encoder_decoder=False, prompt_template=common.PROMPT,
                         use_chat_template=True)
    cfg = DecodingConfig(max_new_tokens=args.new_tokens)
    fake = [{"input_ids": q, "labels": [0]} for q in prompts]
    groups = sorted(length_batches(fake, args.batch_size), key=min)
    pid = backbone.tokenizer.pad_token_id
    outputs: dict[str, list] = {}

    @torch.no_grad()
    def plain():
        seqs = []
        for idx in groups:
            ids, mask = pad_with_mask([prompts[i] for i in idx], pid, "left")
            ids, mask = ids.to(args.device), mask.to(args.device)
            out = backbone.model.generate(input_ids=ids, attention_mask=mask, pad_token_id=pid,
                                          **cfg.generate_kwargs())
            seqs += [row[ids.shape[1]:].tolist() for row in out]
        outputs["plain"] = seqs

    def scored():
        outputs["scored"] = generate_outputs(model, prompts, cfg, batch_size=args.batch_size,
                                             progress=False)

    common.header(args, f"prompts={len(prompts)} max_new_tokens={args.new_tokens}")
    med = {k: common.median(v) for k, v in
           common.interleaved({"plain": plain, "scored": scored}, args.repeats,
                              device=args.device).items()}
    ordered = [i for idx in groups for i in idx]
    by_input = {g.input_index: g.output for g in outputs["scored"]}
    same = all(by_input[i] == outputs["plain"][j][: len(by_input[i])] for j, i in enumerate(ordered))
    n_tok = sum(len(g.output) for g in outputs["scored"])
    print(f"\nplain generate  {med['plain']:8.2f} s")
    print(f"with scores     {med['scored']:8.2f} s   ratio {med['scored'] / med['plain']:.3f}x "
          f"({n_tok} scored tokens, same outputs: {same})")


if __name__ == "__main__":
    main()
