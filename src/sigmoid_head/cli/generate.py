"""``sigmoid-head generate``: Eval Self: generate with the original model and score the outputs.

Parses the options and calls :func:`sigmoid_head.scoring.generate.generate_and_score`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`), batch by batch over
a stream of inputs (:mod:`.output`: resumable ``--to-json``, data-parallel under
``accelerate launch`` / ``torchrun``).
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
        "(plain text otherwise); greedy or sampling only",
    )
    common.add_baseline_args(p, mc=True)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head generate``: Eval Self."""
    from ..scoring.generate import DecodingConfig, generate_and_score

    common.check_early(args)
    rauq = common.rauq_config(args)
    inputs = common.Inputs(args, need_candidates=False)
    # sampling draws from one seeded stream over all inputs: one batch of every input, in
    # one process
    random_draws = args.do_sample or args.mc_samples
    if launch(args) > 1 and random_draws:
        raise UsageError("--do-sample and --mc-samples draw from one seeded stream over all "
                         "inputs: run them in one process")
    model = common.load_model(args)
    decoding = DecodingConfig(
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        do_sample=args.do_sample,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
    )

    def generate_batch(batch: list[dict]) -> list[dict]:
        if args.stream:
            rows = _stream(model, batch, decoding, args)
        else:
            rows = generate_and_score(model, batch, decoding, prompt_template=args.prompt_template,
                                      use_chat_template=args.chat, batch_size=args.batch_size,
                                      with_tokens=args.with_tokens, rauq=rauq, progress=False)
        common.add_baselines(model, batch, rows, args)
        return rows

    batch = len(inputs) if random_draws else args.batch_size
    means = run_streamed(args, inputs, generate_batch, batch_size=batch,
                         window=len(inputs) if random_draws else WINDOW_BATCHES * batch)
    if means.n:
        print(common.summary([means.row()], n=means.n))
    return 0


def _stream(model, inputs: list[dict], decoding, args: argparse.Namespace) -> list[dict]:
    """Generate input by input, printing every token as it comes; returns the output rows."""
    from ..scoring.streaming import OutputEvent, stream_generate
    from .terminal import legend, paint, uses_colour

    out = sys.stdout
    colour = uses_colour(out)
    method = "sigmoid" if getattr(model, "head", None) is not None else "boostedprob"
    if colour and not getattr(args, "_legend_shown", False):
        print(legend(method), file=out)
        args._legend_shown = True
    rows = []
    for event in stream_generate(model, inputs, decoding, prompt_template=args.prompt_template,
                                 use_chat_template=args.chat, with_tokens=args.with_tokens):
        if isinstance(event, OutputEvent):
            rows.append(event.record)
            print(file=out, flush=True)
        else:
            out.write(paint(event.text, event.scores.get(method), colour))
            out.flush()
    return rows
