"""``sigmoid-head score``: Eval Other, COMET-style (``-s sources -t candidates``).

Parses the options and calls :func:`sigmoid_head.scoring.force_decode.score_records`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`), batch by batch over
a stream of inputs (:mod:`.output`: resumable ``--to-json``, data-parallel under
``accelerate launch`` / ``torchrun``).
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
    p.add_argument("--html", help="also write one self-contained page of coloured token scores")
    common.add_model_args(p)
    common.add_baseline_args(p, mc=False)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head score``: Eval Other."""
    from ..scoring.distributed import DEFAULT_WINDOW_BATCHES
    from ..scoring.force_decode import score_records

    common.check_early(args)
    rauq = common.rauq_config(args)
    inputs = common.Inputs(args, need_candidates=True)
    launch(args)
    model = common.load_model(args)
    calibrator, spans = _head_extras(args)
    need_tokens = args.with_tokens or bool(args.html) or spans is not None
    page_rows: list[dict] = []

    def score_batch(batch: list[dict]) -> list[dict]:
        scores = score_records(model, batch, prompt_template=args.prompt_template,
                               use_chat_template=args.chat, batch_size=args.batch_size,
                               max_tokens=args.max_tokens, with_tokens=need_tokens,
                               rauq=rauq, progress=False)
        keep = ("source", "messages", "candidate", "target")
        rows = [{**{k: rec[k] for k in keep if k in rec}, **s}
                for rec, s in zip(batch, scores, strict=True)]
        for r in rows:
            if "candidate" not in r:
                r["candidate"] = r.pop("target")
        common.add_baselines(model, batch, rows, args)
        _explain(rows, calibrator, spans, args, page_rows)
        return rows

    means = run_streamed(args, inputs, score_batch, batch_size=args.batch_size,
                         window=DEFAULT_WINDOW_BATCHES * args.batch_size)
    if args.html:
        from ..evaluation.html import write_page

        print(f"page of {len(page_rows)} scored outputs written to "
              f"{write_page(args.html, page_rows, model.tokenizer)}")
    if means.n:
        print(common.summary([means.row()], n=means.n))
    return 0


def _head_extras(args: argparse.Namespace):
    """The calibrator and error-span settings saved in the head folder (``calibrate``), if any."""
    from ..evaluation.calibration import Calibrator
    from ..evaluation.spans import SpanConfig

    if not args.head:
        return None, None
    return Calibrator.load(args.head), SpanConfig.load(args.head)


def _explain(rows: list[dict], calibrator, spans, args: argparse.Namespace,
             page_rows: list[dict]) -> None:
    """Add calibrated probabilities and error spans to a chunk's rows (in place), keep them
    for the page, and drop the per-token scores unless --with-tokens asked for them."""
    if calibrator is not None:
        calibrator.apply(rows)
    if spans is not None:
        from ..evaluation.spans import add_errors

        add_errors(rows, spans)
    if args.html:
        page_rows.extend(dict(r) for r in rows)
    if not args.with_tokens:
        for r in rows:
            r.pop("tokens", None)
            r.pop("words", None)
