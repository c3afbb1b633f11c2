"""``sigmoid-head score``: Eval Other, COMET-style (``-s sources -t candidates``).

Parses the options and calls :func:`sigmoid_head.scoring.force_decode.score_records`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`).
"""

from __future__ import annotations

import argparse

from . import common
from .output import run_streamed

DESCRIPTION = "Score candidates given their sources, COMET-style."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("-t", "--candidates", help="candidates, one per line")
    p.add_argument("--input", help=".jsonl with {source, candidate} or {messages, candidate}")
    p.add_argument("--max-tokens", type=common.POSITIVE_INT, help="batch by padded tokens instead of sequences")
    common.add_model_args(p)
    common.add_baseline_args(p, mc=False)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head score``: Eval Other."""
    from ..scoring.force_decode import score_records

    common.check_early(args)
    rauq = common.rauq_config(args)
    inputs = common.read_inputs(args, need_candidates=True)
    model = common.load_model(args)

    def score_chunk(chunk: list[dict]) -> list[dict]:
        scores = score_records(model, chunk, prompt_template=args.prompt_template,
                               use_chat_template=args.chat, batch_size=args.batch_size,
                               max_tokens=args.max_tokens, with_tokens=args.with_tokens,
                               rauq=rauq, progress=False)
        keep = ("source", "messages", "candidate", "target")
        rows = [{**{k: rec[k] for k in keep if k in rec}, **s}
                for rec, s in zip(chunk, scores, strict=True)]
        for r in rows:
            if "candidate" not in r:
                r["candidate"] = r.pop("target")
        common.add_baselines(model, chunk, rows, args)
        return rows

    rows = run_streamed(args, inputs, score_chunk, chunk_size=32 * args.batch_size)
    print(common.summary(rows))
    return 0
