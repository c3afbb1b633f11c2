"""Bootstrap over items: percentile confidence intervals and paired tests of two methods.

Works with any metric ``fn(pred, gold) -> float``. A metric registered with
:func:`register_batched` (Pearson, Spearman, BCE and ROC-AUC are, by
:mod:`.metrics`) is computed on a whole chunk of resamples at once; any
other is called once per resample. Nothing here imports :mod:`.metrics`,
which re-exports :func:`bootstrap_ci` and :func:`paired_bootstrap`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import FloatArray, IntArray, as_pair

_MAX_CELLS = 4_000_000  # resample indices held in memory at once (n_boot chunk * N)

_BATCHED: dict[Callable[..., float], Callable[[FloatArray, FloatArray], FloatArray]] = {}


def register_batched(
    metric_fn: Callable[..., float], rows_fn: Callable[[FloatArray, FloatArray], FloatArray]
) -> None:
    """Let the bootstrap compute ``metric_fn`` on many resamples at once.

    Args:
        metric_fn: the metric, ``fn(pred, gold) -> float``.
        rows_fn: ``rows_fn(pred, gold) -> values``: (B, N) arrays in, (B,) metric values
            out (NaN where undefined), row ``b`` equal to ``metric_fn(pred[b], gold[b])``.
    """
    _BATCHED[metric_fn] = rows_fn


def _resamples(n_items: int, n_boot: int, seed: int) -> Iterator[IntArray]:
    """Yield (chunk, N) index arrays, n_boot rows in all, drawn with replacement."""
    rng = np.random.default_rng(seed)
    chunk = max(1, _MAX_CELLS // n_items)
    for start in range(0, n_boot, chunk):
        yield rng.integers(0, n_items, size=(min(chunk, n_boot - start), n_items))


def _on_resamples(
    fn: Callable[..., float], p: FloatArray, g: FloatArray, idx: IntArray
) -> FloatArray:
    batched = _BATCHED.get(fn)
    if batched is not None:
        return batched(p[idx], g[idx])
    return np.array([fn(p[i], g[i]) for i in idx], dtype=np.float64)


def _check_boot(n: int, alpha: float) -> None:
    if n < 1:
        raise ValueError("n (number of bootstrap resamples) must be >= 1")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")


def bootstrap_ci(
    metric_fn: Callable[..., float],
    pred: ArrayLike,
    gold: ArrayLike,
    n: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Percentile bootstrap confidence interval over items.

    Resamples the N items with replacement ``n`` times (numpy ``default_rng(seed)``,
    so the result is deterministic) and takes the alpha/2 and 1 - alpha/2 percentiles
    of the metric. Pearson, Spearman, BCE and ROC-AUC are computed on all resamples at
    once; other functions are called once per resample. Resamples where the metric is
    undefined (NaN) are dropped.

    Returns:
        (point estimate on all items, CI low, CI high); all NaN if the point is NaN.
    """
    _check_boot(n, alpha)
    p, g = as_pair(pred, gold, min_n=1)
    point = float(metric_fn(p, g))
    if math.isnan(point):
        return point, math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = np.concatenate(
            [_on_resamples(metric_fn, p, g, i) for i in _resamples(p.size, n, seed)]
        )
    if np.all(np.isnan(vals)):
        return point, math.nan, math.nan
    lo, hi = np.nanpercentile(vals, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return point, float(lo), float(hi)


def paired_bootstrap(
    metric_fn: Callable[..., float],
    pred_a: ArrayLike,
    pred_b: ArrayLike,
    gold: ArrayLike,
    n: int = 1000,
    seed: int = 0,
    higher_is_better: bool = True,
    alpha: float = 0.05,
) -> dict[str, float]:
    """Paired bootstrap test of method A against method B on the same items.

    Both methods are scored on the same ``n`` resamples. ``delta`` is
    metric(A) - metric(B) on all items (raw, not sign-flipped). The one-sided p-value
    is the fraction of resamples in which A is *not* better than B (delta <= 0 when
    higher is better, delta >= 0 otherwise), so a small p supports "A is better" and an
    identical copy gives p = 1. ``win_rate`` is the fraction where A is strictly better.
    Resamples where either metric is NaN are dropped.

    Returns:
        dict with ``delta``, ``p_value``, ``ci_low``, ``ci_high`` (percentile CI of the
        delta at level 1 - alpha) and ``win_rate``.
    """
    _check_boot(n, alpha)
    a, g = as_pair(pred_a, gold, min_n=1)
    b, _ = as_pair(pred_b, gold, min_n=1)
    delta = float(metric_fn(a, g)) - float(metric_fn(b, g))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = np.concatenate(
            [
                _on_resamples(metric_fn, a, g, i) - _on_resamples(metric_fn, b, g, i)
                for i in _resamples(g.size, n, seed)
            ]
        )
    d = d[~np.isnan(d)]
    if d.size == 0:
        return dict.fromkeys(("delta", "p_value", "ci_low", "ci_high", "win_rate"), math.nan)
    better = d > 0 if higher_is_better else d < 0
    lo, hi = np.percentile(d, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return {
        "delta": delta,
        "p_value": float(1.0 - better.mean()),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "win_rate": float(better.mean()),
    }
