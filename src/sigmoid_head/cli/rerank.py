"""``sigmoid-head rerank``: best-of-N reranking of the model's own candidates.

Parses the options (generated from :class:`sigmoid_head.scoring.rerank.RerankConfig`, the
batching and output fields of :class:`sigmoid_head.scoring.corpus.CorpusConfig` and
:class:`.common.ModelOptions`) and calls :func:`sigmoid_head.scoring.rerank.rerank_corpus`:
streamed, resumable ``-o``, data-parallel under ``accelerate launch`` / ``torchrun``.
"""

from __future__ import annotations

import argparse

from ..evaluation.combination import RERANK_SELECT, RERANK_SELECT_NO_HEAD, help_text
from . import UsageError, common

DESCRIPTION = ("Draw several candidates per source (greedy or beam, and samples), score them "
               f"all and pick one by a score (--select; default: {RERANK_SELECT}, or "
               f"{RERANK_SELECT_NO_HEAD} without a head). " + help_text("rerank"))
OWN = ("batch_size", "to_json")
"""The CorpusConfig fields rerank spells its own way (``-o`` is ``to_json``, required;
``--batch-size`` counts sources here); every other field it offers is an option as it is."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..scoring.corpus_config import BatchingConfig
    from ..scoring.rerank import RerankConfig
    from .options import add_dataclass_options, field_parser

    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("--input", help=".jsonl with {source} or {messages} (a target is kept)")
    p.add_argument("-o", "--to-json", dest="to_json", metavar="OUT.jsonl",
                   help="required: write one JSON row per source, its candidates with their "
                   "scores and the pick, as they are done (resumed when rerun after an "
                   "interruption)")
    p.add_argument("--describe", action="store_true",
                   help="print every output field with its direction and range, then exit")
    add_dataclass_options(p.add_argument_group("model"), common.ModelOptions)
    add_dataclass_options(p.add_argument_group("candidates and selection"), RerankConfig)
    size = BatchingConfig.__dataclass_fields__["batch_size"]
    p.add_argument_group("batching").add_argument(
        "--batch-size", type=field_parser(size, int), default=size.default,
        metavar="BATCH_SIZE", help="Sources per batch: each generate call runs "
        "batch-size x samples sequences, and the samples' seeds depend on the "
        f"batches. (default: {size.default})")
    common.add_config_groups(p, "rerank", skip=OWN)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head rerank``."""
    from ..scoring.corpus import config_from
    from ..scoring.corpus_output import join_processes
    from ..scoring.rerank import RerankConfig, check_select, describe, rerank_corpus, selectable

    if args.describe:
        print(describe(), end="")
        return 0
    if not args.to_json:
        raise UsageError("give -o OUT.jsonl: the candidates and the picks are written there")
    config = config_from(vars(args), RerankConfig)  # a bad --select stops here, listed
    if not args.head:  # what a bare model cannot score, before it is loaded
        if config.select == RERANK_SELECT:
            config.select = RERANK_SELECT_NO_HEAD  # the default without a head
        check_select(config.select, selectable(head=False))
    corpus = common.corpus_config(args)
    inputs = common.Inputs(args, need_candidates=False)
    _, args.device = join_processes(args.device)
    model = common.ModelOptions(args.head, args.model, args.dtype, args.device).load()
    result = rerank_corpus(model, inputs, config, corpus)
    if result.n:
        print(f"{result.n} sources reranked, {config.samples} sample"
              f"{'' if config.samples == 1 else 's'}"
              f"{' + ' + ('greedy' if config.num_beams == 1 else 'beam') if config.greedy else ''}"
              f" each; picked by {config.select}, mean over the picks "
              f"{result.means.get('picked_score', float('nan')):.4f}; written to {corpus.to_json}")
        if result.mix:
            print(result.mix)
        for line in result.notices:
            print(line)
    return 0
