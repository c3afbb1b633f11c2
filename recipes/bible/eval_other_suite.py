"""Eval Other by error kind: sequence ranking (product, geo-mean, min) and word-level error detection.

    python -m recipes.bible.eval_other_suite --setting mt --model runs/mt/model --data data/bible \\
        --heads runs/mt_heads/heads --out runs/mt_error_suite

The candidates come from :mod:`error_suite` (the references of the held-out test books,
each with one MQM-style error put in at a known place, plus the next verse). Every head
under ``--heads`` and every baseline scores the same force-decoded candidates in one pass
per batch (``eval_self_study.token_study``). Reported per kind, with 95% bootstrap
intervals where they apply:

- ROC-AUC of the sequence score, references (1) against candidates of that kind (0);
- pairwise accuracy: how often a reference outscores its own corrupted version;
- word-level ROC-AUC of error detection: each word of the corrupted candidates scored by
  the product of its tokens' scores (a low score flags an error), against the words that
  carry the error;
- the same words through the WMT word-level QE metrics (``word_metrics``): MCC and F1 of
  BAD at a fixed word-probability cut (``--word-threshold``, 0.5 unless named: nothing is
  tuned on the test books) and average precision beside ROC-AUC, every interval from
  resampling source verses (all candidates of a verse together), not words.

Every interval resamples source verses (a verse's references, corrupted candidates and their
words stay together). Nothing here chooses a setting, so nothing is tuned on the test
books. Output:
``OUT/suite.json``, ``OUT/suite.md``, and per candidate ``OUT/candidates.json`` with
``OUT/sequence_scores.npz`` (every method's sequence score, for paired tests) and
``OUT/word_scores.npz`` (every method's word log-scores ``score:<method>``, the BAD labels
``bad`` and each word's candidate ``owner``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from sigmoid_head.evaluation.bootstrap import bootstrap_ci, clustered_ci
from sigmoid_head.evaluation.metrics import roc_auc
from sigmoid_head.evaluation.span_metrics import WeightedWords
from sigmoid_head.scoring.aggregate import words_of

from .error_suite import KINDS, make_suite, pairwise_accuracy
from .eval_self_study import (
    aggregate,
    eval_items,
    full_vocab_of,
    load_heads,
    render_for,
    token_log_scores,
    token_study,
)


def word_labels(tokenizer, tokens: dict[str, np.ndarray], cands: list[dict]
                ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, int]:
    """Word-level scores of every method over the corrupted candidates.

    Returns:
        method -> (W,) word log-scores, (W,) bad-word labels, (W,) candidate index per word, and
        how many corrupted candidates were skipped because the tokenizer's words did not line
        up with the whitespace words the error positions index.
    """
    logs = token_log_scores(tokens)
    seq = tokens["seq"]
    starts = np.searchsorted(seq, np.arange(len(cands) + 1))  # tokens of record i: starts[i]:starts[i+1]
    per_method: dict[str, list[float]] = {m: [] for m in logs}
    labels, owner, skipped = [], [], 0
    for i, c in enumerate(cands):
        if c["label"] == 1:
            continue
        a, b = starts[i], starts[i + 1]
        words = words_of(tokenizer, tokens["target"][a:b].tolist(), c["candidate"])
        if [w.text for w in words] != c["candidate"].split():
            skipped += 1
            continue
        bad = set(c["bad_words"])
        for j, w in enumerate(words):
            labels.append(j in bad)
            owner.append(i)
            for m, v in logs.items():
                per_method[m].append(float(v[a:b][w.tokens].sum()))
    return ({m: np.array(v) for m, v in per_method.items()}, np.array(labels, dtype=float),
            np.array(owner), skipped)


def word_level_metrics(word_scores: dict[str, np.ndarray], bad: np.ndarray, owner: np.ndarray,
                       cands: list[dict], threshold: float, n_boot: int) -> dict[str, dict]:
    """MCC, F1-BAD, ROC-AUC and AP of every method's word scores, intervals by source verse.

    Args:
        word_scores: method -> (W,) word log-scores (sum of the word's token log-probabilities).
        bad: (W,) 1 where the word carries the error.
        owner: (W,) candidate index of each word; the candidate's ``item`` is its source.
        cands: the suite's candidates.
        threshold: a word whose probability (exp of its log-score) is below it is BAD.
        n_boot: bootstrap resamples.

    Returns:
        method -> metric -> (value, CI low, CI high).
    """
    sources = np.array([cands[i]["item"] for i in owner])
    out = {}
    for m, v in word_scores.items():
        if m == "neg_entropy":
            continue
        prob = np.exp(v)
        words = WeightedWords(prob[:, None], bad[:, None], threshold)  # one word per item
        out[m] = clustered_ci(words.metrics, sources, n_boot, by_weight=True)
    return out


def run(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    render = render_for(args.setting)
    backbone, heads = load_heads(args.model, args.heads, args.only)
    items = eval_items(args.setting, Path(args.data), args.split)[: args.n_items]
    cands = make_suite(items, args.seed)
    tokens = token_study(backbone, heads, [{"source": c["source"], "candidate": c["candidate"]} for c in cands],
                         render, full_vocab=full_vocab_of(args))
    seq = aggregate(tokens, len(cands))
    np.savez_compressed(out / "sequence_scores.npz", **seq)  # per candidate, for paired tests
    (out / "candidates.json").write_text(json.dumps(cands, ensure_ascii=False))
    methods = [m for m in seq if m.endswith(("@mean", "@prod", "@min"))]
    kinds = [k for k in KINDS if any(c["kind"] == k for c in cands)]
    is_ref = np.array([c["kind"] == "reference" for c in cands])
    verse = np.array([c["item"] for c in cands])  # the resampling unit: the source verse
    report: dict = {"setting": args.setting, "split": args.split, "items": len(items), "heads": list(heads),
                    "counts": {k: sum(c["kind"] == k for c in cands) for k in ["reference", *kinds]},
                    "roc_auc": {}, "pairwise": {}, "word_auc": {}}
    for m in methods:
        v = seq[m]
        report["roc_auc"][m], report["pairwise"][m] = {}, {}
        for k in kinds:
            keep = is_ref | np.array([c["kind"] == k for c in cands])
            report["roc_auc"][m][k] = bootstrap_ci(roc_auc, v[keep], is_ref[keep].astype(float), n=args.boot,
                                                   groups=verse[keep])
            report["pairwise"][m][k] = pairwise_accuracy(v, cands, k)
        report["roc_auc"][m]["all"] = bootstrap_ci(roc_auc, v, is_ref.astype(float), n=args.boot, groups=verse)
    word_scores, bad, owner, skipped = word_labels(backbone.tokenizer, tokens, cands)
    report["word_level"] = {"words": int(bad.size), "bad_words": int(bad.sum()), "skipped_candidates": skipped}
    # per word, for paired tests and tables from committed data (recipes/bible/tables.py --pack words)
    np.savez_compressed(out / "word_scores.npz", **{f"score:{m}": v for m, v in word_scores.items()},
                        bad=bad, owner=owner)
    kind_of = np.array([cands[i]["kind"] for i in owner]) if owner.size else np.array([])
    word_verse = verse[owner] if owner.size else np.array([])
    for m, v in word_scores.items():
        if m == "neg_entropy":
            continue
        report["word_auc"][m] = {"all": bootstrap_ci(roc_auc, -v, bad, n=args.boot, groups=word_verse)}
        for k in kinds:
            sel = kind_of == k
            if k != "next verse" and sel.any() and 0 < bad[sel].sum() < sel.sum():
                report["word_auc"][m][k] = bootstrap_ci(roc_auc, -v[sel], bad[sel], n=args.boot,
                                                        groups=word_verse[sel])
    report["word_metrics"] = word_level_metrics(word_scores, bad, owner, cands, args.word_threshold,
                                                args.boot)
    report["word_threshold"] = args.word_threshold
    report["minutes"] = (time.perf_counter() - t0) / 60
    (out / "suite.json").write_text(json.dumps(report, indent=1))
    (out / "suite.md").write_text(markdown(report))
    print(markdown(report))
    return report


def markdown(r: dict) -> str:
    kinds = [k for k in r["counts"] if k != "reference"]
    counts = ", ".join(f"{n} {k}" for k, n in r["counts"].items())
    lines = [f"# Eval Other by error kind ({r['setting']}, {r['split']} books: {counts})", "",
             "## ROC-AUC, references against each kind (95% CI, resampling source verses)", "",
             "| method | " + " | ".join(kinds) + " | all |", "|---" * (len(kinds) + 2) + "|"]
    for m, row in r["roc_auc"].items():
        lines.append(f"| {m} | " + " | ".join(f"{row[k][0]:.3f}" for k in kinds) + f" | {_ci(row['all'])} |")
    lines += ["", "## Pairwise accuracy: a reference above its own corrupted version", "",
              "| method | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for m, row in r["pairwise"].items():
        lines.append(f"| {m} | " + " | ".join(f"{row[k]:.3f}" for k in kinds) + " |")
    w = r["word_level"]
    wk = [k for k in kinds if k != "next verse"]
    lines += ["", f"## Word-level error detection: ROC-AUC over {w['words']} words ({w['bad_words']} bad; "
              f"{w['skipped_candidates']} candidates skipped where tokens and words did not line up; "
              "95% CI resampling source verses)", "",
              "| method (word = product of its tokens) | " + " | ".join(wk) + " | all |",
              "|---" * (len(wk) + 2) + "|"]
    for m, row in r["word_auc"].items():
        lines.append(f"| {m} | " + " | ".join(f"{row[k][0]:.3f}" if k in row else "-" for k in wk)
                     + f" | {_ci(row['all'])} |")
    return "\n".join(lines + word_metrics_markdown(r)) + "\n"


def word_metrics_markdown(r: dict) -> list[str]:
    """The MCC / F1-BAD / ROC-AUC / AP table (empty for reports written before it existed)."""
    if not r.get("word_metrics"):
        return []
    lines = ["", f"## Word-level error detection, WMT word-level QE metrics (MCC and F1-BAD at word "
             f"probability < {r['word_threshold']:g}; 95% CIs resampling source verses)", "",
             "| method (word = product of its tokens) | MCC | F1-BAD | ROC-AUC | AP |", "|---|---|---|---|---|"]
    for m, row in r["word_metrics"].items():
        lines.append(f"| {m} | " + " | ".join(_ci(row[k]) for k in ("mcc", "f1_bad", "roc_auc", "ap")) + " |")
    return lines


def _ci(v) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setting", choices=["llm", "mt"], required=True)
    p.add_argument("--model", default=None)
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "data" / "bible"))
    p.add_argument("--heads", required=True, help="folder of saved heads (one sub-folder each)")
    p.add_argument("--only", default=None, help="comma-separated head folder names")
    p.add_argument("--full-vocab", default=None, metavar="HEADS",
                   help="comma-separated heads that also get the whole-vocabulary scores (rankpres, validmass, "
                        "headmax); default: every head; '' for none")
    p.add_argument("--split", default="test", choices=["dev", "test"])
    p.add_argument("--n-items", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--boot", type=int, default=1000)
    p.add_argument("--word-threshold", type=float, default=0.5,
                   help="word probability below which a word is BAD, for MCC and F1-BAD")
    p.add_argument("--out", required=True)
    return p


def main() -> None:
    run(parser().parse_args())


if __name__ == "__main__":
    main()
