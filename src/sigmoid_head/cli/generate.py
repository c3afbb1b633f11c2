"""``sigmoid-head generate``: Eval Self: generate with the original model and score the outputs.

Parses the options and calls :func:`sigmoid_head.scoring.generate.generate_and_score`
(or, with ``--stream``, :func:`sigmoid_head.scoring.streaming.stream_generate`), then the
optional baselines (:mod:`sigmoid_head.scoring.baselines`) and the head folder's
calibration and error-span settings, batch by batch over a stream of inputs
(:mod:`.output`: resumable ``--to-json``, data-parallel under ``accelerate launch`` /
``torchrun``).
"""

from __future__ import annotations

import argparse
import sys

from . import UsageError, common
from .output import launch, run_streamed

DESCRIPTION = "Generate with the original model and score it."
WINDOW_BATCHES = 16
"""Batches per window (the unit written to disk; generation is slower than scoring)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("--input", help=".jsonl with {source} or {messages}")
    common.add_explain_args(p)
    common.add_model_args(p)
    g = p.add_argument_group("decoding")
    g.add_argument("--num-beams", type=common.POSITIVE_INT, default=1)
    g.add_argument("--do-sample", action="store_true")
    g.add_argument("--temperature", type=common.POSITIVE_FLOAT, default=1.0)
    g.add_argument("--top-p", type=common.PROBABILITY, default=1.0)
    g.add_argument("--max-new-tokens", type=common.POSITIVE_INT, default=128)
    g.add_argument("--seed", type=common.NONNEG_INT, default=0)
    g.add_argument(
        "--stream",
        action="store_true",
        help="print each output token as it is generated, coloured by its score on a terminal "
        "(plain text otherwise); greedy or sampling, one input at a time (sampled outputs "
        "are those of --batch-size 1 without --stream), in one process, without --rauq",
    )
    common.add_baseline_args(p, mc=True)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head generate``: Eval Self."""
    if args.describe:
        return common.describe_fields()
    from ..scoring.generate import DecodingConfig, generate_and_score

    common.check_early(args)
    rauq = common.rauq_config(args)
    if args.stream and rauq is not None:
        raise UsageError("--stream does not compute RAUQ: leave out --rauq")
    inputs = common.Inputs(args, need_candidates=False)
    # sampling draws from one seeded stream over all inputs: one batch of every input, in
    # one process
    random_draws = args.do_sample or args.mc_samples
    if launch(args) > 1 and (random_draws or args.stream):
        raise UsageError("--do-sample, --mc-samples and --stream need one process (sampling "
                         "draws from one seeded stream over all inputs; --stream prints tokens)")
    model = common.load_model(args)
    decoding = DecodingConfig(
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        do_sample=args.do_sample,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
    )
    calibrator, spans, combination = common.head_extras(args, "generate")
    args.with_tokens = args.with_tokens or bool(args.html)  # the page is drawn from the rows
    if args.stream:
        from .terminal import legend, uses_colour

        args.quiet = True  # the streamed tokens are the progress
        if uses_colour(sys.stdout):
            print(legend(_colour_method(model)))

    def generate_batch(batch: list[dict]) -> list[dict]:
        with_tokens = args.with_tokens or spans is not None
        if args.stream:
            rows = _stream(model, batch, decoding, args, with_tokens)
        else:
            rows = generate_and_score(model, batch, decoding, prompt_template=args.prompt_template,
                                      use_chat_template=args.chat, batch_size=args.batch_size,
                                      with_tokens=with_tokens, rauq=rauq, progress=False)
        common.add_baselines(model, batch, rows, args)
        common.explain_rows(rows, calibrator, spans, args.with_tokens, combination)
        return rows

    batch = len(inputs) if random_draws else args.batch_size
    page_rows: list[dict] = []
    means = run_streamed(args, inputs, generate_batch, batch_size=batch,
                         window=len(inputs) if random_draws else WINDOW_BATCHES * batch,
                         on_rows=common.page_sink(args, page_rows))
    if args.html:
        common.write_html(args, page_rows, model, spans)
    if means.n:
        print(common.summary([means.row()], n=means.n))
    return 0


def _colour_method(model) -> str:
    """Whose probability colours the streamed tokens: the head's, else BoostedProb."""
    return "sigmoid" if getattr(model, "head", None) is not None else "boostedprob"


def _stream(model, inputs: list[dict], decoding, args: argparse.Namespace,
            with_tokens: bool) -> list[dict]:
    """Generate input by input, printing every token as it comes; returns the output rows."""
    from ..scoring.streaming import OutputEvent, stream_generate
    from .terminal import show_stream

    events = stream_generate(model, inputs, decoding, prompt_template=args.prompt_template,
                             use_chat_template=args.chat, with_tokens=with_tokens)
    return [e.record for e in show_stream(events, _colour_method(model), sys.stdout)
            if isinstance(e, OutputEvent)]
