"""Kendall's tau-b of many resamples of the same items, without sorting any resample.

A bootstrap resample of N items can be given as each item's multiplicity ``w`` (item i
drawn ``w[i]`` times). Tau-b of the resample, as :func:`.metrics.kendall` computes it on
the drawn items, needs the tied pairs and the discordant pairs of the multiset:

* tied pairs in x: ``sum over x values v of C(W_v, 2)`` with ``W_v`` the summed
  multiplicity of the items whose x is v; the same for y and for (x, y);
* discordant pairs: ``sum of w[i] * w[j]`` over item pairs with x[i] < x[j] and
  y[i] > y[j] (copies of one item tie in both, never discordant).

The discordant sum is the weighted inversion count of y in (x, y) order, counted by the
same bottom-up merge as :func:`.metrics._count_inversions`; which left elements are larger
than each right element does not depend on the weights, so the merge is done once here and
each resample is a few gathers and cumulative sums per level: O(N log N), no sort. All
counts are integers, so tau equals :func:`.metrics.kendall` on the drawn items to the last
bit. Numpy only.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import as_pair


class WeightedKendall:
    """Kendall's tau-b of ``pred`` against ``gold`` for any multiplicities of the items.

    Args:
        pred: (N,) values.
        gold: (N,) values.
    """

    def __init__(self, pred: ArrayLike, gold: ArrayLike) -> None:
        p, g = as_pair(pred, gold, min_n=1)
        rx = np.unique(p, return_inverse=True)[1].ravel()  # (N,) dense ranks
        ry = np.unique(g, return_inverse=True)[1].ravel()
        self.order = np.lexsort((ry, rx))  # by pred, ties by gold: x ties add no inversions
        self.rx, self.ry = rx, ry
        self.rxy = np.unique(rx * (int(ry.max()) + 1) + ry, return_inverse=True)[1].ravel()
        self.levels = _merge_levels(ry[self.order])

    def __call__(self, weight: ArrayLike) -> float:
        """Tau-b of the items, item i counted ``weight[i]`` times (NaN where x or y is
        constant over the counted items, as :func:`.metrics.kendall`)."""
        w = np.asarray(weight, dtype=np.int64)
        wx, wy = np.bincount(self.rx, weights=w), np.bincount(self.ry, weights=w)
        if np.count_nonzero(wx) < 2 or np.count_nonzero(wy) < 2:
            return math.nan
        m = int(w.sum())
        tot = m * (m - 1) // 2
        xt, yt = _tied(self.rx, w), _tied(self.ry, w)
        xyt = _tied(self.rxy, w)
        ws = w[self.order]
        dis = 0
        for left, right, lo, hi in self.levels:
            cum = np.concatenate([[0], np.cumsum(ws[left])])  # (L + 1,) int64
            dis += int(np.dot(ws[right], cum[hi] - cum[lo]))
        tau = (tot - xt - yt + xyt - 2 * dis) / math.sqrt(tot - xt) / math.sqrt(tot - yt)
        return float(min(1.0, max(-1.0, tau)))


def _tied(codes: np.ndarray, w: np.ndarray) -> int:
    counts = np.bincount(codes, weights=w).astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _merge_levels(y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The merge of :func:`.metrics._count_inversions`, recorded per level.

    Args:
        y: (N,) integer keys in [0, N).

    Returns:
        Per level: (left, right, lo, hi): the positions of ``y`` in the level's left blocks
        (each block sorted by key, the blocks in order), those in its right blocks, and for
        every right element the range ``[lo, hi)`` of ``left`` holding the larger keys of its
        pair's left block.
    """
    n = y.size
    perm = np.arange(n)  # positions of y, sorted within blocks of the current width
    pos = np.arange(n)
    levels = []
    width = 1
    while width < n:
        pair = pos // (2 * width)
        right = (pos // width) % 2 == 1
        key = pair * n + y[perm]
        left_keys = key[~right]
        hi = np.searchsorted(left_keys, pair[right] * n + (n - 1), side="right")
        lo = np.searchsorted(left_keys, key[right], side="right")
        levels.append((perm[~right], perm[right], lo, hi))
        perm = perm[np.argsort(key, kind="stable")]  # merge every pair of blocks
        width *= 2
    return levels
