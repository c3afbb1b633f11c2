"""``sigmoid-head self-label``: decode training sources, tag the outputs against references.

Writes the file ``sigmoid-head train --self-generated`` reads: for every distinct source of
``--train-file`` (its references: the targets of every record with that source), the frozen
model's greedy output and ``--samples`` samples, each word tagged OK/BAD by a
TER-without-shifts alignment with the references (:mod:`sigmoid_head.data.self_labels`).
The options are generated from
:class:`sigmoid_head.training.self_label_config.SelfLabelConfig`.
"""

from __future__ import annotations

import argparse

DESCRIPTION = ("Decode the training sources with the frozen model (greedy and sampled) and tag "
               "every output word OK/BAD by its alignment with the source's references, for "
               "`sigmoid-head train --self-generated`.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..training.self_label_config import SelfLabelConfig
    from .options import add_settings

    add_settings(p, SelfLabelConfig)


def run(args: argparse.Namespace) -> int:
    from ..data.records import read_records
    from ..lm.backbone import load_backbone
    from ..safe.files import write_atomic
    from ..safe.json_io import dumps
    from ..safe.outputs import refuse_overlaps
    from ..training.self_generated import bad_share, decode_sources, group_references, label_outputs

    refuse_overlaps({"--output": args.output}, {"--train-file": args.train_file},
                    {"--model": args.model})
    sources = group_references(read_records(args.train_file))[: args.max_sources]
    model = load_backbone(args.model, dtype=args.dtype, device=args.device)
    outputs = decode_sources(model, sources, samples=args.samples, temperature=args.temperature,
                             max_new_tokens=args.max_new_tokens, seed=args.seed,
                             batch_size=args.batch_size, prompt_template=args.prompt_template,
                             use_chat_template=args.use_chat_template or None)
    rows = label_outputs(outputs, max_refs=args.max_refs, rule=args.rule,
                         case_sensitive=args.case_sensitive)
    write_atomic(args.output, "".join(dumps(r, ensure_ascii=False) + "\n" for r in rows),
                 stream=True)  # -o /dev/stdout: written straight
    print(f"{len(rows)} outputs of {len(sources)} sources labelled ({bad_share(rows):.1%} of "
          f"words BAD); written to {args.output}")
    return 0
