"""Word- and span-level error-detection metrics, each with a source-clustered bootstrap.

Word level (the WMT word-level QE metrics), one decision per word, BAD the positive class:

* ``mcc``: Matthews correlation of the predicted tags (BAD when the word's OK score is
  below a threshold) with the gold tags; ``f1_bad``: F1 of the BAD class;
* ``roc_auc`` and ``ap`` (average precision, the area under the precision-recall curve
  as scikit-learn computes it) of the continuous word scores, badness = minus the score.

Span level, on character offsets (``end`` exclusive; whitespace characters never count):

* ``char_p``/``char_r``/``char_f1``: every character of every text is one decision,
  inside an error span or not (:func:`.spans.span_prf`), counts summed over the set;
* ``mpp_p``/``mpp_r``/``mpp_f1``: match with partial overlap and partial credit,
  micro-averaged (Perrella, Morales Agostinho and Zaragoza, "Span-Level Machine
  Translation Meta-Evaluation", 2026). Within one text, predicted and gold spans are
  paired one to one, greedily by the largest character overlap; a pair earns
  ``overlap / |pred|`` towards precision and ``overlap / |gold|`` towards recall, and
  unpaired spans earn 0. For word-tag gold (WMT), touching spans are joined on both
  sides first (:func:`merge_touching`), so a run of BAD words is one span. Precision = sum of the credits / number of predicted spans over
  the whole set, recall likewise over gold spans. With ``severity_weights`` every span
  counts with the weight of its severity (a span without one counts 1), in the credits
  and in the denominators. This is our reading of the paper's description; we could not
  consult its released code offline.

Intervals come from :func:`sigmoid_head.evaluation.bootstrap.clustered_ci`, which
resamples *sources* (groups of items), not items, so that the several candidates or words
of one source move together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .bootstrap import register_batched
from .metric_inputs import row_blocks
from .metrics import roc_auc
from .spans import span_prf

SEVERITY_WEIGHTS = {"minor": 1.0, "major": 5.0, "critical": 10.0}
"""MQM-style severity weights used by ``severity_weighted=True`` (unknown severities: 1)."""


# ----------------------------------------------------------------------------- word level
def mcc(pred_bad: ArrayLike, gold_bad: ArrayLike) -> float:
    """Matthews correlation coefficient of two binary labelings (0 when undefined)."""
    p, g = np.asarray(pred_bad, dtype=bool), np.asarray(gold_bad, dtype=bool)
    tp, tn = float(np.sum(p & g)), float(np.sum(~p & ~g))
    fp, fn = float(np.sum(p & ~g)), float(np.sum(~p & g))
    den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return (tp * tn - fp * fn) / den if den else 0.0


def _mcc_of_counts(tp: np.ndarray, tn: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (tp * tn - fp * fn) / np.where(den > 0, den, 1.0), 0.0)


def _mcc_weighted(p: np.ndarray, g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`mcc` of (B, N) integer multiplicities of the items (each row's confusion
    counts are exact integers, so equal to :func:`mcc` of the drawn items to the last bit)."""
    pb, gb = p != 0, g != 0
    tp, tn = (w * (pb & gb)).sum(1), (w * (~pb & ~gb)).sum(1)
    fp, fn = (w * (pb & ~gb)).sum(1), (w * (~pb & gb)).sum(1)
    return _mcc_of_counts(tp, tn, fp, fn)


def _mcc_grouped(p: np.ndarray, g: np.ndarray, codes: np.ndarray):  # noqa: ANN202 (a closure)
    """:func:`mcc` from per-source confusion counts: ``values_of`` maps (B, G) source
    multiplicities to (B,) values through one (B, G) x (G, 4) product. Every product and
    sum is of integers below 2**53, so the counts, and the values, equal
    :func:`_mcc_weighted`'s to the last bit."""
    pb, gb = p != 0, g != 0
    n_groups = int(codes.max()) + 1 if codes.size else 0
    cells = (pb & gb, ~pb & ~gb, pb & ~gb, ~pb & gb)
    counts = np.stack([np.bincount(codes, weights=c.astype(np.float64), minlength=n_groups)
                       for c in cells], axis=1)  # (G, 4)

    def values_of(source_weight: np.ndarray) -> np.ndarray:
        tp, tn, fp, fn = (source_weight @ counts).T
        return _mcc_of_counts(tp, tn, fp, fn)

    return values_of


def _mcc_rows(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.array([mcc(a, b) for a, b in zip(p, g, strict=True)])


register_batched(mcc, _mcc_rows, weighted_fn=_mcc_weighted, grouped_fn=_mcc_grouped)


def f1_bad(pred_bad: ArrayLike, gold_bad: ArrayLike) -> float:
    """F1 of the BAD class (0 when there is no BAD word predicted or gold)."""
    p, g = np.asarray(pred_bad, dtype=bool), np.asarray(gold_bad, dtype=bool)
    tp = int(np.sum(p & g))
    den = int(p.sum()) + int(g.sum())
    return 2 * tp / den if den else 0.0


def average_precision(score: ArrayLike, gold: ArrayLike) -> float:
    """Average precision of ``score`` ranking the positives (``gold`` 1) first.

    ``sum_n (R_n - R_{n-1}) P_n`` over the distinct score thresholds, highest first
    (tied scores enter together), as ``sklearn.metrics.average_precision_score``.
    NaN without positives.
    """
    s, g = np.asarray(score, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    n_pos = g.sum()
    if n_pos == 0:
        return math.nan
    order = np.argsort(-s, kind="mergesort")
    s, g = s[order], g[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # last index of each tied run
    tp = np.cumsum(g)[last]
    precision, recall = tp / (last + 1), tp / n_pos
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def _ap_counts(pos: np.ndarray, total: np.ndarray, npos: float) -> float:
    """:func:`average_precision` from the positives and items per distinct score, highest
    score first ((V,) each; a score with no item is no run)."""
    if npos == 0:
        return math.nan
    keep = total > 0
    tp = np.cumsum(pos)[keep]
    precision, recall = tp / np.cumsum(total)[keep], tp / npos
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def _ap_rows(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.array([average_precision(a, b) for a, b in zip(p, g, strict=True)])


def _ap_indexed(p: np.ndarray, g: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``average_precision`` of every row ``p[idx[b]], g[idx[b]]`` ((B, M) indices), the N
    scores ranked once: per row only its counts per distinct score (integers, so equal to
    the sorting path to the last bit)."""
    codes = np.unique(-p, return_inverse=True)[1].ravel()  # (N,) highest score first
    v = int(codes.max()) + 1 if codes.size else 1
    out = np.empty(idx.shape[0])
    for b, row in enumerate(idx):
        pos = np.bincount(codes[row], weights=g[row], minlength=v)
        total = np.bincount(codes[row], minlength=v).astype(np.float64)
        out[b] = _ap_counts(pos, total, float(g[row].sum()))
    return out


def _ap_weighted(p: np.ndarray, g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``_ap_indexed`` for (B, N) integer multiplicities: the same per-score counts,
    weighted instead of gathered (exact integers, so the same value to the last bit),
    a few rows at a time (:func:`.metric_inputs.row_blocks`)."""
    codes = np.unique(-p, return_inverse=True)[1].ravel()  # (N,) highest score first
    v = int(codes.max()) + 1 if codes.size else 1
    out = [np.empty(0)]
    for rows in row_blocks(w.shape[0], v):
        wb = w[rows]
        b = wb.shape[0]
        cells = (codes[None, :] + v * np.arange(b)[:, None]).ravel()  # (b * N,)
        wg = wb * g[None, :]
        pos = np.bincount(cells, weights=wg.ravel(), minlength=b * v).reshape(b, v)
        total = np.bincount(cells, weights=wb.ravel(), minlength=b * v).reshape(b, v)
        out.append(_ap_count_rows(pos, total, wg.sum(1)))
    return np.concatenate(out)


def _ap_count_rows(pos: np.ndarray, total: np.ndarray, npos: np.ndarray) -> np.ndarray:
    """:func:`_ap_counts` of every row of (B, V) counts, with its arithmetic: the cumulative
    sums, precision and recall steps of all rows at once, then each row's kept steps summed
    as :func:`_ap_counts` sums them (a value with no item repeats the recall before it, so
    its step is the same), which keeps every value equal to the last bit."""
    tp = np.cumsum(pos, axis=1)  # (B, V)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp / np.cumsum(total, axis=1)
        recall = tp / npos[:, None]
    step = np.diff(recall, axis=1, prepend=0.0) * precision  # (B, V)
    keep = total > 0
    return np.array([float(np.sum(step[i][keep[i]])) if npos[i] else math.nan
                     for i in range(pos.shape[0])])


register_batched(average_precision, _ap_rows, _ap_indexed, _ap_weighted)


def word_metrics(ok_score: ArrayLike, gold_bad: ArrayLike, threshold: float) -> dict[str, float]:
    """MCC, F1-BAD, ROC-AUC and AP of word scores against gold BAD tags.

    Args:
        ok_score: (W,) per-word score, higher = more likely OK (e.g. a word probability).
        gold_bad: (W,) 1 where the gold tag is BAD.
        threshold: a word scored below it is predicted BAD (for MCC and F1-BAD).
    """
    s, g = np.asarray(ok_score, dtype=np.float64), np.asarray(gold_bad, dtype=np.float64)
    pred = s < threshold
    one_class = g.min() == g.max() if g.size else True
    return {"mcc": mcc(pred, g), "f1_bad": f1_bad(pred, g),
            "roc_auc": math.nan if one_class else roc_auc(-s, g),
            "ap": average_precision(-s, g)}


class WeightedWords:
    """The words of N items, prepared once for :func:`word_metrics` on many resamples.

    A resample of items is given as each item's multiplicity (:func:`~.bootstrap.
    clustered_ci` with ``by_weight``); every word counts as often as its item. The words
    are ranked once and counted per item and confusion cell, so each resample is an (N, 4)
    product and two weighted counts over the words, instead of a concatenation and a sort of
    the drawn words. The counts are integers, so MCC, F1-BAD,
    ROC-AUC and AP equal :func:`word_metrics` on the concatenated drawn words.

    Args:
        ok_scores: per item, its (W_i,) word scores, higher = more likely OK.
        gold_bad: per item, its (W_i,) gold tags, 1 = BAD.
        threshold: a word scored below it is predicted BAD.
    """

    def __init__(self, ok_scores: Sequence[ArrayLike], gold_bad: Sequence[ArrayLike],
                 threshold: float) -> None:
        sizes = [np.asarray(b).size for b in gold_bad]
        s = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in ok_scores] or [[]])
        g = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in gold_bad] or [[]])
        self.item = np.repeat(np.arange(len(sizes)), sizes)  # (W,) item of each word
        self.pred = s < threshold  # (W,) predicted BAD
        self.bad = g != 0  # (W,) gold BAD, as mcc and f1_bad read it
        # (W,) dense rank of the badness -s, ascending: equal scores share a value
        self.codes = np.unique(-s, return_inverse=True)[1].ravel()
        self.n_values = int(self.codes.max()) + 1 if self.codes.size else 1
        p, g, n = self.pred, self.bad, len(sizes)
        # per item, its words in each confusion cell: (N, 4) tp, fp, fn, tn
        self.cells = np.stack([np.bincount(self.item, weights=c.astype(np.float64), minlength=n)
                               for c in (p & g, p & ~g, ~p & g, ~p & ~g)], axis=1) if n else np.zeros((0, 4))
        # the rank value and item of every BAD word, and of every OK word
        self.pos_codes, self.pos_items = self.codes[g], self.item[g]
        self.neg_codes, self.neg_items = self.codes[~g], self.item[~g]

    def metrics(self, item_weight: ArrayLike) -> dict[str, float]:
        """:func:`word_metrics` of the words, each counted ``item_weight[its item]`` times.

        Args:
            item_weight: (N,) non-negative integer multiplicity of each item.
        """
        w = np.asarray(item_weight, dtype=np.float64)  # (N,)
        pos = np.bincount(self.pos_codes, weights=w[self.pos_items], minlength=self.n_values)  # (V,)
        neg = np.bincount(self.neg_codes, weights=w[self.neg_items], minlength=self.n_values)
        npos, nneg = pos.sum(), neg.sum()
        auc = math.nan
        if npos and nneg:  # the Mann-Whitney count: negatives below plus half the tied
            auc = float((pos * (np.cumsum(neg) - neg + 0.5 * neg)).sum() / (npos * nneg))
        return {**self.thresholded(w), "roc_auc": auc, "ap": self._ap(pos, neg, npos)}

    def thresholded(self, item_weight: ArrayLike) -> dict[str, float]:
        """MCC and F1-BAD of :meth:`metrics` alone (no ranking of the words: an (N, 4)
        product per resample).

        Args:
            item_weight: (N,) non-negative integer multiplicity of each item.
        """
        w = np.asarray(item_weight, dtype=np.float64)
        # integer counts, so these sums are exact in any order (the per-word sums they replace)
        tp, fp, fn, tn = (float(c) for c in w @ self.cells)
        den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        f1_den = tp + fp + tp + fn
        return {"mcc": (tp * tn - fp * fn) / den if den else 0.0,
                "f1_bad": 2 * tp / f1_den if f1_den else 0.0}

    @staticmethod
    def _ap(pos: np.ndarray, neg: np.ndarray, npos: float) -> float:
        """:func:`average_precision` from per-value weighted counts ((V,), ascending badness)."""
        return _ap_counts(pos[::-1], (pos + neg)[::-1], npos)  # highest badness first


# ----------------------------------------------------------------------------- span level
def _weight(span: Mapping[str, Any] | Sequence[int], weights: Mapping[str, float] | None) -> float:
    if weights is None or not isinstance(span, Mapping):
        return 1.0
    return float(weights.get(str(span.get("severity") or "").lower(), 1.0))


def _bounds(span: Mapping[str, Any] | Sequence[int]) -> tuple[int, int]:
    return (int(span["start"]), int(span["end"])) if isinstance(span, Mapping) else (
        int(span[0]), int(span[1]))


def _counted(text: str | None, start: int, end: int) -> set[int]:
    return {i for i in range(start, end) if text is None or not text[i].isspace()}


def mpp_counts(pred: Sequence, gold: Sequence, text: str | None = None,
               weights: Mapping[str, float] | None = None) -> np.ndarray:
    """(4,) partial-credit sums of one text: precision credit, predicted weight, recall
    credit, gold weight (see the module docstring)."""
    pc = [_counted(text, *_bounds(s)) for s in pred]
    gc = [_counted(text, *_bounds(s)) for s in gold]
    pairs = sorted(((len(a & b), i, j) for i, a in enumerate(pc) for j, b in enumerate(gc)
                    if a & b), key=lambda t: (-t[0], t[1], t[2]))
    used_p, used_g, credit_p, credit_r = set(), set(), 0.0, 0.0
    for overlap, i, j in pairs:
        if i in used_p or j in used_g:
            continue
        used_p.add(i)
        used_g.add(j)
        credit_p += _weight(pred[i], weights) * overlap / len(pc[i])
        credit_r += _weight(gold[j], weights) * overlap / len(gc[j])
    return np.array([credit_p, sum(_weight(s, weights) for s, c in zip(pred, pc, strict=True) if c),
                     credit_r, sum(_weight(s, weights) for s, c in zip(gold, gc, strict=True) if c)])


def merge_touching(spans: Sequence[Mapping[str, Any]], text: str) -> list[dict[str, Any]]:
    """``spans`` sorted, with spans separated only by whitespace joined into one.

    Word-tag gold (WMT) marks words, not spans: read as one span per BAD word it would
    never match predictions, which join adjacent error words into one run
    (:func:`.spans.find_errors`), and a perfect prediction would earn partial credit
    below 1. Joining both sides' touching spans makes the partial-credit figure
    consistent for word tags. The first span's severity and category are kept.
    """
    out: list[dict[str, Any]] = []
    for s in sorted((dict(s) for s in spans), key=lambda s: (int(s["start"]), int(s["end"]))):
        if out and (int(s["start"]) <= out[-1]["end"]
                    or text[out[-1]["end"]:int(s["start"])].isspace()):
            out[-1]["end"] = max(out[-1]["end"], int(s["end"]))
        else:
            out.append({**s, "start": int(s["start"]), "end": int(s["end"])})
    return out


def _prf(tp_p: float, n_p: float, tp_r: float, n_r: float) -> tuple[float, float, float]:
    p = tp_p / n_p if n_p else 0.0
    r = tp_r / n_r if n_r else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def span_counts(pred: Sequence[Sequence], gold: Sequence[Sequence], texts: Sequence[str] | None,
                weights: Mapping[str, float] | None = None) -> np.ndarray:
    """(N, 7) per-text counts: character tp, predicted, gold, then :func:`mpp_counts`."""
    rows = []
    for k, (p, g) in enumerate(zip(pred, gold, strict=True)):
        text = None if texts is None else texts[k]
        c = span_prf([[_bounds(s) for s in p]], [[_bounds(s) for s in g]],
                     None if text is None else [text])
        rows.append([c["tp"], c["n_pred"], c["n_gold"], *mpp_counts(p, g, text, weights)])
    return np.asarray(rows, dtype=np.float64).reshape(-1, 7)


def span_scores(counts: np.ndarray) -> dict[str, float]:
    """Character and MPP precision/recall/F1 from summed :func:`span_counts` rows."""
    tp, n_pred, n_gold, cp, npw, cr, ngw = np.asarray(counts, dtype=np.float64).reshape(-1, 7).sum(0)
    names = ("char_p", "char_r", "char_f1", "mpp_p", "mpp_r", "mpp_f1")
    return dict(zip(names, (*_prf(tp, n_pred, tp, n_gold), *_prf(cp, npw, cr, ngw)), strict=True))


# ----------------------------------------------------------------------------- intervals


def weighted_span_scores(counts: np.ndarray, item_weight: ArrayLike) -> dict[str, float]:
    """:func:`span_scores` of the rows, each counted ``item_weight`` times (a resample given
    as multiplicities; equal to summing the drawn rows, up to float rounding).

    Args:
        counts: (N, 7) :func:`span_counts` rows.
        item_weight: (N,) non-negative multiplicity of each row.
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1, 7)
    return span_scores(np.asarray(item_weight, dtype=np.float64) @ c)
