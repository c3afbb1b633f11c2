"""``sigmoid-head score``: Eval Other, COMET-style (``-s sources -t candidates``).

Parses the options (generated from :class:`sigmoid_head.scoring.corpus.CorpusConfig` and
:class:`.common.ModelOptions`) and calls :func:`sigmoid_head.scoring.corpus.score_corpus`:
batch by batch over a stream of inputs, the optional baselines, the head folder's combined
score, calibration and error spans, a resumable ``--to-json``, data-parallel under
``accelerate launch`` / ``torchrun``.
"""

from __future__ import annotations

import argparse

from ..evaluation.combination import help_text
from . import common

DESCRIPTION = "Score candidates given their sources, COMET-style. " + help_text("score")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("-t", "--candidates", help="candidates, one per line")
    p.add_argument("--input", help=".jsonl with {source, candidate} or {messages, candidate}")
    common.add_corpus_args(p, "score")


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head score``: Eval Other."""
    if args.describe:
        return common.describe_fields()
    from ..scoring.corpus import score_corpus
    from ..scoring.corpus_output import join_processes

    config = common.corpus_config(args)
    inputs = common.Inputs(args, need_candidates=True)
    _, args.device = join_processes(args.device)
    source = common.ModelOptions(args.head, args.model, args.dtype, args.device)
    common.print_result(score_corpus(source.load(), inputs, config))
    return 0
