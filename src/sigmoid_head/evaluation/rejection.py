"""Prediction-rejection ratio (PRR): how much of the oracle's gain a quality score keeps
when the worst-scored items are rejected first. Re-exported by :mod:`.metrics`."""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import FloatArray, as_pair


def _rejection_auc(sorted_gold: FloatArray, n_points: int) -> float:
    """Mean of the rejection curve: mean gold of the best k kept items, k = N .. N-n_points+1."""
    n = sorted_gold.size
    kept_means = np.cumsum(sorted_gold) / np.arange(1, n + 1)
    return float(kept_means[n - n_points :].mean())


def prr(pred_quality: ArrayLike, gold_quality: ArrayLike, max_rejection: float = 1.0) -> float:
    """Prediction-rejection ratio, as defined in lm-polygraph.

    Items are rejected lowest-predicted-quality first. With N items the rejection curve
    has one point per rejected fraction r = 0, 1/N, ..., (K-1)/N where
    K = floor(max_rejection * N): the mean gold quality of the N - j items kept. Its
    area is the mean of these K points (a left Riemann sum over the fraction grid).

        PRR = (AUC_pred - AUC_random) / (AUC_oracle - AUC_random)

    The oracle rejects by gold itself. The random AUC is its exact expectation over
    random orders, mean(gold) (lm-polygraph estimates it by 1,000 shuffles). Items tied
    in ``pred_quality`` are rejected in the expected random order within the tie (their
    gold values are averaged), so a constant predictor scores exactly 0. PRR is 1 for a
    perfect ranking, about 0 for a random one and negative for a reversed one; it is
    invariant to affine rescaling of gold, so lm-polygraph's min-max normalisation of the
    target does not change it. NaN with a warning when gold is constant.

    Args:
        pred_quality: (N,) predicted quality, higher = better.
        gold_quality: (N,) gold quality, higher = better.
        max_rejection: largest fraction of items rejected (lm-polygraph's default 1.0).
    """
    p, g = as_pair(pred_quality, gold_quality)
    n = p.size
    if not 0.0 < max_rejection <= 1.0:
        raise ValueError("max_rejection must be in (0, 1]")
    k = max(1, int(max_rejection * n))
    order = np.argsort(-p, kind="stable")
    sp, sg = p[order], g[order]
    starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]])
    sizes = np.diff(np.r_[starts, n])
    tie_avg = np.repeat(np.add.reduceat(sg, starts) / sizes, sizes)
    auc_random = float(g.mean())
    auc_oracle = _rejection_auc(np.sort(g)[::-1], k)
    if math.isclose(auc_oracle, auc_random, rel_tol=0.0, abs_tol=1e-12):
        warnings.warn("prr: gold quality is constant; PRR is NaN", stacklevel=2)
        return math.nan
    return (_rejection_auc(tie_avg, k) - auc_random) / (auc_oracle - auc_random)
