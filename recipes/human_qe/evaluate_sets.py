"""Evaluate scored rows of a human-labelled set (issue 38): no model here, only numbers.

Input: the set's gold records (``build_data.py``'s JSONL) and the ``score --with-tokens``
rows of the same texts, in the same order, for a dev and a test split. Thresholds are
chosen on dev (per method, the one that maximises the figure it serves) and applied to
test once. Every figure carries a 95% interval from resampling sources.

* Segment level (every set): Pearson and Kendall of every sequence score (every method in
  every aggregation: product, mean log, min; minus the mean entropy; RAUQ) with the human
  score: minus HTER (WMT), the MQM score (MQM), minus the mean soft label (Mu-SHROOM).
* Word level (WMT, MQM): MCC, F1-BAD, ROC-AUC, AP of word scores against BAD words (WMT
  tags; MQM: a word touching an error span), spans: character and partial-credit (MPP)
  F1 (:mod:`sigmoid_head.evaluation.gold_eval`).
* Gaps (WMT): gap MCC etc. on their own (:mod:`sigmoid_head.evaluation.gold_wmt`; proxy gap
  score = the next word's score). Source tags: counted, with the plain message that the
  head gives no source-word scores.
* Mu-SHROOM: IoU of the predicted spans (threshold chosen on dev for IoU) and Spearman of
  the per-character probability (one minus the word score) with the soft labels.
* Paired tests (when a head's ``sigmoid`` scores are there): the head against every
  baseline on the set's primary figure, two-sided paired bootstrap over sources, Holm
  within that family.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from sigmoid_head.evaluation.bootstrap import clustered_ci, paired_bootstrap
from sigmoid_head.evaluation.gold_eval import evaluate_gold, gold_word_bad, gold_word_scores
from sigmoid_head.evaluation.gold_formats import GoldItem
from sigmoid_head.evaluation.gold_shroom import (
    ShroomItem,
    char_probs,
    iou,
    probs_from_words,
    spearman,
)
from sigmoid_head.evaluation.gold_wmt import NO_SOURCE_SCORES, gap_scores
from sigmoid_head.evaluation.metrics import pearson
from sigmoid_head.evaluation.pvalues import add_holm
from sigmoid_head.evaluation.span_metrics import WeightedWords, mcc
from sigmoid_head.evaluation.weighted_kendall import WeightedKendall

KIND = {"mlqe-roen-word": "wmt", "mqm-ted-zhen": "mqm", "mushroom-en": "shroom"}
NOT_SCORES = {"n_tokens", "dominant_mean"}
PRIMARY = {"wmt": "word MCC", "mqm": "segment Pearson (mean log)", "shroom": "IoU"}
"""The figure each set's paired tests use, declared before any test run."""


# ----------------------------------------------------------------------------- gold
def items_of(kind: str, rows: Sequence[dict]) -> list[GoldItem]:
    """The gold records as :class:`GoldItem` (spans, word tags, gaps, soft labels)."""
    from sigmoid_head.evaluation.gold_wmt import run_spans

    out: list[GoldItem] = []
    for r in rows:
        if kind == "wmt":
            out.append(
                GoldItem(
                    r["candidate"],
                    run_spans(r["candidate"], r["word_bad"]),
                    r["group"],
                    r["source"],
                    r["word_bad"],
                    r.get("gap_bad"),
                )
            )
        elif kind == "mqm":
            out.append(
                GoldItem(
                    r["candidate"],
                    r["spans"],
                    r["group"],
                    r["source"],
                    omissions=r.get("omissions", []),
                )
            )
        else:
            out.append(
                ShroomItem(
                    r["candidate"],
                    r["spans"],
                    r["group"],
                    r["source"],
                    soft_labels=r["soft_labels"],
                    question=r["source"],
                    item_id=r["id"],
                )
            )
    return out


def human_scores(kind: str, rows: Sequence[dict]) -> np.ndarray:
    """(N,) human quality, higher = better."""
    if kind == "wmt":
        return np.asarray(
            [
                -float(r["hter"]) if r.get("hter") is not None else -float(np.mean(r["word_bad"]))
                for r in rows
            ]
        )
    if kind == "mqm":
        return np.asarray([float(r["mqm"]) for r in rows])
    return np.asarray(
        [
            -float(char_probs(len(r["candidate"]), r["soft_labels"]).mean())
            if r["candidate"]
            else 0.0
            for r in rows
        ]
    )


# ----------------------------------------------------------------------------- fields
def sequence_fields(scored: Sequence[dict]) -> dict[str, float]:
    """Sequence-score fields of the rows -> sign that makes higher = better."""
    first = scored[0]
    out = {}
    for k, v in first.items():
        if k in NOT_SCORES or not isinstance(v, int | float) or isinstance(v, bool):
            continue
        out[k] = -1.0 if k.startswith("entropy") else 1.0
    return out


def word_methods(scored: Sequence[dict]) -> list[str]:
    """Methods with word scores (``words[].<m>``)."""
    w = next((r["words"][0] for r in scored if r.get("words")), {})
    return [
        k
        for k, v in w.items()
        if k not in ("word", "start", "end")
        and isinstance(v, int | float)
        and not isinstance(v, bool)
    ]


def item_groups(items: Sequence[GoldItem]) -> np.ndarray:
    """Each item's source group (the bootstrap's cluster)."""
    return np.asarray([it.group for it in items])


# ----------------------------------------------------------------------------- segment level
def segment_table(
    scored: Sequence[dict], human: np.ndarray, groups: np.ndarray, n_boot: int
) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Per sequence field: Pearson and Kendall with the human score, intervals over sources."""
    out = {}
    for field, sign in sequence_fields(scored).items():
        x = sign * np.asarray([float(r[field]) for r in scored])
        x = np.where(np.isfinite(x), x, np.nanmin(x[np.isfinite(x)]) if np.isfinite(x).any() else 0)

        tau = WeightedKendall(x, human)  # merged once: a resample is O(N), no sort

        def stat(idx: np.ndarray, x: np.ndarray = x, tau: WeightedKendall = tau) -> dict[str, float]:
            with warnings.catch_warnings():  # a constant resample gives NaN, dropped
                warnings.simplefilter("ignore", UserWarning)
                return {
                    "pearson": pearson(x[idx], human[idx]),
                    "kendall": tau(np.bincount(idx, minlength=x.size)),
                }

        out[field if sign > 0 else f"-{field}"] = clustered_ci(stat, groups, n_boot)
    return out


# ----------------------------------------------------------------------------- thresholds
def _grid(scores: np.ndarray, n: int = 60, top: float = 0.8) -> np.ndarray:
    """Candidate thresholds: the scores' 1st to ``100 * top``-th percentiles (a threshold
    just above each, so that at most about ``top`` of the words are flagged), and 0.5."""
    s = scores[np.isfinite(scores)]
    if s.size == 0:
        return np.asarray([0.5])
    q = np.unique(np.quantile(s, np.linspace(0.01, top, n)))
    return np.unique(np.r_[q * (1 + 1e-9) + 1e-300, 0.5])


def pick_threshold(scores: np.ndarray, bad: np.ndarray) -> float:
    """The threshold (a score below it is BAD) with the highest MCC on these scores."""
    best, thr = -math.inf, 0.5
    for t in _grid(scores):
        m = mcc(scores < t, bad)
        if m > best:
            best, thr = m, float(t)
    return thr


def flat_words(scored: Sequence[dict], items: Sequence[GoldItem], m: str):
    """Per item: method ``m``'s word scores and the gold BAD tags."""
    s = [gold_word_scores(r, m) for r in scored]
    b = [gold_word_bad(it) for it in items]
    return s, b


# ----------------------------------------------------------------------------- sets
def word_level(dev: tuple, test: tuple, methods: list[str], n_boot: int) -> dict[str, Any]:
    """Dev thresholds per method (word MCC), then the test's word/span figures."""
    thr = {}
    for m in methods:
        s, b = flat_words(dev[0], dev[1], m)
        thr[m] = pick_threshold(np.concatenate(s), np.concatenate(b))
    res = evaluate_gold(test[0], test[1], methods=methods, thresholds=thr, n_boot=n_boot)
    flagged = {}
    for m in methods:  # share of test words below the dev-chosen threshold
        s = np.concatenate(flat_words(test[0], test[1], m)[0])
        flagged[m] = float(np.mean(s < thr[m])) if s.size else math.nan
    return {
        "thresholds": thr,
        "flagged": flagged,
        "methods": res["methods"],
        "counts": {
            k: res[k]
            for k in ("n_items", "n_sources", "n_words", "n_bad_words", "n_spans", "omissions")
        },
    }


def gap_level(dev: tuple, test: tuple, methods: list[str], n_boot: int) -> dict[str, Any]:
    """Gap figures per method (proxy gap score, dev threshold on gap MCC)."""

    def gaps(scored, items, m):
        s = [gap_scores(x) for x in flat_words(scored, items, m)[0]]
        return s, [np.asarray(it.gap_tags, dtype=float) for it in items]

    out: dict[str, Any] = {"methods": {}, "thresholds": {}}
    groups = item_groups(test[1])
    for m in methods:
        ds, dg = gaps(*dev, m)
        t = pick_threshold(np.concatenate(ds), np.concatenate(dg))
        ts, tg = gaps(*test, m)

        words = WeightedWords(ts, tg, t)  # ranked once: each resample is O(gaps)

        def stat(drawn: np.ndarray, words: WeightedWords = words) -> dict[str, float]:
            return {f"gap_{k}": v for k, v in words.metrics(drawn).items()}

        out["thresholds"][m] = t
        out["methods"][m] = clustered_ci(stat, groups, n_boot, by_weight=True)
    tg = np.concatenate([np.asarray(it.gap_tags) for it in test[1]])
    out["counts"] = {"n_gaps": int(tg.size), "n_bad_gaps": int(tg.sum())}
    return out


def shroom_item_scores(scored, items, m: str, t: float) -> np.ndarray:
    """(N, 2) per-answer IoU (words scored below ``t`` are hallucinated) and Spearman."""
    rows = []
    for r, it in zip(scored, items, strict=True):
        spans = [
            (int(w["start"]), int(w["end"]))
            for w in r["words"]
            if w.get("start") is not None and float(w[m]) < t
        ]
        probs = probs_from_words(r["candidate"], r["words"], m)
        rows.append(
            [iou(spans, it.spans), spearman(probs, char_probs(len(it.text), it.soft_labels))]
        )
    return np.asarray(rows, dtype=np.float64).reshape(-1, 2)


def _shroom_uncapped(dev: tuple, test: tuple, m: str) -> dict[str, float]:
    """Test IoU and share of words flagged at the dev IoU-best threshold of a grid that runs
    up to every word flagged (the 100th percentile), not the 80th."""
    cand = np.concatenate([[float(w[m]) for w in r["words"]] for r in dev[0] if r["words"]])
    best, thr = -math.inf, 0.5
    for t in _grid(cand, 30, top=1.0):
        v = shroom_item_scores(dev[0], dev[1], m, float(t))[:, 0].mean()
        if v > best:
            best, thr = v, float(t)
    words = np.asarray(
        [float(w[m]) for r in test[0] for w in r["words"] if w.get("start") is not None]
    )
    return {
        "iou": float(shroom_item_scores(test[0], test[1], m, thr)[:, 0].mean()),
        "flagged": float(np.mean(words < thr)) if words.size else math.nan,
        "threshold": thr,
    }


def shroom_level(dev: tuple, test: tuple, methods: list[str], n_boot: int) -> dict[str, Any]:
    """Per method: dev threshold for IoU; test IoU and Spearman (per answer, averaged)."""
    out: dict[str, Any] = {"methods": {}, "thresholds": {}, "per_item": {}}
    groups = item_groups(test[1])
    for m in methods:
        cand = np.concatenate([[float(w[m]) for w in r["words"]] for r in dev[0] if r["words"]])
        best, thr = -math.inf, 0.5
        for t in _grid(cand, 30):
            v = shroom_item_scores(dev[0], dev[1], m, float(t))[:, 0].mean()
            if v > best:
                best, thr = v, float(t)
        per = shroom_item_scores(test[0], test[1], m, thr)

        def stat(idx: np.ndarray, per: np.ndarray = per) -> dict[str, float]:
            return {"iou": float(per[idx, 0].mean()), "spearman": float(per[idx, 1].mean())}

        out["thresholds"][m] = thr
        out["methods"][m] = clustered_ci(stat, groups, n_boot)
        out["per_item"][m] = per.tolist()
        words = [float(w[m]) for r in test[0] for w in r["words"] if w.get("start") is not None]
        out.setdefault("flagged", {})[m] = (
            float(np.mean(np.asarray(words) < thr)) if words else math.nan
        )
    out["uncapped"] = {m: _shroom_uncapped(dev, test, m) for m in methods}
    out["reference"] = {}
    for name, whole in (("mark all", True), ("mark none", False)):
        per = np.asarray([iou([(0, len(it.text))] if whole else [], it.spans) for it in test[1]])

        def ref(idx: np.ndarray, per: np.ndarray = per) -> dict[str, float]:
            return {"iou": float(per[idx].mean())}

        out["reference"][name] = clustered_ci(ref, groups, n_boot)
    return out


# ----------------------------------------------------------------------------- paired tests
def paired_tests(
    kind: str, test: tuple, human: np.ndarray, result: dict, n_boot: int
) -> dict[str, Any] | None:
    """The head (``sigmoid``) against every other method on the set's primary figure."""
    scored, items = test
    groups = item_groups(items)
    tests: dict[str, Any] = {}
    if kind == "wmt":
        thr = result["word"]["thresholds"]
        if "sigmoid" not in thr:
            return None
        bad = np.concatenate([gold_word_bad(it) for it in items])
        wg = np.concatenate([[it.group] * len(gold_word_bad(it)) for it in items])

        def pred(m: str) -> np.ndarray:
            return (np.concatenate(flat_words(scored, items, m)[0]) < thr[m]).astype(float)

        for m in thr:
            if m != "sigmoid":
                tests[m] = paired_bootstrap(mcc, pred("sigmoid"), pred(m), bad, n=n_boot, groups=wg)
    elif kind == "mqm":
        fields = [f for f in sequence_fields(scored) if f.endswith("_mean_log")]
        if "sigmoid_mean_log" not in fields:
            return None
        x = {f: np.asarray([float(r[f]) for r in scored]) for f in fields}
        x["-entropy_mean"] = -np.asarray([float(r.get("entropy_mean", 0.0)) for r in scored])
        for f in x:
            if f != "sigmoid_mean_log":
                tests[f] = paired_bootstrap(
                    pearson, x["sigmoid_mean_log"], x[f], human, n=n_boot, groups=groups
                )
    else:
        per = result["shroom"]["per_item"]
        if "sigmoid" not in per:
            return None
        for m in per:
            if m != "sigmoid":
                a, b = np.asarray(per["sigmoid"])[:, 0], np.asarray(per[m])[:, 0]
                tests[m] = paired_bootstrap(
                    lambda p, g: float(np.mean(p)), a, b, np.zeros_like(a), n=n_boot, groups=groups
                )
    add_holm(tests, f"{PRIMARY[kind]}: sigmoid vs each baseline (two-sided, Holm)")
    return tests


def evaluate_set(
    name: str,
    dev_rows: Sequence[dict],
    dev_scored: Sequence[dict],
    test_rows: Sequence[dict],
    test_scored: Sequence[dict],
    n_boot: int = 1000,
    kind: str | None = None,
) -> dict[str, Any]:
    """Every figure of one set (module docstring); ``kind`` (``wmt``, ``mqm``, ``shroom``)
    for a set that is not one of :data:`KIND` (a user's own gold file)."""
    kind = kind or KIND[name]
    dev = (list(dev_scored), items_of(kind, dev_rows))
    test = (list(test_scored), items_of(kind, test_rows))
    for scored, rows in ((dev[0], dev_rows), (test[0], test_rows)):
        for s, r in zip(scored, rows, strict=True):
            if s["candidate"] != r["candidate"]:
                raise ValueError(f"{r['id']}: scored text differs from the gold text")
    human = human_scores(kind, test_rows)
    methods = word_methods(test[0])
    res: dict[str, Any] = {
        "set": name,
        "kind": kind,
        "primary": PRIMARY[kind],
        "n_dev": len(dev_rows),
        "n_test": len(test_rows),
        "segment": segment_table(test[0], human, item_groups(test[1]), n_boot),
    }
    if kind in ("wmt", "mqm"):
        res["word"] = word_level(dev, test, methods, n_boot)
    if kind == "wmt" and all(it.gap_tags is not None for it in [*dev[1], *test[1]]):
        res["gaps"] = gap_level(dev, test, methods, n_boot)
    if kind == "wmt":
        n_src = sum(len(r.get("source_bad") or []) for r in test_rows)
        n_bad = sum(sum(r.get("source_bad") or []) for r in test_rows)
        res["source_tags"] = f"{NO_SOURCE_SCORES} ({n_src} source words, {n_bad} BAD)"
    if kind == "shroom":
        res["shroom"] = shroom_level(dev, test, methods, n_boot)
    res["paired"] = paired_tests(kind, test, human, res, n_boot)
    return res
