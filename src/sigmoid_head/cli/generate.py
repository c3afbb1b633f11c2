"""``sigmoid-head generate``: Eval Self: generate with the original model and score the outputs.

Parses the options and calls :func:`sigmoid_head.scoring.generate.generate_and_score`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`), batch by batch over
a stream of inputs (:mod:`.output`: resumable ``--to-json``, data-parallel under
``accelerate launch`` / ``torchrun``).
"""

from __future__ import annotations

import argparse

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
