"""The best head against the best baseline on Eval Other, both chosen on the dev books.

    python -m recipes.bible.compare_other --dev runs/suite_dev --test runs/suite_test

Reads two ``eval_other_suite.py`` outputs (the same heads, ``--split dev`` and ``--split
test``). On dev, the head method and the baseline with the highest ROC-AUC (references
against every corrupted candidate) are chosen, each in its best aggregation; on test the
two are compared by a paired bootstrap of the ROC-AUC over source verses (a verse's
candidates stay together), overall and per error kind: two-sided p-values, Holm-corrected
within the family of this table (the head against the baseline on every row). Nothing is
chosen on the test books.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from sigmoid_head.evaluation.bootstrap import paired_bootstrap
from sigmoid_head.evaluation.metrics import roc_auc
from sigmoid_head.evaluation.pvalues import add_holm, describe_p

BASELINES = ("softmax", "boostedprob", "entropy", "rauq")


def load(folder: Path) -> tuple[dict[str, np.ndarray], list[dict]]:
    scores = dict(np.load(folder / "sequence_scores.npz"))
    return scores, json.loads((folder / "candidates.json").read_text())


def choose(scores: dict[str, np.ndarray], cands: list[dict]) -> tuple[str, str]:
    """(best head method, best baseline) by ROC-AUC over all candidates."""
    labels = np.array([c["label"] for c in cands], dtype=float)
    auc = {m: roc_auc(v, labels) for m, v in scores.items() if m.endswith(("@mean", "@prod", "@min"))}
    base = [m for m in auc if m.split("@")[0] in BASELINES]
    heads = [m for m in auc if m not in base]
    return max(heads, key=auc.get), max(base, key=auc.get)


def compare(dev: Path, test: Path, n_boot: int = 1000) -> dict:
    head, base = choose(*load(dev))
    scores, cands = load(test)
    labels = np.array([c["label"] for c in cands], dtype=float)
    verse = np.array([c["item"] for c in cands])
    out = {"head": head, "baseline": base, "kinds": {}}
    kinds = ["all", *sorted({c["kind"] for c in cands if c["label"] == 0})]
    for kind in kinds:
        keep = np.array([c["label"] == 1 or kind in ("all", c["kind"]) for c in cands])
        out["kinds"][kind] = {"n": int(keep.sum()), "head": roc_auc(scores[head][keep], labels[keep]),
                              "baseline": roc_auc(scores[base][keep], labels[keep]),
                              **paired_bootstrap(roc_auc, scores[head][keep], scores[base][keep], labels[keep],
                                                 n=n_boot, groups=verse[keep])}
    add_holm(out["kinds"], f"{head} vs {base}, every row of this table")
    return out


def markdown(r: dict) -> str:
    lines = [f"Head `{r['head']}` against baseline `{r['baseline']}` (both chosen on dev), test books, "
             "ROC-AUC with a paired bootstrap over source verses:", "",
             "| kind | head | baseline | delta [95% CI] | p |", "|---|---|---|---|---|"]
    for k, v in r["kinds"].items():
        lines.append(f"| {k} | {v['head']:.3f} | {v['baseline']:.3f} | {v['delta']:+.3f} "
                     f"[{v['ci_low']:+.3f}, {v['ci_high']:+.3f}] | {describe_p(v, family=False)} |")
    family = next(iter(r["kinds"].values()))["family"]
    return "\n".join([*lines, "", f"Holm family: {family}."]) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dev", type=Path, required=True, help="eval_other_suite.py output, --split dev")
    p.add_argument("--test", type=Path, required=True, help="eval_other_suite.py output, --split test")
    p.add_argument("--boot", type=int, default=1000)
    args = p.parse_args()
    r = compare(args.dev, args.test, args.boot)
    (args.test / "compare.json").write_text(json.dumps(r, indent=1))
    (args.test / "compare.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
