"""Does the head carry information the softmax side lacks? (issue 49, item 4)

From the committed per-item scores only (no model runs here): a model fitted on dev over
the features every row already has, once WITHOUT and once WITH the head's features, test
scored once; the two are compared with a paired bootstrap over sources.

* Word level (WMT ro-en word tags; MQM zh-en words touching an error span): logistic
  regression of BAD. Features without the head: the log word probability of the softmax,
  BoostedProb and RAUQ (the word's own and its left and right neighbours' softmax), the
  word's length in characters, whether it has no letter or digit, its relative position,
  the number of words, and the segment's mean softmax log-probability, mean entropy and
  mean dominant-token count (the rows keep no per-token entropy or dominant count). With
  the head: the same plus the head's log word score (its own and its neighbours') and its
  mean log-probability over the segment.
* Segment level (minus HTER on WMT; the MQM score on MQM): ridge regression. Features
  without the head: every softmax-side sequence score of the row (product, mean log and
  minimum of softmax, BoostedProb and RAUQ), the mean entropy, the mean dominant count and
  the log token count; with the head: plus the head's three.

Regularisation (C for the logistic regression, alpha for the ridge) is chosen on dev by
5-fold cross-validation over dev sources (folds never split a source; word level: average
precision, segment level: mean squared error); the model is then fitted on all of dev. The
word threshold (a word is BAD when its predicted probability is above it) is the MCC-best
on the out-of-fold dev predictions. Test figures: word MCC at that threshold (the tested
figure), ROC-AUC and AP beside it; segment Pearson (tested) and Kendall. Family of the
paired tests: the four "with minus without" deltas (two sets, two levels), two-sided,
Holm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sigmoid_head.evaluation.gold_eval import gold_word_bad, gold_word_scores, gold_word_scores_many
from sigmoid_head.evaluation.gold_formats import GoldItem, whitespace_words
from sigmoid_head.evaluation.word_features import no_alnum

FLOOR = 1e-12
WORD_METHODS = ("softmax", "boostedprob", "rauq")
SEQ_BASE = tuple(f"{m}_{a}" for m in WORD_METHODS for a in ("logprob", "mean_log", "min"))
SEQ_HEAD = ("sigmoid_logprob", "sigmoid_mean_log", "sigmoid_min")
SEQ_EXTRA = ("entropy_mean", "dominant_mean", "log(n_tokens + 1)")
C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
ALPHA_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
WORD_FEATURES = (
    "log word probability of the softmax", "of BoostedProb", "of RAUQ",
    "the softmax's of the left neighbour", "of the right neighbour", "length in characters",
    "no letter or digit", "relative position", "log(number of words + 1)",
    "segment mean softmax log-probability", "segment mean entropy", "segment mean dominant count",
)
"""The columns of :func:`word_features` without the head, in order (the page prints them)."""
HEAD_WORD_FEATURES = ("the head's log word score", "its left neighbour's", "its right neighbour's",
                      "the head's segment mean log-probability")
"""The columns :func:`word_features` adds with the head."""
FAMILY = "with minus without the head's features: word MCC and segment Pearson, two sets (two-sided, Holm)"


def _log(x: np.ndarray) -> np.ndarray:
    return np.log(np.clip(np.asarray(x, dtype=np.float64), FLOOR, 1.0))


def _neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) neighbour of every entry of a (W,) array (the word's own at the ends)."""
    if x.size == 0:
        return x, x
    return np.r_[x[:1], x[:-1]], np.r_[x[1:], x[-1:]]


def word_features(row: dict, item: GoldItem, head: bool) -> np.ndarray:
    """(W, F) features of the whitespace words of one scored text (module docstring)."""
    boxes = whitespace_words(item.text)
    n = len(boxes)
    scores = gold_word_scores_many(row, (*WORD_METHODS, *(("sigmoid",) if head else ())))
    cols = [_log(s) for s in scores[: len(WORD_METHODS)]]
    cols += list(_neighbours(cols[0]))
    cols.append(np.asarray([e - s for s, e in boxes], dtype=np.float64))
    cols.append(np.asarray([no_alnum(item.text, s, e) for s, e in boxes], float))
    cols.append(np.arange(n) / max(n - 1, 1))
    for v in (math.log(n + 1), row["softmax_mean_log"], row["entropy_mean"], row["dominant_mean"]):
        cols.append(np.full(n, float(v)))
    if head:
        cols += head_word_columns(row, scores[-1])
    if len(cols) != len(WORD_FEATURES) + (len(HEAD_WORD_FEATURES) if head else 0):
        raise AssertionError("word_features and WORD_FEATURES disagree")
    return np.stack(cols, axis=1) if n else np.zeros((0, len(cols)))


def head_word_columns(row: dict, sigmoid: np.ndarray | None = None) -> list[np.ndarray]:
    """The head's own word columns of :func:`word_features` (``HEAD_WORD_FEATURES``): its
    log-probability, its neighbours' and the text's mean log-probability (``sigmoid``: the
    row's word scores of the head, when already read)."""
    own = _log(gold_word_scores(row, "sigmoid") if sigmoid is None else sigmoid)
    return [own, *_neighbours(own), np.full(own.size, float(row["sigmoid_mean_log"]))]


def segment_features(rows: Sequence[dict], head: bool) -> np.ndarray:
    """(N, F) sequence features of the rows (module docstring)."""
    keys = SEQ_BASE + (SEQ_HEAD if head else ())
    out = []
    for r in rows:
        v = [math.log(max(float(r[k]), FLOOR)) if k.endswith("_min") else float(r[k]) for k in keys]
        v += [
            float(r["entropy_mean"]),
            float(r["dominant_mean"]),
            math.log(float(r["n_tokens"]) + 1),
        ]
        out.append(v)
    x = np.asarray(out, dtype=np.float64)
    return np.where(np.isfinite(x), x, math.log(FLOOR))


def word_data(
    rows: Sequence[dict], items: Sequence[GoldItem], head: bool, memo: dict | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X (W, F), BAD (W,), source of each word (W,)) over every text. ``memo``: a dict the
    caller keeps across calls on overlapping row lists (each row's features computed once;
    keyed by the row object, which must not change meanwhile)."""
    if memo is None:
        xs = [word_features(r, it, head) for r, it in zip(rows, items, strict=True)]
    else:
        xs = []
        for r, it in zip(rows, items, strict=True):
            kept = memo.get((id(r), head))
            if kept is None or kept[0] is not r:
                kept = memo[(id(r), head)] = (r, word_features(r, it, head))
            xs.append(kept[1])
    ys = [gold_word_bad(it) for it in items]
    gs = [np.asarray([it.group] * len(y), dtype=object) for it, y in zip(items, ys, strict=True)]
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(gs)


def _folds(groups: np.ndarray, k: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import GroupKFold

    return list(GroupKFold(n_splits=k).split(np.zeros(len(groups)), groups=groups))


def fit_word(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[Any, float, np.ndarray]:
    """(model fitted on all of dev, chosen C, out-of-fold dev probabilities of BAD)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def model(c: float):
        return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))

    folds = _folds(groups)
    best, best_c, best_oof = -math.inf, C_GRID[0], np.zeros(len(y))
    for c in C_GRID:
        oof = np.zeros(len(y))
        for tr, va in folds:
            oof[va] = model(c).fit(x[tr], y[tr]).predict_proba(x[va])[:, 1]
        ap = average_precision_score(y, oof)
        if ap > best:
            best, best_c, best_oof = ap, c, oof
    return model(best_c).fit(x, y), best_c, best_oof


def fit_segment(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[Any, float]:
    """(ridge fitted on all of dev, chosen alpha), alpha by cross-validated MSE over sources."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def model(a: float):
        return make_pipeline(StandardScaler(), Ridge(alpha=a))

    folds = _folds(groups)
    errors = {
        a: sum(
            float(np.sum((model(a).fit(x[tr], y[tr]).predict(x[va]) - y[va]) ** 2))
            for tr, va in folds
        )
        for a in ALPHA_GRID
    }
    alpha = min(errors, key=errors.get)
    return model(alpha).fit(x, y), alpha


def split_rows(name: str, split: str, point: str | None = None) -> tuple[list[dict], list[GoldItem]]:
    """The committed scored rows and gold items of one split of a set; with ``point``, the
    head columns of that learning-curve point (on the texts it scored)."""
    from .committed import RESULTS, gold_rows, joined, read_jsonl_gz, with_head
    from .evaluate_sets import KIND, items_of

    gold = gold_rows(name, split, None)
    if gold is None:
        raise SystemExit(f"{name}: no committed gold")
    base = read_jsonl_gz(RESULTS / name / f"{split}.scores.jsonl.gz")
    if point is None:
        return joined(gold, base), items_of(KIND[name], gold)
    from .curve import CURVE

    head = read_jsonl_gz(CURVE / point / name / f"{split}.scores.jsonl.gz")
    keep = {h["id"] for h in head}
    gold = [g for g in gold if g["id"] in keep]
    rows = with_head(joined(gold, [b for b in base if b["id"] in keep]), head)
    return rows, items_of(KIND[name], gold)


def word_level(name: str, point: str | None = None) -> dict[str, Any]:
    """Dev-fitted logistic regressions without and with the head; test predictions."""
    from .evaluate_sets import pick_threshold

    (drows, ditems), (trows, titems) = split_rows(name, "dev", point), split_rows(name, "test", point)
    out: dict[str, Any] = {}
    for label, head in (("without", False), ("with", True)):
        x, y, g = word_data(drows, ditems, head)
        model, c, oof = fit_word(x, y, g)
        thr = pick_threshold(1.0 - oof, y)
        tx, ty, tg = word_data(trows, titems, head)
        p = model.predict_proba(tx)[:, 1]
        out[label] = {"C": c, "threshold": thr, "p_bad": p, "pred": (1.0 - p) < thr}
    soft_dev = np.concatenate([gold_word_scores(r, "softmax") for r in drows])
    soft_test = np.concatenate([gold_word_scores(r, "softmax") for r in trows])
    out["softmax"] = {
        "pred": soft_test < pick_threshold(soft_dev, y_dev(ditems)),
        "p_bad": -soft_test,
    }
    out["bad"], out["groups"] = ty, tg
    return out


def y_dev(items: Sequence[GoldItem]) -> np.ndarray:
    return np.concatenate([gold_word_bad(it) for it in items])


def segment_level(name: str, point: str | None = None) -> dict[str, Any]:
    """Dev-fitted ridge regressions without and with the head; test predictions."""
    from .evaluate_sets import KIND, human_scores

    kind = KIND[name]
    (drows, ditems), (trows, titems) = split_rows(name, "dev", point), split_rows(name, "test", point)
    from .committed import gold_rows

    def human(split: str, rows: list[dict]) -> np.ndarray:
        ids = {r["id"] for r in rows}
        return human_scores(kind, [g for g in gold_rows(name, split, None) if g["id"] in ids])

    hd, ht = human("dev", drows), human("test", trows)
    gd, gt = (np.asarray([it.group for it in items]) for items in (ditems, titems))
    out: dict[str, Any] = {}
    for label, head in (("without", False), ("with", True)):
        model, alpha = fit_segment(segment_features(drows, head), hd, gd)
        out[label] = {"alpha": alpha, "pred": model.predict(segment_features(trows, head))}
    out["softmax"] = {"pred": np.asarray([float(r["softmax_mean_log"]) for r in trows])}
    out["human"], out["groups"] = ht, gt
    out["library"] = library_model(drows, hd, trows, ht)
    for label, head in (("narrow_without", False), ("narrow_with", True)):
        model, alpha = fit_segment(narrow_features(drows, head), hd, gd)
        out[label] = {"alpha": alpha, "pred": model.predict(narrow_features(trows, head))}
    return out


NARROW = ("log(n_tokens + 1)", "softmax_mean_log", "entropy_mean", "dominant_mean")
"""A narrower segment model outside the family (issue 58: the page once listed these for it by
mistake; with the head, plus ``sigmoid_mean_log``): how much the answer depends on the rest."""


def narrow_features(rows: Sequence[dict], head: bool) -> np.ndarray:
    x = np.asarray([[math.log(float(r["n_tokens"]) + 1), float(r["softmax_mean_log"]), float(r["entropy_mean"]),
                     float(r["dominant_mean"]), *([float(r["sigmoid_mean_log"])] if head else [])] for r in rows])
    return np.where(np.isfinite(x), x, math.log(FLOOR))


def library_model(drows: list[dict], hd: np.ndarray, trows: list[dict], ht: np.ndarray) -> dict:
    """What ``sigmoid-head calibrate --quality-model`` fits on the same dev rows (without
    and with the head's columns), scored once on test: its test Pearson and whether it
    would have been saved (its own dev bar)."""
    from sigmoid_head.evaluation.metrics import pearson
    from sigmoid_head.evaluation.quality_model import fit_quality_model

    out = {}
    for label, head in (("without", False), ("with", True)):
        def keep(r: dict, head: bool = head) -> dict:
            return {k: v for k, v in r.items() if head or not k.startswith("sigmoid")}

        model, info = fit_quality_model([keep(r) for r in drows], hd)
        out[label] = {"pearson": pearson(model.predict([keep(r) for r in trows]), ht),
                      "saved": info["beats"], "features": len(model.features),
                      "dev_cv_pearson": info["cv_pearson"]}
    return out


SETS = ("mlqe-roen-word", "mqm-ted-zhen")
BLOCK = "human-qe-combination"


def results(n_boot: int = 1000, point: str | None = None) -> dict[str, Any]:
    """Every figure of the comparison (module docstring), JSON-ready, with the paired tests;
    with ``point``, the head's features are that learning-curve point's (on its texts)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.metrics import kendall, pearson
    from sigmoid_head.evaluation.pvalues import add_holm
    from sigmoid_head.evaluation.span_metrics import mcc

    family = FAMILY if point is None else f"{FAMILY}; the head of curve point {point}"
    out: dict[str, Any] = {"family": family, "n_boot": n_boot, "point": point, "sets": {}}
    tests: dict[str, dict] = {}
    for name in SETS:
        w, s = word_level(name, point), segment_level(name, point)
        entry: dict[str, Any] = {"word": {}, "segment": {}}
        for k in ("without", "with", "softmax"):
            entry["word"][k] = {
                "mcc": mcc(w[k]["pred"], w["bad"]),
                "roc_auc": float(roc_auc_score(w["bad"], w[k]["p_bad"])),
                "ap": float(average_precision_score(w["bad"], w[k]["p_bad"])),
                **{p: w[k][p] for p in ("C", "threshold") if p in w[k]},
            }
            entry["segment"][k] = {
                "pearson": pearson(s[k]["pred"], s["human"]),
                "kendall": kendall(s[k]["pred"], s["human"]),
                **({"alpha": s[k]["alpha"]} if "alpha" in s[k] else {}),
            }
        entry["library"] = s["library"]
        narrow = paired_bootstrap(pearson, s["narrow_with"]["pred"], s["narrow_without"]["pred"], s["human"],
                                  n=n_boot, groups=s["groups"])
        entry["narrow_segment"] = {"without": pearson(s["narrow_without"]["pred"], s["human"]),
                                   "with": pearson(s["narrow_with"]["pred"], s["human"]),
                                   **{k: narrow[k] for k in ("delta", "ci_low", "ci_high", "p_value", "p_normal")}}
        entry["counts"] = {
            "test_words": int(w["bad"].size),
            "test_bad": int(w["bad"].sum()),
            "test_segments": int(s["human"].size),
            "test_sources": int(len(set(s["groups"].tolist()))),
        }
        tests[f"{name} word MCC"] = paired_bootstrap(
            mcc,
            w["with"]["pred"].astype(float),
            w["without"]["pred"].astype(float),
            w["bad"],
            n=n_boot,
            groups=w["groups"],
        )
        tests[f"{name} segment Pearson"] = paired_bootstrap(
            pearson,
            s["with"]["pred"],
            s["without"]["pred"],
            s["human"],
            n=n_boot,
            groups=s["groups"],
        )
        out["sets"][name] = entry
    add_holm(tests, family)
    out["tests"] = tests
    return out


def block(res: dict[str, Any]) -> str:
    """The page's table of :func:`results`."""
    from .committed import fmt_p

    lines = [
        "| set | level | softmax alone | without the head | with the head | delta (with - without) "
        "| 95% CI | p | Holm p | Holm p (normal) | beside it (without / with) | chosen on dev |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in res["sets"].items():
        for level, fig, second in (("word", "mcc", "ap"), ("segment", "pearson", "kendall")):
            e, t = (
                entry[level],
                res["tests"][f"{name} {'word MCC' if level == 'word' else 'segment Pearson'}"],
            )
            reg = "C" if level == "word" else "alpha"
            lines.append(
                f"| {name} | {level} {fig} | {e['softmax'][fig]:.3f} | {e['without'][fig]:.3f} "
                f"| {e['with'][fig]:.3f} | {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
                f"| {fmt_p(t['p_value'], t['n_boot'])} | {fmt_p(t['p_holm'], t['n_boot'])} | {t['p_holm_normal']:.2g} "
                f"| {second} {e['without'][second]:.3f} / {e['with'][second]:.3f} "
                f"| {reg} {e['without'][reg]:g} / {e['with'][reg]:g} |"
            )
    lib = "; ".join(
        f"{n}: {e['library']['without']['pearson']:.3f} without the head's columns "
        f"({e['library']['without']['features']} features), {e['library']['with']['pearson']:.3f} "
        f"with them ({e['library']['with']['features']})"
        + ("" if all(e["library"][k]["saved"] for k in ("without", "with")) else " (not saved by its dev bar)")
        for n, e in res["sets"].items() if "library" in e
    )
    counts = "; ".join(
        f"{n}: {c['test_words']} test words ({c['test_bad']} BAD), {c['test_segments']} "
        f"segments, {c['test_sources']} sources"
        for n, c in ((n, e["counts"]) for n, e in res["sets"].items())
    )
    return "\n".join(
        [
            *lines,
            "",
            f"Test: {counts}. Softmax alone: its word score at its own dev-chosen threshold, "
            "its mean log-probability at segment level. Family: " + res["family"] + f"; "
            f"{res['n_boot']} resamples of sources.",
            "",
            "Outside the family, a narrower segment model (" + ", ".join(NARROW) + "; with the head, "
            "plus sigmoid_mean_log), test Pearson without / with the head (p: two-sided paired "
            "bootstrap over sources, not Holm-corrected: no family): " + "; ".join(
                f"{n}: {e['narrow_segment']['without']:.3f} / {e['narrow_segment']['with']:.3f} "
                f"({e['narrow_segment']['delta']:+.3f} [{e['narrow_segment']['ci_low']:+.3f}, "
                f"{e['narrow_segment']['ci_high']:+.3f}], p {fmt_p(e['narrow_segment']['p_value'], res['n_boot'])})"
                for n, e in res["sets"].items()) + ".",
            "",
            f"Word features without the head ({len(WORD_FEATURES)}, from the code's own list): "
            + "; ".join(WORD_FEATURES) + f". With the head, {len(HEAD_WORD_FEATURES)} more: "
            + "; ".join(HEAD_WORD_FEATURES) + f". Segment features without the head "
            f"({len(SEQ_BASE) + len(SEQ_EXTRA)}): " + ", ".join(SEQ_BASE + SEQ_EXTRA)
            + f"; with the head, {len(SEQ_HEAD)} more: " + ", ".join(SEQ_HEAD) + ".",
            "",
            "The library's own fit (`sigmoid-head calibrate --quality --quality-model`: ridge over "
            "every sequence score of the rows, fitted on the same dev rows), test segment Pearson: "
            + lib + ".",
            "",
        ]
    )
