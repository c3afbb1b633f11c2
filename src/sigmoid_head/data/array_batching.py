"""Length-bucketed micro-batches held in numpy arrays, for data sets of any size.

:func:`sigmoid_head.data.batching.make_batches` returns a Python list of lists, one
Python int per example: fine for thousands of examples, a few hundred MB at millions.
:func:`make_batch_index` makes the same kind of batches (shuffle, sort by length inside
chunks of ~100 batches, cut greedily, shuffle the batches) as a :class:`BatchIndex`: one
int32 order of the examples (4 bytes per example), the batch boundaries and the batch
order (16 bytes per batch), and no Python object per example or batch. It works chunk
by chunk, so besides the order it allocates nothing the size of the data set. Its random order is its own (numpy's
generator), so it is not the order ``make_batches`` gives for the same seed.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class BatchIndex:
    """Batch ``g`` is ``order[offsets[b]:offsets[b + 1]]`` with ``b = batch_order[g]``;
    indexing gives a list of ints."""

    def __init__(self, order: np.ndarray, offsets: np.ndarray, batch_order: np.ndarray) -> None:
        self.order, self.offsets, self.batch_order = order, offsets, batch_order

    def __len__(self) -> int:
        return len(self.batch_order)

    def __getitem__(self, g: int) -> list[int]:
        if g < 0:
            g += len(self)
        if not 0 <= g < len(self):
            raise IndexError(g)
        b = int(self.batch_order[g])
        return self.order[self.offsets[b] : self.offsets[b + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        return (self[g] for g in range(len(self)))


def _cut_by_tokens(lengths: list[int], max_tokens: int) -> list[int]:
    """Batch starts in one chunk, greedily under ``n_seqs * longest <= max_tokens`` (a
    longer example alone)."""
    starts, count, longest = [], 0, 0
    for k, length in enumerate(lengths):
        grown = max(longest, length)
        if count == 0 or (count + 1) * grown > max_tokens:
            starts.append(k)
            count, grown = 0, length
        count, longest = count + 1, grown
    return starts


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
    n = len(lengths)
    order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    rng = np.random.default_rng([seed, epoch, 16])
    chunk = max(n, 1)
    if shuffle and n:
        rng.shuffle(order)  # in place: no second array of N
        mean = float(np.mean(lengths))
        per_batch = batch_size if batch_size is not None else max_tokens / max(1.0, mean)
        chunk = max(1, int(100 * per_batch))
    starts = []  # an array of batch starts per chunk
    for c0 in range(0, n, chunk):
        part = order[c0 : c0 + chunk]
        if shuffle:  # sort by length inside the chunk (stable)
            part[:] = part[np.argsort(lengths[part], kind="stable")]
        cut = (np.arange(0, len(part), batch_size) if batch_size is not None
               else np.asarray(_cut_by_tokens(lengths[part].tolist(), max_tokens)))
        starts.append(c0 + cut.astype(np.int64))
    offsets = np.concatenate([*starts, np.asarray([n], dtype=np.int64)])
    batch_order = np.arange(len(offsets) - 1, dtype=np.int64)
    if shuffle:
        rng.shuffle(batch_order)
    return BatchIndex(order, offsets, batch_order)
