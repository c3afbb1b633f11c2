"""Length-bucketed micro-batches held in two numpy arrays, for data sets of any size.

:func:`sigmoid_head.data.batching.make_batches` returns a Python list of lists, one
Python int per example: fine for thousands of examples, a few hundred MB at millions.
:func:`make_batch_index` makes the same kind of batches (shuffle, sort by length inside
chunks of ~100 batches, cut greedily, shuffle the batches) as a :class:`BatchIndex`: one
int64 permutation of the examples and one int64 array of batch boundaries, 16 bytes per
example and no Python object per example. Its random order is its own (numpy's
generator), so it is not the order ``make_batches`` gives for the same seed.
"""

from __future__ import annotations

import numpy as np


class BatchIndex:
    """Batches as ``order[offsets[g]:offsets[g + 1]]``; indexing gives a list of ints."""

    def __init__(self, order: np.ndarray, offsets: np.ndarray) -> None:
        self.order, self.offsets = order, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, g: int) -> list[int]:
        if g < 0:
            g += len(self)
        if not 0 <= g < len(self):
            raise IndexError(g)
        return self.order[self.offsets[g] : self.offsets[g + 1]].tolist()

    def __iter__(self):
        return (self[g] for g in range(len(self)))


def _starts_by_size(n: int, chunk: int, batch_size: int) -> np.ndarray:
    """Batch start positions: every ``batch_size`` inside each chunk of ``chunk``."""
    pos = np.arange(n, dtype=np.int64)
    return pos[(pos % chunk) % batch_size == 0]


def _starts_by_tokens(sorted_lengths: np.ndarray, chunk: int, max_tokens: int) -> np.ndarray:
    """Greedy batch starts under ``n_seqs * longest <= max_tokens``, reset at every chunk."""
    starts: list[int] = []
    for c0 in range(0, len(sorted_lengths), chunk):
        count, longest = 0, 0
        for k, length in enumerate(sorted_lengths[c0 : c0 + chunk].tolist()):
            grown = max(longest, length)
            if count == 0 or (count + 1) * grown > max_tokens:
                if count:
                    starts.append(c0 + k)
                elif k == 0:
                    starts.append(c0)
                count, grown = 0, length
            count, longest = count + 1, grown
    return np.asarray(starts, dtype=np.int64)


def make_batch_index(lengths: np.ndarray, *, batch_size: int | None = None,
                     max_tokens: int | None = None, shuffle: bool = True, seed: int = 0,
                     epoch: int = 0) -> BatchIndex:
    """Micro-batches of example indices (see the module docstring); every index once.

    Args:
        lengths: (N,) tokens each example costs in a padded batch.
        batch_size, max_tokens: exactly one; as in :func:`~sigmoid_head.data.batching.make_batches`.
        shuffle: bucket and shuffle; without it the input order is cut as it is.
        seed, epoch: seed of the order (every epoch has its own).
    """
    if (batch_size is None) == (max_tokens is None):
        raise ValueError("set exactly one of batch_size and max_tokens")
    if (batch_size or max_tokens or 0) < 1:
        raise ValueError("batch_size / max_tokens must be positive")
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    if n == 0:
        return BatchIndex(np.zeros(0, np.int64), np.zeros(1, np.int64))
    rng = np.random.default_rng([seed, epoch, 16])
    if shuffle:
        per_batch = batch_size if batch_size is not None else max_tokens / max(1.0, lengths.mean())
        chunk = max(1, int(100 * per_batch))
        order = rng.permutation(n)
        chunk_id = np.arange(n, dtype=np.int64) // chunk
        order = order[np.lexsort((lengths[order], chunk_id))]  # by chunk, then length (stable)
    else:
        chunk, order = n, np.arange(n, dtype=np.int64)
    if batch_size is not None:
        starts = _starts_by_size(n, chunk, batch_size)
    else:
        starts = _starts_by_tokens(lengths[order], chunk, int(max_tokens))
    offsets = np.append(starts, n).astype(np.int64)
    if shuffle:  # shuffle the batches: move each batch's slice of ``order`` as a block
        sizes = np.diff(offsets)
        perm = rng.permutation(len(sizes))
        new_sizes = sizes[perm]
        new_offsets = np.concatenate([[0], np.cumsum(new_sizes)]).astype(np.int64)
        shift = np.repeat(offsets[:-1][perm] - new_offsets[:-1], new_sizes)
        order, offsets = order[np.arange(n, dtype=np.int64) + shift], new_offsets
    return BatchIndex(order, offsets)
