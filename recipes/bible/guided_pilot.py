"""Pilot: chrF of head-guided greedy decoding on a handful of dev verses (issue 25, item 3).

    python -m recipes.bible.guided_pilot --head runs/untrained_rows/heads/uniform_0.1 \
        [--head runs/untrained_rows/heads/paper] [--n-verses 40] [--weights 0,0.5,1,2,4] [--masks 0.5]

SmolLM2-135M-Instruct rewrites KJV verses of the dev books into modern English (the
demo's prompt, chat template, greedy, at most 96 new tokens) with each head given and
each setting: ``--head-weight`` w for every w of ``--weights`` (0 = the model alone),
and ``--head-mask-below`` p (weight 0) for every p of ``--masks``. Reported per setting:
corpus chrF and mean sentence chrF against the WEB reference, the mean output length,
and the wall time per generated token relative to w = 0 on the same head (the same
process, run one after the other; a shared machine adds noise). The verses are dev
verses after those the demo and the untrained-rows ablation use (``para_dev`` from
index 124): a pilot on dev data, for choosing, not a test result.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def run_setting(model, verses: list[dict], weight: float, mask: float, max_new: int) -> dict:
    from sacrebleu.metrics import CHRF

    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_and_score

    from ..common.bible_sample import PROMPT

    cfg = DecodingConfig(max_new_tokens=max_new, head_weight=weight, head_mask_below=mask)
    t0 = time.perf_counter()
    rows = generate_and_score(model, [{"source": v["source"]} for v in verses], cfg,
                              prompt_template=PROMPT, use_chat_template=True, batch_size=8,
                              progress=False)
    seconds = time.perf_counter() - t0
    hyps, refs = [r["candidate"].strip() for r in rows], [v["target"] for v in verses]
    chrf = CHRF()
    sentence = [chrf.sentence_score(h, [r]).score for h, r in zip(hyps, refs, strict=True)]
    n_tok = sum(r["n_tokens"] for r in rows)
    return {"weight": weight, "mask": mask, "chrf": chrf.corpus_score(hyps, [refs]).score,
            "sentence_chrf": sum(sentence) / len(sentence), "tokens": n_tok / len(rows),
            "s_per_token": seconds / n_tok, "example": hyps[0]}


def main(argv: list[str] | None = None) -> None:
    from sigmoid_head import SigmoidHeadModel, load_backbone
    from sigmoid_head.data.records import read_jsonl

    from ..common.bible_sample import sample_dir, short

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--head", action="append", required=True, help="a head folder (repeatable)")
    p.add_argument("--n-verses", type=int, default=40)
    p.add_argument("--weights", default="0,0.5,1,2,4")
    p.add_argument("--masks", default="0.5")
    p.add_argument("--max-new-tokens", type=int, default=96)
    args = p.parse_args(argv)
    verses = short(read_jsonl(sample_dir() / "para_dev.jsonl.gz"), 40)[124:124 + args.n_verses]
    backbone = load_backbone(None, device="cpu")
    settings = [(float(w), 0.0) for w in args.weights.split(",")]
    settings += [(0.0, float(m)) for m in args.masks.split(",") if m]
    print(f"{len(verses)} dev verses, greedy, max {args.max_new_tokens} new tokens\n")
    print("| head | head weight | mask below | corpus chrF | mean sentence chrF | tokens/output | time/token vs w=0 |")
    print("|---|---|---|---|---|---|---|")
    for head in args.head:
        model = SigmoidHeadModel.from_pretrained(head, backbone)
        base = None
        for w, m in settings:
            r = run_setting(model, verses, w, m, args.max_new_tokens)
            base = base or r["s_per_token"]
            print(f"| {Path(head).name} | {w:g} | {m:g} | {r['chrf']:.1f} | {r['sentence_chrf']:.1f} | "
                  f"{r['tokens']:.1f} | {r['s_per_token'] / base:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
