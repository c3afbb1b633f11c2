"""ROC-AUC on many bootstrap resamples at once, from counts (no sort per resample).

Three forms, each equal to the last bit to ``metrics._roc_auc_rows`` on the expanded rows
(every term is a multiple of 0.5 well below 2**53): resamples given as item indices
(:func:`_roc_auc_indexed`), as (B, N) item multiplicities (:func:`_roc_auc_weighted`), and as
(B, G) source multiplicities (:func:`_roc_auc_grouped`: a quadratic form of the Mann-Whitney
counts between sources, :func:`auc_pair_counts`). ``metrics`` registers them with the
bootstrap. Numpy only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .metric_inputs import FloatArray, IntArray, row_blocks


def _roc_auc_indexed(p: FloatArray, g: FloatArray, idx: IntArray) -> FloatArray:
    """``_roc_auc_rows(p[idx], g[idx])`` without sorting every row.

    The N values are ranked once (``np.unique``); each row then only counts, per distinct
    value, its positives and negatives, and the Mann-Whitney numerator is the sum over
    positives of the negatives below plus half the tied ones. Every term is a multiple of
    0.5 well below 2**53, so the numerator is exact, equal to the rank-sum form's, and the
    AUC identical to the last bit. A few rows at a time (:func:`.metric_inputs.row_blocks`).
    """
    codes = np.unique(p, return_inverse=True)[1].ravel()  # (N,) dense rank of each value
    n_values = int(codes.max()) + 1 if codes.size else 1
    out = [np.empty(0)]
    for rows in row_blocks(idx.shape[0], n_values):
        part = idx[rows]
        b = part.shape[0]
        cells = (codes[part] + n_values * np.arange(b)[:, None]).ravel()  # (b * M,)
        pos = np.bincount(cells, weights=g[part].ravel(), minlength=b * n_values).reshape(b, n_values)
        neg = np.bincount(cells, minlength=b * n_values).reshape(b, n_values) - pos
        out.append(_auc_of_counts(pos, neg))
    return np.concatenate(out)


def _roc_auc_weighted(p: FloatArray, g: FloatArray, w: FloatArray) -> FloatArray:
    """``_roc_auc_indexed`` for (B, N) integer multiplicities: the same per-value counts,
    weighted instead of gathered (exact integers, so the same AUC to the last bit)."""
    codes = np.unique(p, return_inverse=True)[1].ravel()  # (N,) dense rank of each value
    n_values = int(codes.max()) + 1 if codes.size else 1
    out = [np.empty(0)]
    for rows in row_blocks(w.shape[0], n_values):
        part = w[rows]
        b = part.shape[0]
        cells = (codes[None, :] + n_values * np.arange(b)[:, None]).ravel()  # (b * N,)
        size = b * n_values
        pos = np.bincount(cells, weights=(part * g[None, :]).ravel(), minlength=size).reshape(b, n_values)
        neg = np.bincount(cells, weights=part.ravel(), minlength=size).reshape(b, n_values) - pos
        out.append(_auc_of_counts(pos, neg))
    return np.concatenate(out)


def _auc_of_counts(pos: FloatArray, neg: FloatArray) -> FloatArray:
    """(B,) ROC-AUC of (B, V) positives and negatives per value (ascending): NaN where a row
    has no positive or no negative."""
    below = np.cumsum(neg, axis=1) - neg  # negatives with a strictly lower value
    npos, nneg = pos.sum(1), neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (pos * (below + 0.5 * neg)).sum(1) / (npos * nneg)
    return np.where((npos == 0) | (nneg == 0), np.nan, auc)


_PAIR_CELLS = 4_000_000  # (sources x values) cells held at once by auc_pair_counts


def auc_pair_counts(codes: IntArray, positive: np.ndarray, group: IntArray,
                    n_groups: int) -> FloatArray:
    """Twice the Mann-Whitney count between every pair of sources: ``K2[c, d]`` is, over the
    positives i of source c and the negatives j of source d, 2 where i's value is above j's
    and 1 where they tie (integers, so every sum of them is exact in float64).

    With (B, G) source multiplicities ``w``, the ROC-AUC numerator of each resample is then
    ``((w @ K2) * w).sum(1) / 2``: the count ``_roc_auc_weighted`` takes over the expanded
    items, as a quadratic form of G numbers instead of a pass over N items.

    Args:
        codes: (N,) dense rank of each item's value (equal values, equal codes).
        positive: (N,) bool, the positives.
        group: (N,) source index of each item, in [0, n_groups).
        n_groups: G.

    Returns:
        (G, G) float64.
    """
    n_values = int(codes.max()) + 1 if codes.size else 1
    k2 = np.zeros((n_groups, n_groups))
    neg = np.flatnonzero(~positive)
    neg = neg[np.argsort(group[neg], kind="stable")]  # (N-,) negatives, source by source
    if neg.size == 0:
        return k2
    neg_groups, neg_values = group[neg], codes[neg]
    present, starts = np.unique(neg_groups, return_index=True)
    pos = np.flatnonzero(positive)
    block = max(1, _PAIR_CELLS // max(n_values, neg.size))
    for c0 in range(0, n_groups, block):
        c1 = min(n_groups, c0 + block)
        sel = pos[(group[pos] >= c0) & (group[pos] < c1)]
        if sel.size == 0:
            continue
        a = np.bincount((group[sel] - c0) * n_values + codes[sel],
                        minlength=(c1 - c0) * n_values).reshape(c1 - c0, n_values)  # (b, V)
        at_or_above = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]  # positives with value >= u
        twice = (2 * at_or_above - a).astype(np.float64)  # 2 * above + tied, per value u
        k2[c0:c1, present] = np.add.reduceat(twice[:, neg_values], starts, axis=1)
    return k2


def _roc_auc_grouped(p: FloatArray, g: FloatArray, group: IntArray) -> Callable[[FloatArray], FloatArray]:
    """``_roc_auc_weighted`` prepared once for source multiplicities (the bootstrap's
    ``grouped_fn``): the Mann-Whitney count between sources (:func:`auc_pair_counts`), so
    each resample is a quadratic form of its (G,) source counts. Integer counts: the same
    AUC to the last bit."""
    codes = np.unique(p, return_inverse=True)[1].ravel()
    n_groups = int(group.max()) + 1 if group.size else 1
    positive = g != 0
    k2 = auc_pair_counts(codes, positive, group, n_groups)  # (G, G)
    pos_g = np.bincount(group, weights=positive.astype(np.float64), minlength=n_groups)  # (G,)
    neg_g = np.bincount(group, minlength=n_groups) - pos_g

    def values_of(w: FloatArray) -> FloatArray:
        npos, nneg = w @ pos_g, w @ neg_g  # (B,)
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = 0.5 * ((w @ k2) * w).sum(1) / (npos * nneg)
        return np.where((npos == 0) | (nneg == 0), np.nan, auc)

    return values_of
