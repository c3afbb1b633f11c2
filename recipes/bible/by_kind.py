"""Eval Other split by negative kind: which hard negatives each method separates from references.

    python -m recipes.bible.by_kind --run runs/llm [--setting llm --data data/bible]

Reads ``scores_other.json`` of an ``experiments.py`` run, rebuilds its candidate list
(the same deterministic ``other_candidates`` from the same data and seed) and prints a
Markdown table of ROC-AUC, with 95% bootstrap intervals, of references against each kind
of negative (the next verse's reference; the reference with one word swapped). The word
swap is the hard case: same length, one foreign word. It is appended to the run's
``results.md`` unless ``--no-append``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .experiments import held_out_items, other_candidates
from .qe_report import by_kind_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="an experiments.py output folder")
    p.add_argument("--setting", choices=["llm", "mt"], default=None, help="default: the run's meta.json")
    p.add_argument("--data", default=None, help="the run's --data (default: the one in its meta.json)")
    p.add_argument("--seed", type=int, default=None, help="the run's --seed (default: the one in its meta.json)")
    p.add_argument("--no-append", action="store_true", help="print only; leave results.md alone")
    args = p.parse_args()
    run = Path(args.run)
    meta = json.loads((run / "meta.json").read_text())
    setting = args.setting or meta["setting"]
    if not (args.data or meta.get("data")):
        raise SystemExit("this run's meta.json does not name its data folder: pass --data")
    data = Path(args.data or meta["data"])
    seed = args.seed if args.seed is not None else meta.get("seed", 0)
    test = held_out_items(setting, data, meta["n_test"])
    if len(test) != meta["n_test"]:
        raise SystemExit(f"{data} gives {len(test)} test verses, the run had {meta['n_test']}; pass --data")
    cands = other_candidates(test, seed)
    table = by_kind_table(json.loads((run / "scores_other.json").read_text()), cands)
    print(table)
    if not args.no_append:
        with (run / "results.md").open("a", encoding="utf-8") as f:
            f.write("\n" + table)


if __name__ == "__main__":
    main()
