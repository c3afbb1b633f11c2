"""``sigmoid-head generate``: Eval Self: generate with the original model and score the outputs.

Parses the options and calls :func:`sigmoid_head.scoring.generate.generate_and_score`,
then the optional baselines (:mod:`sigmoid_head.scoring.baselines`).
"""

from __future__ import annotations

import argparse

from . import common
from .output import run_streamed

DESCRIPTION = "Generate with the original model and score it."


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
    inputs = common.read_inputs(args, need_candidates=False)
    model = common.load_model(args)
    decoding = DecodingConfig(
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        do_sample=args.do_sample,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
    )

    def generate_chunk(chunk: list[dict]) -> list[dict]:
        rows = generate_and_score(model, chunk, decoding, prompt_template=args.prompt_template,
                                  use_chat_template=args.chat, batch_size=args.batch_size,
                                  with_tokens=args.with_tokens, rauq=rauq, progress=False)
        common.add_baselines(model, chunk, rows, args)
        return rows

    # sampling draws from one seeded stream over all inputs: keep it one chunk
    random_draws = args.do_sample or args.mc_samples
    chunk = len(inputs) if random_draws else 8 * args.batch_size
    rows = run_streamed(args, inputs, generate_chunk, chunk_size=chunk)
    print(common.summary(rows))
    return 0
