"""How many labelled sentences fit a training length, per language pair (issue 58).

``train --max-length N`` cuts every prompt + MT at N tokens; an item whose labelled tokens
are all cut is dropped, one cut in part trains on its first words only. Non-Latin sources
cost several tokens per character in SmolLM2's tokenizer, so the pooled English-target tags
lose far more of their Sinhala-English and Nepali-English items than of the others. This
counts, per pair (the id's prefix: ``roen-train-12`` is ``roen``): the items in the file,
those the trainer keeps (at least one labelled token within N) and those that fit whole
(every labelled token within N)::

    python -m recipes.human_qe.fit_counts L/mlqe-en-pool-train/train.jsonl.gz --max-length 192

``--write-kept OUT`` also writes the kept items (their lines as they are, in order; with
``--first N`` the first N of them, as the trainer caps a validation file) to ``OUT``: the
items the pooled head trains and stops on, which its opponents are fitted on (``supervised.py
--keep-pool``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

PROMPT = "Translate this sentence into English.\n{source}\n"


def counts(path: str, max_length: int, prompt: str = PROMPT, kept: list[int] | None = None) -> dict[str, Counter]:
    """pair -> Counter(items, kept, whole); ``kept``, when given, gets the line (from 1) of
    every kept item."""
    import gzip
    import json

    from sigmoid_head.data.prompt_format import PromptFormat
    from sigmoid_head.data.self_labels import IGNORE_LABEL
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.training.labelled import labelled_records
    from sigmoid_head.training.self_generated import labelled_example

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        ids = [str(json.loads(x).get("id", "")) if x.strip() else "" for x in f]
    tok = load_backbone(None, device="cpu").tokenizer
    cut, full = (PromptFormat(False, prompt, False, n) for n in (max_length, 10**6))
    out: dict[str, Counter] = {}
    for line, rec in labelled_records(path):
        pair = ids[line - 1].split("-")[0] or "?"  # ``line`` counts from 1
        c = out.setdefault(pair, Counter())
        c["items"] += 1
        whole = labelled_example(rec, tok, path, line, full)
        part = labelled_example(rec, tok, path, line, cut)
        n_all = sum(g != IGNORE_LABEL for g in whole["good"]) if whole else 0
        n_cut = sum(g != IGNORE_LABEL for g in part["good"]) if part else 0
        c["kept"] += n_cut > 0
        if kept is not None and n_cut > 0:
            kept.append(line)
        c["whole"] += n_cut == n_all and n_all > 0
    return out


def write_kept(path: str, lines: list[int], out: str, first: int | None = None) -> int:
    """Write the items at ``lines`` (from 1) of the gold file ``path``, as they are and in
    that order (the first ``first`` of them), to ``out`` (gzip for ``.gz``); returns how many.
    Written whole or not at all."""
    import gzip

    from sigmoid_head.safe.files import write_atomic

    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read().splitlines()
    chosen = [text[k - 1] for k in lines[:first]]
    data = "".join(x + "\n" for x in chosen).encode("utf-8")
    write_atomic(out, gzip.compress(data, mtime=0) if str(out).endswith(".gz") else data)
    return len(chosen)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--write-kept", metavar="OUT", help="write the kept items to OUT")
    ap.add_argument("--first", type=int, help="with --write-kept: only the first N kept items")
    args = ap.parse_args(argv)
    lines: list[int] = []
    res = counts(args.file, args.max_length, kept=lines)
    if args.write_kept:
        n = write_kept(args.file, lines, args.write_kept, args.first)
        print(f"{n:,} kept items written to {args.write_kept}", file=sys.stderr)
    print(f"| pair | items | kept within {args.max_length} tokens | whole within {args.max_length} |")
    print("|---|---|---|---|")
    total = Counter()
    for pair, c in sorted(res.items()):
        total.update(c)
        print(f"| {pair} | {c['items']:,} | {c['kept']:,} | {c['whole']:,} |")
    print(f"| all | {total['items']:,} | {total['kept']:,} | {total['whole']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
