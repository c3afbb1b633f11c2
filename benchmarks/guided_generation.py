"""Head-guided decoding: its cost per token against plain ``generate``, side by side.

Greedy decoding with every output forced to the same length (``min_new_tokens`` =
``max_new_tokens``), so every variant runs the same number of steps. By default KJV verses
(chat template) with the embedded SmolLM2-135M; with ``--mt-model DIR`` Spanish verses of
the Bible sample's MT test split with that encoder-decoder (e.g. the ``model/`` folder that
``recipes/bible/train_mt.py`` writes):

- ``plain``: Hugging Face ``generate`` only;
- ``scored``: :func:`sigmoid_head.scoring.generate.generate_outputs` (per-token head,
  softmax, BoostedProb and entropy read during generation), the unguided default;
- ``guided``: the same with ``head_weight`` (``--weight``, default 1): a greedy step scores
  the head on the best tokens under the LM only, and the whole vocabulary where those do
  not bound the winner (scoring/guidance.py);
- ``guided-full``: the same decoding with the head scored on the whole vocabulary at every
  step (the implementation before candidates; its outputs must be identical);
- ``guided+mask``: ``head_weight`` and ``head_mask_below`` 0.5.

Interleaved, repeated; medians and their ratios to ``plain`` (and guided to scored). It
also prints the share of greedy steps that fell back to the whole vocabulary, and checks
that ``guided`` and ``guided-full`` chose the same tokens. The head is ``--head DIR`` or,
by default, an untrained one (a copy of the LM head).

    python benchmarks/guided_generation.py [--quick] [--threads 1] [--new-tokens 32]
    python benchmarks/guided_generation.py --mt-model runs/mt_bible/model --head runs/mt_heads/heads/X
"""

from __future__ import annotations

import dataclasses

import common
import torch

from sigmoid_head.data.batching import pad_with_mask
from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.scoring import decoding, guidance
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.force_decode import length_batches
from sigmoid_head.scoring.generate import generate_outputs


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--weight", type=float, default=1.0, help="head_weight of the guided runs")
    common.add_generation_model_options(p)
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.new_tokens = 1, 1, 4, 8
    common.setup_threads(args)

    model, sources = common.generation_model_and_sources(args)
    backbone = model.backbone
    seq2seq = backbone.is_encoder_decoder
    prompts = prompt_ids([{"source": x} for x in sources], backbone.tokenizer,
                         is_encoder_decoder=seq2seq,
                         prompt_template=None if seq2seq else common.PROMPT,
                         use_chat_template=not seq2seq)
    n = args.new_tokens
    base = DecodingConfig(max_new_tokens=n, extra={"min_new_tokens": n})
    guided = dataclasses.replace(base, head_weight=args.weight)
    configs = {"scored": base, "guided": guided, "guided-full": guided,
               "guided+mask": dataclasses.replace(guided, head_mask_below=0.5)}
    groups = sorted(length_batches([{"input_ids": q, "labels": [0]} for q in prompts],
                                   args.batch_size), key=min)
    pid = backbone.tokenizer.pad_token_id

    @torch.no_grad()
    def plain():
        for idx in groups:
            ids, mask = pad_with_mask([prompts[i] for i in idx], pid, "right" if seq2seq else "left")
            backbone.model.generate(input_ids=ids.to(args.device), attention_mask=mask.to(args.device),
                                    pad_token_id=pid, **base.generate_kwargs())

    guides: dict[str, list] = {k: [] for k in configs}
    outputs: dict[str, list] = {}
    real_init = guidance.HeadGuidance.__init__

    def variant(name, cfg):
        def run():
            def keep(self, *a, **k):
                real_init(self, *a, **k)
                guides[name].append(self)

            guidance.HeadGuidance.__init__ = keep
            if name == "guided-full":
                decoding.argmax_only = lambda *a, **k: False
            try:
                outs = generate_outputs(model, prompts, cfg, batch_size=args.batch_size,
                                        progress=False)
            finally:
                guidance.HeadGuidance.__init__ = real_init
                decoding.argmax_only = guidance.argmax_only
            outputs[name] = [g.output for g in outs]
        return run

    common.header(args, f"prompts={len(prompts)} new tokens per output={n} (forced)")
    runs = {"plain": plain, **{k: variant(k, c) for k, c in configs.items()}}
    med = {k: common.median(v) for k, v in
           common.interleaved(runs, args.repeats, device=args.device).items()}
    tokens = len(prompts) * n
    print()
    for k, t in med.items():
        extra = f"   {t / med['scored']:.3f}x scored" if k.startswith("guided") else ""
        print(f"{k:<12} {t:8.2f} s  {1000 * t / tokens:7.2f} ms/token   {t / med['plain']:.3f}x plain{extra}")
    print(f"guided / guided-full: {med['guided'] / med['guided-full']:.3f}x")
    for k in ("guided", "guided+mask"):
        full, steps = (sum(getattr(g, a) for g in guides[k]) for a in ("full_steps", "steps"))
        print(f"{k}: {full} of {steps} batch steps scored the whole vocabulary "
              f"({100 * full / max(steps, 1):.1f}%)")
    same = outputs["guided"] == outputs["guided-full"]
    print(f"guided and guided-full chose the same tokens: {same}")
    if not same:
        raise SystemExit("guided decoding over candidates changed the outputs")


if __name__ == "__main__":
    main()
