"""Bootstrap over items or over clusters: percentile intervals and paired tests.

Works with any metric ``fn(pred, gold) -> float``. A metric registered with
:func:`register_batched` (Pearson, Spearman, BCE and ROC-AUC are, by
:mod:`.metrics`) is computed on a whole chunk of resamples at once; any
other is called once per resample. Nothing here imports :mod:`.metrics`
(which imports :func:`bootstrap_ci` from here).

**The resampling unit.** Items that share a source (the candidates of one verse, the words
of one candidate, the tokens of one output) are not independent: resampling them one by
one gives intervals that are too narrow. Pass ``groups`` (one source id per item) and the
bootstrap draws whole sources with replacement, keeping every item of a drawn source
together; without ``groups`` every item is its own source (the item-level bootstrap).

:func:`clustered_ci` does the same for a statistic that is not ``fn(pred, gold)``: any
function of the drawn item indices returning named values (span F1, word MCC, ...).

**Tests.** :func:`paired_bootstrap` is two-sided by default and gives the analytic
(normal) p beside the resampled one; correcting a family of such tests and printing a p
with its sidedness is :mod:`.pvalues`'s.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import FloatArray, IntArray, as_pair
from .pvalues import normal_p
from .resampling import Clusters, _resamples, _source_draws, _source_weights, _weights

ALTERNATIVES = ("two-sided", "better")
"""Paired-test alternatives: A differs from B, or A is better than B (one-sided)."""

_BATCHED: dict[Callable[..., float], Callable[[FloatArray, FloatArray], FloatArray]] = {}
_INDEXED: dict[Callable[..., float], Callable[[FloatArray, FloatArray, IntArray], FloatArray]] = {}
_WEIGHTED: dict[Callable[..., float], Callable[[FloatArray, FloatArray, FloatArray], FloatArray]] = {}
_GROUPED: dict[Callable[..., float],
               Callable[[FloatArray, FloatArray, IntArray], Callable[[FloatArray], FloatArray]]] = {}


def register_batched(
    metric_fn: Callable[..., float],
    rows_fn: Callable[[FloatArray, FloatArray], FloatArray],
    indexed_fn: Callable[[FloatArray, FloatArray, IntArray], FloatArray] | None = None,
    weighted_fn: Callable[[FloatArray, FloatArray, FloatArray], FloatArray] | None = None,
    grouped_fn: Callable[[FloatArray, FloatArray, IntArray], Callable[[FloatArray], FloatArray]]
    | None = None,
) -> None:
    """Let the bootstrap compute ``metric_fn`` on many resamples at once.

    Args:
        metric_fn: the metric, ``fn(pred, gold) -> float``.
        rows_fn: ``rows_fn(pred, gold) -> values``: (B, N) arrays in, (B,) metric values
            out (NaN where undefined), row ``b`` equal to ``metric_fn(pred[b], gold[b])``.
        indexed_fn: optional ``indexed_fn(pred, gold, idx) -> values``: the same values for
            the rows ``pred[idx], gold[idx]`` ((N,) arrays and (B, M) indices), when knowing
            that every row is drawn from one (N,) array saves work (ROC-AUC ranks the N
            values once instead of sorting every row). Used in place of ``rows_fn`` by the
            bootstrap; it must give the same values.
        weighted_fn: optional ``weighted_fn(pred, gold, weight) -> values``: the same values
            for (B, N) multiplicities (row ``b`` counts item ``i`` ``weight[b, i]`` times),
            for a metric that does not depend on the order of the items (a rank statistic
            from counts). Used for source-level resamples: a drawn source weights its
            items, so nothing is expanded, gathered or grouped by length. Integer counts
            keep such a metric equal to the expanded path to the last bit.
        grouped_fn: optional ``grouped_fn(pred, gold, codes) -> values_of``, for a metric
            that is a fixed function of per-source counts (ROC-AUC: a bilinear form of the
            sources' multiplicities): prepared once per prediction from ``codes`` ((N,)
            source of each item), then ``values_of(source_weight)`` gives the values for
            (B, G) source multiplicities, O(G^2) per resample instead of O(N). Used in
            place of ``weighted_fn`` for source-level resamples; it must give the same
            values to the last bit (integer counts, exact sums).
    """
    _BATCHED[metric_fn] = rows_fn
    if grouped_fn is not None:
        _GROUPED[metric_fn] = grouped_fn
    if indexed_fn is not None:
        _INDEXED[metric_fn] = indexed_fn
    if weighted_fn is not None:
        _WEIGHTED[metric_fn] = weighted_fn


def _values(
    fn: Callable[..., float], preds: list[FloatArray], g: FloatArray, n_boot: int, seed: int,
    clusters: Clusters | None,
) -> Iterator[list[FloatArray]]:
    """Per chunk of resamples, the metric of every prediction in ``preds`` on those resamples
    (one (chunk,) array each; the same resamples for all, so they can be paired)."""
    grouped = _GROUPED.get(fn) if clusters is not None else None
    if grouped is not None and clusters is not None:
        prepared = [grouped(p, g, clusters.codes) for p in preds]
        for wg in _source_weights(n_boot, seed, clusters):
            yield [values_of(wg) for values_of in prepared]
        return
    weighted = _WEIGHTED.get(fn) if clusters is not None else None
    if weighted is not None and clusters is not None:
        for w in _weights(n_boot, seed, clusters):
            yield [weighted(p, g, w) for p in preds]
        return
    for i in _resamples(g.size, n_boot, seed, clusters):
        yield [_on_resamples(fn, p, g, i) for p in preds]


_MEMO: OrderedDict[tuple, FloatArray] = OrderedDict()
_MEMO_BYTES = 32 * 2**20
"""Resampled values kept per (metric, gold, resamples, prediction), least recently used
out first once they hold more than this many bytes (4,096 predictions at 1,000 resamples)."""


def _digest(a: np.ndarray) -> tuple:
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, hashlib.blake2b(a.tobytes(), digest_size=16).digest()


def _all_values(
    fn: Callable[..., float], preds: Sequence[FloatArray], g: FloatArray, n_boot: int, seed: int,
    clusters: Clusters | None,
) -> list[FloatArray]:
    """(n_boot,) values of the metric of every prediction on the same resamples, as
    :func:`_values` gives them chunk by chunk. The values are a function of the metric, the
    prediction, the gold, the resamples' seed and count and the sources, so a prediction
    already resampled with all of these (a table testing several methods against one
    baseline, then giving each its interval) is read back instead of computed again (the
    same values to the last bit; read-only arrays)."""
    common = (fn, _digest(g), n_boot, seed, None if clusters is None else _digest(clusters.codes))
    keys = [(common, _digest(p)) for p in preds]
    found = {k: _MEMO[k] for k in keys if k in _MEMO}
    todo = {k: p for k, p in zip(keys, preds, strict=True) if k not in found}
    if todo:
        chunks = list(_values(fn, list(todo.values()), g, n_boot, seed, clusters))
        for j, k in enumerate(todo):
            v = np.concatenate([c[j] for c in chunks])
            v.flags.writeable = False
            found[k] = v
    for k in keys:  # most recently used last
        _MEMO[k] = found[k]
        _MEMO.move_to_end(k)
    held = sum(v.nbytes for v in _MEMO.values())
    while held > _MEMO_BYTES and len(_MEMO) > len(keys):  # never what this call returns
        held -= _MEMO.popitem(last=False)[1].nbytes
    return [found[k] for k in keys]


def _clusters(groups: ArrayLike | None, n: int) -> Clusters | None:
    if groups is None:
        return None
    c = Clusters(groups)
    if c.n_items != n:
        raise ValueError(f"groups has {c.n_items} entries but there are {n} items")
    return c


def _on_resamples(
    fn: Callable[..., float], p: FloatArray, g: FloatArray, idx: IntArray
) -> FloatArray:
    indexed = _INDEXED.get(fn)
    if indexed is not None:
        return indexed(p, g, idx)
    batched = _BATCHED.get(fn)
    if batched is not None:
        return batched(p[idx], g[idx])
    return np.array([fn(p[i], g[i]) for i in idx], dtype=np.float64)


def clustered_ci(stat: Callable[[IntArray], dict[str, float]], groups: ArrayLike,
                 n_boot: int = 1000, alpha: float = 0.05, seed: int = 0, *,
                 by_weight: bool = False) -> dict[str, tuple[float, float, float]]:
    """Percentile intervals of named statistics, resampling whole sources.

    A statistic that does not depend on the order of the items (a sum, a rate, a rank
    statistic) can take each item's multiplicity instead of the drawn indices
    (``by_weight``): an item drawn k times counts k times. Sorting or gathering the drawn
    items is then left out of every resample; the draws are the same as without it, so the
    intervals are too (up to the float rounding of sums taken in another order). The
    resamples are those of :func:`bootstrap_ci` and :func:`paired_bootstrap` with the same
    ``groups``, ``n_boot`` and ``seed``.

    Args:
        stat: item indices (M,) -> named values computed on those items (repeats allowed);
            with ``by_weight``, (N,) integer multiplicity of every item -> the same values.
        groups: (N,) source id of every item; items of one source are drawn together.
        n_boot: resamples (``numpy.random.default_rng(seed)``, deterministic).
        alpha: 1 - the interval's level.
        seed: random seed.
        by_weight: pass multiplicities to ``stat`` instead of indices.

    Returns:
        Name -> (value on all items, low, high); NaN resamples are dropped.
    """
    _check_boot(n_boot, alpha)
    clusters = Clusters(groups)
    on = clusters.multiplicity if by_weight else clusters.expand
    point = stat(np.ones(clusters.n_items, dtype=np.int64) if by_weight
                 else np.sort(clusters.order))
    if clusters.n_groups == 0:
        return {k: (v, math.nan, math.nan) for k, v in point.items()}
    draws: dict[str, list[float]] = {k: [] for k in point}
    for chunk in _source_draws(n_boot, np.random.default_rng(seed), clusters):
        for drawn in chunk:  # the resamples of bootstrap_ci and paired_bootstrap, in order
            for k, v in stat(on(drawn)).items():
                draws[k].append(v)
    out = {}
    for k, v in point.items():
        vals = np.asarray(draws[k], dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        if math.isnan(v) or vals.size == 0:
            out[k] = (v, math.nan, math.nan)
        else:
            lo, hi = np.percentile(vals, [100 * alpha / 2, 100 * (1 - alpha / 2)])
            out[k] = (float(v), float(lo), float(hi))
    return out


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
    groups: ArrayLike | None = None,
) -> tuple[float, float, float]:
    """Percentile bootstrap confidence interval over items or over sources.

    Resamples with replacement ``n`` times (numpy ``default_rng(seed)``, so the result is
    deterministic) and takes the alpha/2 and 1 - alpha/2 percentiles of the metric.
    Without ``groups`` the N items are resampled; with ``groups`` the sources are, each
    drawn source bringing all its items. Pearson, Spearman, BCE and ROC-AUC are computed
    on many resamples at once; other functions once per resample. Resamples where the
    metric is undefined (NaN) are dropped.

    Args:
        metric_fn: ``fn(pred, gold) -> float``.
        pred: (N,) predictions.
        gold: (N,) gold values.
        n: resamples.
        alpha: 1 - confidence level.
        seed: seed of the resampling.
        groups: (N,) source id per item (None: every item its own source).

    Returns:
        (point estimate on all items, CI low, CI high); all NaN if the point is NaN.
    """
    _check_boot(n, alpha)
    p, g = as_pair(pred, gold, min_n=1)
    clusters = _clusters(groups, p.size)
    point = float(metric_fn(p, g))
    if math.isnan(point):
        return point, math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (vals,) = _all_values(metric_fn, [p], g, n, seed, clusters)
    if np.all(np.isnan(vals)):
        return point, math.nan, math.nan
    lo, hi = np.nanpercentile(vals, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return point, float(lo), float(hi)


def _runs(pred: ArrayLike, gold: ArrayLike, name: str = "pred_a") -> list[FloatArray]:
    """A method's runs as 1-D arrays: one for an (N,) input, K for a (K, N) one."""
    a = np.asarray(pred, dtype=np.float64)
    if a.ndim == 2:
        if a.shape[0] == 0:
            raise ValueError(f"{name} has no runs (shape (0, N))")
        return [as_pair(row, gold, min_n=1)[0] for row in a]
    return [as_pair(a, gold, min_n=1)[0]]


def paired_bootstrap(
    metric_fn: Callable[..., float],
    pred_a: ArrayLike,
    pred_b: ArrayLike,
    gold: ArrayLike,
    n: int = 1000,
    seed: int = 0,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    groups: ArrayLike | None = None,
    alternative: str = "two-sided",
) -> dict[str, Any]:
    """Paired bootstrap test of method A against method B on the same items.

    Both methods are scored on the same ``n`` resamples (of items, or of sources with
    ``groups``). ``delta`` is metric(A) - metric(B) on all items (raw, not sign-flipped).
    ``p_better`` is the fraction of resamples in which A is *not* better than B (delta <= 0
    when higher is better, delta >= 0 otherwise): the one-sided p of "A is better";
    ``p_worse`` the same the other way round. The two-sided p is
    ``min(1, 2 * min(p_better, p_worse))``; an identical copy gives p = 1 either way.
    ``win_rate`` is the fraction where A is strictly better. Resamples where either
    metric is NaN are dropped.

    Beside the bootstrap p (resolution ``1 / n``: a Holm p near 0.05 can move between
    seeds), ``p_normal`` is the analytic p of the same test: the delta over the standard
    error ``se`` of the resampled deltas, against a normal (:func:`normal_p`). It resolves
    small p-values; where the two disagree, the deltas are skewed: trust the bootstrap.

    Args:
        metric_fn: ``fn(pred, gold) -> float``.
        pred_a: (N,) method A, or (K, N): K runs of method A (e.g. heads trained with K
            seeds), whose metric is averaged over the runs on every resample, so the test
            is of the seed-averaged metric against B and the interval covers the choice of
            sources, not the spread across runs (report that beside it).
        pred_b: (N,) method B, or (K', N): K' runs of B, averaged the same way (A's and B's
            runs may be paired by seed: the delta is then the mean of the per-seed deltas).
        gold: (N,) gold values.
        n: resamples.
        seed: seed of the resampling.
        higher_is_better: the metric's direction.
        alpha: 1 - level of the delta's interval.
        groups: (N,) source id per item (None: every item its own source).
        alternative: ``"two-sided"`` (the default) or ``"better"`` (one-sided: A better).

    Returns:
        dict with ``delta``, ``se``, ``p_normal``, ``p_value`` (per ``alternative``), ``alternative``,
        ``p_better``, ``p_worse``, ``ci_low``, ``ci_high`` (percentile CI of the delta at
        level 1 - alpha), ``win_rate``, ``n_boot`` (resamples kept) and ``unit``
        (``"source"`` or ``"item"``).
    """
    _check_boot(n, alpha)
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    runs = _runs(pred_a, gold)
    runs_b = _runs(pred_b, gold, "pred_b")
    g = as_pair(runs_b[0], gold, min_n=1)[1]
    clusters = _clusters(groups, g.size)
    k = len(runs)
    delta = float(np.mean([metric_fn(a, g) for a in runs])) - float(np.mean([metric_fn(b, g) for b in runs_b]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = _all_values(metric_fn, [*runs, *runs_b], g, n, seed, clusters)
        d = np.mean(v[:k], axis=0) - np.mean(v[k:], axis=0)
    d = np.sort(d[~np.isnan(d)])  # sorted: the figures do not depend on the order of the chunks
    unit = "item" if clusters is None else "source"
    if d.size == 0:
        out: dict[str, Any] = dict.fromkeys(
            ("delta", "se", "p_normal", "p_value", "p_better", "p_worse", "ci_low", "ci_high",
             "win_rate"), math.nan
        )
        return {**out, "alternative": alternative, "n_boot": 0, "unit": unit}
    better, worse = (d > 0, d < 0) if higher_is_better else (d < 0, d > 0)
    p_better, p_worse = float(1.0 - better.mean()), float(1.0 - worse.mean())
    two_sided = min(1.0, 2.0 * min(p_better, p_worse))
    lo, hi = np.percentile(d, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    se = float(d.std(ddof=1)) if d.size > 1 else math.nan
    return {
        "delta": delta,
        "se": se,
        "p_normal": normal_p(delta, se, higher_is_better, alternative),
        "p_value": two_sided if alternative == "two-sided" else p_better,
        "alternative": alternative,
        "p_better": p_better,
        "p_worse": p_worse,
        "ci_low": float(lo),
        "ci_high": float(hi),
        "win_rate": float(better.mean()),
        "n_boot": int(d.size),
        "unit": unit,
    }
