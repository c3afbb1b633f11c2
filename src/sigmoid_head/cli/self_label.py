"""``sigmoid-head self-label``: decode training sources, tag the outputs against references.

Writes the file ``sigmoid-head train --self-generated`` reads: for every distinct source of
``--train-file`` (its references: the targets of every record with that source), the frozen
model's greedy output and ``--samples`` samples, each word tagged OK/BAD by a
TER-without-shifts alignment with the references (:mod:`sigmoid_head.data.self_labels`).
"""

from __future__ import annotations

import argparse

from . import common

DESCRIPTION = ("Decode the training sources with the frozen model (greedy and sampled) and tag "
               "every output word OK/BAD by its alignment with the source's references, for "
               "`sigmoid-head train --self-generated`.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..data.self_labels import RULES

    p.add_argument("--train-file", required=True,
                   help="pairs {source, target} (.jsonl/.tsv); every target of a source is a reference")
    p.add_argument("-o", "--output", required=True, metavar="OUT.jsonl",
                   help="the self-labelled outputs (written whole at the end, atomically)")
    p.add_argument("--model", help="base model id/path (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--dtype", default="auto", help="model dtype (default: auto)")
    p.add_argument("--device", help="cpu or cuda (default: cuda if available)")
    p.add_argument("--samples", type=common.SAMPLES, default=2,
                   help="sampled outputs per source, beside the greedy one (default: 2)")
    p.add_argument("--temperature", type=common.TEMPERATURE, default=0.8, help="sampling temperature (default: 0.8)")
    p.add_argument("--max-new-tokens", type=common.POSITIVE_INT, default=96,
                   help="most tokens per output (default: 96)")
    p.add_argument("--seed", type=common.SEED, default=0, help="seed of the samples (default: 0)")
    p.add_argument("--batch-size", type=common.POSITIVE_INT, default=16,
                   help="sources per generate call (default: 16)")
    p.add_argument("--max-sources", type=common.POSITIVE_INT,
                   help="decode only the first N distinct sources")
    p.add_argument("--max-refs", type=common.POSITIVE_INT,
                   help="tag against the first N references of each source (default: all)")
    p.add_argument("--rule", choices=RULES, default="union",
                   help="union: a word is OK when any reference's alignment matches it; best: "
                   "only the closest reference's (default: union)")
    p.add_argument("--case-sensitive", action="store_true", help="compare words with case")
    p.add_argument("--prompt-template", default=None,
                   help="how a causal model sees a source (must contain {source}; default "
                   "'{source}\\n')")
    p.add_argument("--use-chat-template", action="store_true",
                   help="prompt a causal model with its chat template")


def run(args: argparse.Namespace) -> int:
    from ..backbone import load_backbone
    from ..data.records import read_records
    from ..io_utils import write_atomic
    from ..json_safety import dumps
    from ..output_safety import refuse_overlaps
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
