"""The bootstrap's draws: items grouped by source (:class:`Clusters`), and the resamples of
a seeded generator as item indices (:func:`_resamples`), item multiplicities
(:func:`_weights`) or source multiplicities (:func:`_source_weights`): the same draws,
chunk by chunk, in each form. Numpy only.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import FloatArray, IntArray

_MAX_CELLS = 4_000_000  # resample indices held in memory at once (n_boot chunk * N)


class Clusters:
    """Items grouped by source, for drawing whole sources and expanding them to item indices.

    Args:
        groups: (N,) source id per item (any hashable values numpy can sort).
    """

    def __init__(self, groups: ArrayLike) -> None:
        codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
        self.codes = codes  # (N,) source index of each item
        self.n_items = int(codes.size)
        self.order = np.argsort(codes, kind="stable")  # (N,) item indices, source by source
        self.sizes = np.bincount(codes)  # (G,) items per source
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])  # (G,)

    @property
    def n_groups(self) -> int:
        return int(self.sizes.size)

    def expand(self, drawn: IntArray) -> IntArray:
        """Item indices of the drawn sources, in draw order ((K,) source ids -> (sum sizes,))."""
        lengths = self.sizes[drawn]  # (K,)
        total = int(lengths.sum())
        offsets = np.repeat(self.starts[drawn] - np.cumsum(lengths) + lengths, lengths)
        return self.order[offsets + np.arange(total)]

    def multiplicity(self, drawn: IntArray) -> IntArray:
        """How often each item is in the expansion of the drawn sources ((K,) -> (N,)):
        its source's number of draws."""
        return np.bincount(drawn, minlength=self.n_groups)[self.codes]


def _source_draws(
    n_boot: int, rng: np.random.Generator, clusters: Clusters
) -> Iterator[IntArray]:
    """Yield (chunk, G) source draws with replacement, n_boot rows in all (chunks sized so
    that their expansion fits :data:`_MAX_CELLS`)."""
    g = clusters.n_groups
    chunk = max(1, _MAX_CELLS // max(clusters.n_items, g))
    for start in range(0, n_boot, chunk):
        yield rng.integers(0, g, size=(min(chunk, n_boot - start), g))


def _resamples(
    n_items: int, n_boot: int, seed: int, clusters: Clusters | None = None
) -> Iterator[IntArray]:
    """Yield (chunk, L) index arrays, n_boot rows in all, drawn with replacement.

    Item level: L = N. Clustered: each row draws G sources and is expanded to their items,
    so row lengths vary; rows of equal length are yielded together (a chunk per length).
    """
    rng = np.random.default_rng(seed)
    if clusters is None:
        chunk = max(1, _MAX_CELLS // n_items)
        for start in range(0, n_boot, chunk):
            yield rng.integers(0, n_items, size=(min(chunk, n_boot - start), n_items))
        return
    for drawn in _source_draws(n_boot, rng, clusters):
        by_length: dict[int, list[IntArray]] = {}
        for d in drawn:
            rows = clusters.expand(d)
            by_length.setdefault(rows.size, []).append(rows)
        for length in sorted(by_length):
            yield np.stack(by_length[length])


def _source_weights(n_boot: int, seed: int, clusters: Clusters) -> Iterator[FloatArray]:
    """Yield (chunk, G) multiplicities of the sources: the source draws of
    :func:`_resamples` (the same generator, the same chunks), each source counted as often
    as it is drawn."""
    g = clusters.n_groups
    for drawn in _source_draws(n_boot, np.random.default_rng(seed), clusters):
        b = drawn.shape[0]
        per_source = np.bincount((drawn + g * np.arange(b)[:, None]).ravel(), minlength=b * g)
        yield per_source.reshape(b, g).astype(np.float64)


def _weights(n_boot: int, seed: int, clusters: Clusters) -> Iterator[FloatArray]:
    """Yield (chunk, N) multiplicities of the items: each item counted as often as its
    source is drawn (:func:`_source_weights` expanded)."""
    for per_source in _source_weights(n_boot, seed, clusters):
        yield np.ascontiguousarray(per_source[:, clusters.codes])  # (chunk, N): rows contiguous
