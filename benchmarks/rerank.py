"""Best-of-N reranking: its cost against generating the same candidates, and the forward floor.

For a batch of sources, ``sigmoid_head.scoring.rerank.rerank_corpus`` draws the greedy
output and ``--samples`` sampled ones per source, scores every candidate with every method
(read during generation, no second pass) and picks one. Variants, side by side:

- ``generate``: plain Hugging Face ``generate`` of the same kinds of candidates (greedy,
  then ``--samples`` samples per source), the same batches, no scoring;
- ``rerank``: :func:`rerank_corpus` (generation, every score, the pick, the output rows);
- ``forward``: one batched forward pass of the frozen model over every candidate
  (prompt + output, ``--batch-size`` sources' candidates at a time): what scoring the
  candidates after generation would cost at least, the floor the issue measures against.

Interleaved, repeated; medians. Printed: each variant's time, ``rerank / generate``, and
``(rerank - generate) / forward``: the cost of the scoring and picking beyond generation, in
units of one forward pass over the candidates (goal: <= 1.1). Candidates end at EOS, so
the generated lengths are printed too. By default KJV verses with the embedded SmolLM2 and
an untrained head; ``--mt-model DIR`` uses that encoder-decoder on the Bible sample's
Spanish MT test verses (e.g. the ``model/`` folder of ``recipes/bible/train_mt.py``).

    python benchmarks/rerank.py [--quick] [--threads 1] [--samples 4] [--new-tokens 32]
"""

from __future__ import annotations

import common
import torch

from sigmoid_head.data.batching import pad_with_mask
from sigmoid_head.scoring.corpus import CorpusConfig
from sigmoid_head.scoring.decoding import generation_prompts
from sigmoid_head.scoring.force_decode import length_batches
from sigmoid_head.scoring.rerank import RerankConfig, batch_seed, rerank_corpus


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--samples", type=int, default=4, help="sampled candidates per source")
    p.add_argument("--new-tokens", type=int, default=32, help="most tokens per candidate")
    common.add_generation_model_options(p)
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.new_tokens = 1, 1, 4, 8
    common.setup_threads(args)
    model, sources = common.generation_model_and_sources(args)
    backbone = model.backbone
    seq2seq = backbone.is_encoder_decoder
    records = [{"source": x} for x in sources]
    template = None if seq2seq else common.PROMPT
    config = RerankConfig(samples=args.samples, max_new_tokens=args.new_tokens)
    corpus = CorpusConfig(batch_size=args.batch_size, prompt_template=template,
                          chat=not seq2seq, quiet=True)
    parts = [records[i:i + args.batch_size] for i in range(0, len(records), args.batch_size)]
    pid = backbone.tokenizer.pad_token_id
    side = "right" if seq2seq else "left"
    made: dict[str, list] = {}

    @torch.no_grad()
    def generate():
        outs = []
        for part in parts:
            decodings = config.decodings(batch_seed(config.seed, part))
            _, prompts, _ = generation_prompts(model, part, decodings[0][1], template, not seq2seq)
            fake = [{"input_ids": q, "labels": [0]} for q in prompts]
            for _, cfg in decodings:  # the batches and seeding of generate_outputs
                torch.manual_seed(cfg.seed)
                for idx in sorted(length_batches(fake, args.batch_size), key=min):
                    ids, mask = pad_with_mask([prompts[i] for i in idx], pid, side)
                    out = backbone.model.generate(input_ids=ids.to(args.device),
                                                  attention_mask=mask.to(args.device),
                                                  pad_token_id=pid, **cfg.generate_kwargs())
                    outs.append(out[:, 1:] if seq2seq else out[:, ids.shape[1]:])
        made["generate"] = outs

    def rerank():
        made["rerank"] = rerank_corpus(model, records, config, corpus).rows

    def sequences() -> list[tuple[list[int], list[int]]]:
        """(prompt, candidate ids) of every candidate the rerank run drew."""
        out = []
        for part, rows in zip(parts, [made["rerank"][i:i + args.batch_size]
                                      for i in range(0, len(records), args.batch_size)],
                              strict=True):
            decodings = config.decodings(batch_seed(config.seed, part))
            _, prompts, _ = generation_prompts(model, part, decodings[0][1], template, not seq2seq)
            for prompt, row in zip(prompts, rows, strict=True):
                for c in row["candidates"]:
                    ids = backbone.tokenizer(c["candidate"], add_special_tokens=False)["input_ids"]
                    out.append((prompt, ids or [pid]))
        return out

    rerank()  # the candidates the floor runs over
    cands = sequences()
    per_batch = args.batch_size * (1 + args.samples)

    @torch.no_grad()
    def forward():
        for i in range(0, len(cands), per_batch):
            chunk = cands[i:i + per_batch]
            if seq2seq:
                src, src_mask = pad_with_mask([c[0] for c in chunk], pid, "right")
                tgt, tgt_mask = pad_with_mask([c[1] for c in chunk], pid, "right")
                backbone.model(input_ids=src.to(args.device), attention_mask=src_mask.to(args.device),
                               decoder_input_ids=tgt.to(args.device),
                               decoder_attention_mask=tgt_mask.to(args.device))
            else:
                ids, mask = pad_with_mask([c[0] + c[1] for c in chunk], pid, "right")
                backbone.model(input_ids=ids.to(args.device), attention_mask=mask.to(args.device))

    generated = sum(len(c[1]) for c in cands)
    common.header(args, f"sources={len(records)} candidates per source={1 + args.samples} "
                        f"max new tokens={args.new_tokens} candidate tokens={generated}")
    runs = {"generate": generate, "rerank": rerank, "forward": forward}
    med = {k: common.median(v) for k, v in
           common.interleaved(runs, args.repeats, device=args.device).items()}
    eos = backbone.tokenizer.eos_token_id
    plain_tokens = sum(row.index(eos) + 1 if eos in row else len(row)
                       for o in made["generate"] for row in o.tolist())
    print()
    for k, t in med.items():
        print(f"{k:<9} {t:8.2f} s")
    print(f"tokens generated: rerank {generated}, plain generate {plain_tokens} (up to EOS; the "
          "candidates' text re-tokenized for rerank)")
    print(f"rerank / generate: {med['rerank'] / med['generate']:.3f}x")
    print(f"(rerank - generate) / forward: {(med['rerank'] - med['generate']) / med['forward']:.3f}x "
          "(goal <= 1.1)")


if __name__ == "__main__":
    main()
