"""Metrics for quality estimation (QE), with bootstrap confidence intervals.

Every score array is "predicted quality": higher means the method thinks the text is
better. Gold arrays are human or pseudo-gold quality (real-valued) or binary labels
(1 = good / OK, 0 = bad). All arrays are 1-D of shape (N,) with one value per item.

Only numpy is needed. The correlations, ROC-AUC and log loss match scipy / scikit-learn
to floating-point precision (see ``tests/test_metrics.py``). The bootstrap lives in
:mod:`.bootstrap`, the word-level metrics (built on these) in :mod:`.word_metrics` and
the input checks in :mod:`.metric_inputs`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .auc_counts import _roc_auc_grouped, _roc_auc_indexed, _roc_auc_weighted
from .bootstrap import bootstrap_ci, register_batched
from .metric_inputs import (
    FloatArray,
    IntArray,
    as_1d,
    as_pair,
    is_binary,
    require_binary,
    require_prob,
)
from .rejection import prr


# ----------------------------------------------------------------------------- ranks
def _rank_rows(x: FloatArray) -> FloatArray:
    """1-based average ranks along the last axis; tied values share their mean rank.

    Args:
        x: (B, N) values.

    Returns:
        (B, N) ranks as floats, like ``scipy.stats.rankdata(method="average")`` per row.
    """
    b, n = x.shape
    order = np.argsort(x, axis=1, kind="stable")  # (B, N)
    s = np.take_along_axis(x, order, axis=1)
    pos = np.broadcast_to(np.arange(n), (b, n))
    first = np.ones((b, n), dtype=bool)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    last = np.ones((b, n), dtype=bool)
    last[:, :-1] = first[:, 1:]
    start = np.maximum.accumulate(np.where(first, pos, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((b, n), dtype=np.float64)
    np.put_along_axis(ranks, order, (start + end) / 2.0 + 1.0, axis=1)
    return ranks


def _dense_rank(x: FloatArray) -> IntArray:
    return np.unique(x, return_inverse=True)[1].astype(np.int64)


# ----------------------------------------------------------------------------- correlations
def _pearson_rows(p: FloatArray, g: FloatArray) -> FloatArray:
    """Row-wise Pearson r of (B, N) arrays; NaN (no warning) where a row is constant."""
    const = (p.max(1) == p.min(1)) | (g.max(1) == g.min(1))
    pc = p - p.mean(1, keepdims=True)
    gc = g - g.mean(1, keepdims=True)
    pn = np.sqrt((pc * pc).sum(1))
    gn = np.sqrt((gc * gc).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = ((pc / pn[:, None]) * (gc / gn[:, None])).sum(1)
    return np.where(const, np.nan, np.clip(r, -1.0, 1.0))


def _warn_if_constant(p: FloatArray, g: FloatArray, what: str) -> bool:
    if p.max() == p.min() or g.max() == g.min():
        warnings.warn(f"{what}: an input is constant; the correlation is NaN", stacklevel=3)
        return True
    return False


def pearson(pred: ArrayLike, gold: ArrayLike) -> float:
    """Pearson correlation coefficient (equals ``scipy.stats.pearsonr``).

    Returns NaN with a warning when either input is constant.
    """
    p, g = as_pair(pred, gold)
    if _warn_if_constant(p, g, "pearson"):
        return math.nan
    return float(_pearson_rows(p[None], g[None])[0])


def spearman(pred: ArrayLike, gold: ArrayLike) -> float:
    """Spearman rank correlation with average ranks for ties (equals ``scipy.stats.spearmanr``)."""
    p, g = as_pair(pred, gold)
    if _warn_if_constant(p, g, "spearman"):
        return math.nan
    return float(_pearson_rows(_rank_rows(p[None]), _rank_rows(g[None]))[0])


def _count_inversions(y: IntArray) -> int:
    """Pairs i < j with y[i] > y[j], by a vectorised bottom-up merge sort, O(N log^2 N).

    ``y`` must hold integers in [0, N). At each level the array is made of sorted blocks
    of ``width``; adding ``pair_id * N`` makes all left blocks one sorted array, so one
    ``searchsorted`` counts, for every right element, the larger elements on its left.
    """
    n = y.size
    a = y.astype(np.int64).copy()
    pos = np.arange(n)
    inv = 0
    width = 1
    while width < n:
        pair = pos // (2 * width)
        right = (pos // width) % 2 == 1
        key = pair * n + a
        left_keys = key[~right]
        top = np.searchsorted(left_keys, pair[right] * n + (n - 1), side="right")
        le = np.searchsorted(left_keys, key[right], side="right")
        inv += int((top - le).sum())
        a = np.sort(key) - pair * n  # merge every pair of blocks
        width *= 2
    return inv


def _tied_pairs(codes: IntArray) -> int:
    counts = np.unique(codes, return_counts=True)[1].astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def kendall(pred: ArrayLike, gold: ArrayLike) -> float:
    """Kendall's tau-b with tie correction (equals ``scipy.stats.kendalltau``).

    tau_b = (C - D) / sqrt((T - T_pred) * (T - T_gold)), T = N(N-1)/2 pairs.
    """
    p, g = as_pair(pred, gold)
    if _warn_if_constant(p, g, "kendall"):
        return math.nan
    n = p.size
    rx, ry = _dense_rank(p), _dense_rank(g)
    order = np.lexsort((ry, rx))  # by pred, ties broken by gold: x-ties add no inversions
    dis = _count_inversions(ry[order])
    tot = n * (n - 1) // 2
    xt, yt = _tied_pairs(rx), _tied_pairs(ry)
    xyt = _tied_pairs(rx * n + ry)
    con_minus_dis = tot - xt - yt + xyt - 2 * dis
    tau = con_minus_dis / math.sqrt(tot - xt) / math.sqrt(tot - yt)
    return float(min(1.0, max(-1.0, tau)))


# ----------------------------------------------------------------------------- binary gold
def _bce_rows(p: FloatArray, g: FloatArray, eps: float = 1e-7) -> FloatArray:
    p = np.clip(p, eps, 1.0 - eps)
    return -(g * np.log(p) + (1.0 - g) * np.log1p(-p)).mean(1)


def bce(pred_prob: ArrayLike, gold_binary: ArrayLike, eps: float = 1e-7) -> float:
    """Mean binary cross-entropy (natural log), lower is better.

    Probabilities are clipped to [eps, 1 - eps] first; equals
    ``sklearn.metrics.log_loss(gold, np.clip(pred, eps, 1 - eps))``.
    """
    p, g = as_pair(pred_prob, gold_binary, min_n=1)
    require_binary(g)
    require_prob(p)
    return float(_bce_rows(p[None], g[None], eps)[0])


def _roc_auc_rows(p: FloatArray, g: FloatArray) -> FloatArray:
    """Row-wise ROC-AUC by the Mann-Whitney rank sum; NaN where a row has one class."""
    r = _rank_rows(p)
    npos = g.sum(1)
    nneg = g.shape[1] - npos
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = ((r * g).sum(1) - npos * (npos + 1) / 2.0) / (npos * nneg)
    return np.where((npos == 0) | (nneg == 0), np.nan, auc)


def roc_auc(pred: ArrayLike, gold_binary: ArrayLike) -> float:
    """Area under the ROC curve; tied scores get half credit (equals ``roc_auc_score``).

    Raises:
        ValueError: if gold is not binary or holds only one class.
    """
    p, g = as_pair(pred, gold_binary)
    require_binary(g)
    if g.min() == g.max():
        raise ValueError("roc_auc needs both classes in gold")
    return float(_roc_auc_rows(p[None], g[None])[0])


def calibration_bins(
    pred_prob: ArrayLike, gold_binary: ArrayLike, n_bins: int = 10
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Equal-width reliability bins on [0, 1] (last bin closed).

    Returns:
        (mean predicted probability, fraction of positives, item count), each (n_bins,);
        the first two are NaN for empty bins.
    """
    p, g = as_pair(pred_prob, gold_binary, min_n=1)
    require_binary(g)
    require_prob(p)
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    b = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    counts = np.bincount(b, minlength=n_bins).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pred = np.bincount(b, weights=p, minlength=n_bins) / counts
        frac_pos = np.bincount(b, weights=g, minlength=n_bins) / counts
    return mean_pred, frac_pos, counts


def ece(pred_prob: ArrayLike, gold_binary: ArrayLike, n_bins: int = 10) -> float:
    """Expected calibration error: sum_b (n_b / N) * |mean pred_b - fraction positive_b|."""
    mean_pred, frac_pos, counts = calibration_bins(pred_prob, gold_binary, n_bins)
    keep = counts > 0
    w = counts[keep] / counts.sum()
    return float((w * np.abs(mean_pred[keep] - frac_pos[keep])).sum())


# the bootstrap computes these on whole chunks of resamples at once
register_batched(pearson, _pearson_rows)
register_batched(spearman, lambda p, g: _pearson_rows(_rank_rows(p), _rank_rows(g)))
register_batched(bce, _bce_rows)
register_batched(roc_auc, _roc_auc_rows, _roc_auc_indexed, _roc_auc_weighted, _roc_auc_grouped)


# ----------------------------------------------------------------------------- registry
class MetricSpec(NamedTuple):
    """A registered sequence-level metric: ``(fn, higher_is_better, needs_binary_gold)``."""

    fn: Callable[..., float]
    higher_is_better: bool
    needs_binary_gold: bool


METRICS: dict[str, MetricSpec] = {
    "pearson": MetricSpec(pearson, True, False),
    "spearman": MetricSpec(spearman, True, False),
    "kendall": MetricSpec(kendall, True, False),
    "bce": MetricSpec(bce, False, True),
    "roc_auc": MetricSpec(roc_auc, True, True),
    "prr": MetricSpec(prr, True, False),
    "ece": MetricSpec(ece, False, True),
}
"""Metric name -> (fn, higher_is_better, needs_binary_gold)."""

_NEEDS_PROB = {"bce", "ece"}


def _skip_reason(name: str, method: str, p: FloatArray, g: FloatArray, binary: bool) -> str | None:
    if METRICS[name].needs_binary_gold and not binary:
        return f"{name} skipped: gold is not binary"
    if name in _NEEDS_PROB and (p.min() < 0 or p.max() > 1):
        return f"{name} skipped for {method!r}: scores are not probabilities in [0, 1]"
    if name == "roc_auc" and g.min() == g.max():
        return "roc_auc skipped: gold has only one class"
    return None


def evaluate_methods(
    scores: dict[str, ArrayLike],
    gold: ArrayLike,
    metrics: list[str] | None = None,
    ci: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    groups: ArrayLike | None = None,
) -> list[dict[str, Any]]:
    """Score every method with every applicable metric.

    Args:
        scores: method name -> (N,) predicted quality (higher = better).
        gold: (N,) gold quality or binary labels.
        metrics: names from :data:`METRICS`; default every metric that suits the gold
            (binary-only ones only for 0/1 gold). Binary-only metrics requested
            explicitly for real-valued gold are skipped with a note and a warning.
        ci: add percentile bootstrap CIs (same resamples for every method).
        n_boot: bootstrap resamples.
        seed: bootstrap seed.
        alpha: 1 - confidence level.
        groups: (N,) source id per item: the bootstrap resamples sources, keeping each
            source's items together (None: items).

    Returns:
        One row per method: ``{"method", "n", "notes", <metric>, <metric>_low,
        <metric>_high, ..., "ci_unit"}`` (``ci_unit``: what the bootstrap resampled,
        ``"item"`` or ``"source"``). A metric that does not apply (binary-only metric with
        real-valued gold, BCE/ECE on scores outside [0, 1]) is left out of the row and
        explained in ``notes``. Constant scores give NaN correlations with a warning.

    Raises:
        ValueError: unknown metric, shape mismatch, or NaN/inf scores (naming the method).
    """
    g = as_1d(gold, "gold")
    binary = is_binary(g)
    if metrics is None:
        names = [m for m, spec in METRICS.items() if binary or not spec.needs_binary_gold]
    else:
        names = list(metrics)
    unknown = [m for m in names if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; available: {sorted(METRICS)}")
    rows: list[dict[str, Any]] = []
    for method, s in scores.items():
        p = np.asarray(s, dtype=np.float64)
        if p.shape != g.shape:
            raise ValueError(f"method {method!r}: scores shape {p.shape} != gold shape {g.shape}")
        if not np.all(np.isfinite(p)):
            bad = int((~np.isfinite(p)).sum())
            raise ValueError(f"method {method!r}: {bad} score(s) are NaN or inf")
        row: dict[str, Any] = {"method": method, "n": int(p.size), "notes": []}
        if ci:
            row["ci_unit"] = "item" if groups is None else "source"
        for name in names:
            reason = _skip_reason(name, method, p, g, binary)
            if reason is not None:
                row["notes"].append(reason)
                continue
            fn = METRICS[name].fn
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if ci:
                    row[name], row[f"{name}_low"], row[f"{name}_high"] = bootstrap_ci(
                        fn, p, g, n=n_boot, alpha=alpha, seed=seed, groups=groups
                    )
                else:
                    row[name] = float(fn(p, g))
            for w in caught:  # re-emit, naming the method
                warnings.warn(f"method {method!r}: {w.message}", stacklevel=2)
        rows.append(row)
    notes = sorted({n for r in rows for n in r["notes"] if "gold" in n})
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return rows
