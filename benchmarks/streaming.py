"""Streaming per-token scores vs plain ``generate`` and vs scoring after generation.

One prompt at a time (streaming is for a person watching one output), greedy decoding
of KJV verses with the embedded SmolLM2-135M (chat template), a fresh head:

* ``plain``: Hugging Face ``generate`` only, no scores;
* ``scored``: :func:`sigmoid_head.scoring.generate.generate_outputs` (scores read from the
  generation's logits and captured hidden states, returned at the end);
* ``streamed``: :func:`sigmoid_head.scoring.streaming.stream_generate`, every token's
  sigmoid/softmax/BoostedProb/entropy and text handed out as soon as it is chosen.

All three run side by side on the same prompts, interleaved and repeated (medians); the
outputs are checked to be identical. Also reports the streamed time to the first token.

    python benchmarks/streaming.py [--quick] [--threads 1] [--new-tokens 32] [--prompts 6]
"""

from __future__ import annotations

import gzip
import json
import time

import common
import torch

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_outputs
from sigmoid_head.scoring.streaming import OutputEvent, stream_generate


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--prompts", type=int, default=6)
    args = p.parse_args()
    if args.quick:
        args.prompts, args.repeats, args.new_tokens = 2, 1, 8
    common.setup_threads(args)
    backbone, _ = common.load(1)
    model = SigmoidHeadModel.from_base(backbone)
    with gzip.open(common.DATA, "rt") as f:
        records = [{"source": json.loads(line)["source"]}
                   for _, line in zip(range(args.prompts), f, strict=False)]
    settings = {"prompt_template": common.PROMPT, "use_chat_template": True}
    prompts = prompt_ids(records, backbone.tokenizer, is_encoder_decoder=False, **settings)
    cfg = DecodingConfig(max_new_tokens=args.new_tokens)
    pid = backbone.tokenizer.pad_token_id
    outputs: dict[str, dict[int, list[int]]] = {"plain": {}, "scored": {}, "streamed": {}}
    first_token: list[float] = []

    @torch.no_grad()
    def plain(i: int) -> None:
        ids = torch.tensor([prompts[i]])
        out = backbone.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                      pad_token_id=pid, **cfg.generate_kwargs())
        outputs["plain"][i] = out[0, ids.shape[1]:].tolist()

    def scored(i: int) -> None:
        g = generate_outputs(model, [prompts[i]], cfg, batch_size=1, progress=False)[0]
        outputs["scored"][i] = g.output

    def streamed(i: int) -> None:
        t0 = time.perf_counter()
        for k, e in enumerate(stream_generate(model, [records[i]], cfg, **settings)):
            if k == 0:
                first_token.append(time.perf_counter() - t0)
            if isinstance(e, OutputEvent):
                outputs["streamed"][i] = e.generated.output

    common.header(args, f"prompts={len(prompts)} max_new_tokens={args.new_tokens} batch=1")
    times = common.interleaved_items({"plain": plain, "scored": scored, "streamed": streamed},
                                     len(prompts), args.repeats)
    # plain generate stops at EOS without keeping it: compare up to the EOS
    cut = {k: {i: o[: len(outputs["plain"][i])] for i, o in v.items()} for k, v in outputs.items()}
    same = cut["plain"] == cut["scored"] == cut["streamed"]
    n_tokens = sum(len(o) for o in outputs["scored"].values())
    base = common.median(times["plain"])
    print(f"generated tokens per pass: {n_tokens}; identical outputs: {same}")
    print(f"{'variant':<10}{'median s':>10}{'tokens/s':>10}{'x plain':>9}")
    for name, ts in times.items():
        m = common.median(ts)
        print(f"{name:<10}{m:>10.3f}{n_tokens / m:>10.1f}{m / base:>9.3f}")
    print(f"streamed: median time to the first token {common.median(first_token):.3f} s "
          f"(whole output {common.median(times['streamed']) / len(prompts):.3f} s per prompt)")


if __name__ == "__main__":
    main()
