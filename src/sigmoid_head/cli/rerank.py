"""``sigmoid-head rerank``: best-of-N reranking: draw candidates per source, score, pick.

Parses the options (generated from :class:`sigmoid_head.scoring.rerank.RerankConfig`,
:class:`sigmoid_head.scoring.corpus.CorpusConfig`, the shared fields of
:class:`sigmoid_head.scoring.generate.DecodingConfig` and :class:`.common.ModelOptions`) and
calls :func:`sigmoid_head.scoring.rerank.rerank_corpus`.
"""

from __future__ import annotations

import argparse

from . import UsageError, common

DESCRIPTION = ("Best-of-N reranking: draw the greedy output and sampled candidates per source, "
               "score them all, and pick one per source.")
DECODING = ("num_beams", "max_new_tokens", "seed", "head_weight", "head_mask_below")
"""The DecodingConfig fields that are options (the sampling ones are RerankConfig's)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..scoring.generate import DecodingConfig
    from ..scoring.rerank import RerankConfig
    from .options import add_dataclass_options

    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("--input", help=".jsonl with {source} or {messages}")
    add_dataclass_options(p.add_argument_group("candidates and selection"), RerankConfig,
                          parsers=common.PARSERS)
    common.add_corpus_args(p, "rerank")
    add_dataclass_options(p.add_argument_group("decoding"), DecodingConfig, only=DECODING,
                          parsers=common.PARSERS)


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head rerank``: every candidate to ``--to-json`` (or the picks printed)."""
    if args.describe:
        return common.describe_fields()
    from ..scoring.corpus import config_from
    from ..scoring.corpus_output import join_processes
    from ..scoring.generate import DecodingConfig
    from ..scoring.rerank import RerankConfig, check_select, rerank_corpus

    config = common.corpus_config(args)
    try:
        rerank = config_from(vars(args), RerankConfig)
        check_select(rerank.select)
        decoding = config_from(vars(args), DecodingConfig)
    except ValueError as e:
        raise UsageError(str(e)) from None
    inputs = common.Inputs(args, need_candidates=False)
    _, args.device = join_processes(args.device)
    model = common.ModelOptions(args.head, args.model, args.dtype, args.device).load()
    result = rerank_corpus(model, inputs, config, rerank, decoding, head_dir=args.head)
    common.print_result(result)
    if result.rows is not None:
        for r in result.rows:
            if r["picked"]:
                print(f"[{r['source_index']}] {r['origin']} ({r['picked_by']} {r[r['picked_by']]:.3f}): "
                      f"{r['candidate']}")
    return 0
