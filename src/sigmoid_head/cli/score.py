"""``sigmoid-head score``: Eval Other, COMET-style (``-s sources -t candidates``).

Parses the options and calls :func:`sigmoid_head.scoring.force_decode.score_records`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`) and the head folder's
calibration and error-span settings, batch by batch over a stream of inputs
(:mod:`.output`: resumable ``--to-json``, data-parallel under ``accelerate launch`` /
``torchrun``).
"""

from __future__ import annotations

import argparse

from . import common
from .output import launch, run_streamed

DESCRIPTION = "Score candidates given their sources, COMET-style."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("-t", "--candidates", help="candidates, one per line")
    p.add_argument("--input", help=".jsonl with {source, candidate} or {messages, candidate}")
    p.add_argument("--max-tokens", type=common.POSITIVE_INT, help="batch by padded tokens instead of sequences")
    common.add_explain_args(p)
    common.add_model_args(p)
    common.add_baseline_args(p, mc=False)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head score``: Eval Other."""
    if args.describe:
        return common.describe_fields()
    from ..scoring.distributed import DEFAULT_WINDOW_BATCHES
    from ..scoring.force_decode import score_records

    common.check_early(args)
    rauq = common.rauq_config(args)
    inputs = common.Inputs(args, need_candidates=True)
    launch(args)
    model = common.load_model(args)
    calibrator, spans, combination = common.head_extras(args, "score")
    args.with_tokens = args.with_tokens or bool(args.html)  # the page is drawn from the rows

    def score_batch(batch: list[dict]) -> list[dict]:
        scores = score_records(model, batch, prompt_template=args.prompt_template,
                               use_chat_template=args.chat, batch_size=args.batch_size,
                               max_tokens=args.max_tokens,
                               with_tokens=args.with_tokens or spans is not None,
                               rauq=rauq, progress=False)
        keep = ("source", "messages", "candidate", "target")
        rows = [{**{k: rec[k] for k in keep if k in rec}, **s}
                for rec, s in zip(batch, scores, strict=True)]
        for r in rows:
            if "candidate" not in r:
                r["candidate"] = r.pop("target")
        common.add_baselines(model, batch, rows, args)
        common.explain_rows(rows, calibrator, spans, args.with_tokens, combination)
        return rows

    page_rows: list[dict] = []
    means = run_streamed(args, inputs, score_batch, batch_size=args.batch_size,
                         window=DEFAULT_WINDOW_BATCHES * args.batch_size,
                         on_rows=common.page_sink(args, page_rows))
    if args.html:
        common.write_html(args, page_rows, model, spans)
    if means.n:
        print(common.summary([means.row()], n=means.n))
    return 0
