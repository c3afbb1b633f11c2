"""Training data through Hugging Face ``datasets``: Arrow on disk, tokenized in workers.

``TrainConfig(data_engine="datasets")`` reads the training file with ``datasets`` (:mod:`.arrow_tokenize`)
(``.jsonl``/``.json``/``.tsv``/``.txt``, gzipped too, through the reader of the in-memory
path, :mod:`.records`, a line at a time; ``.parquet``, ``.arrow``, ``.csv`` and
``save_to_disk`` directories through ``datasets``' own readers; a hub data set id where
there is a network), tokenizes it with ``Dataset.map(batched=True,
num_proc=...)`` in worker processes (the same :func:`~sigmoid_head.data.tokenize.tokenize_records`
as the in-memory path, so the examples are the same), and keeps the result as Arrow
files on disk, memory-mapped. ``data_engine="streaming"`` reads the file as an
``IterableDataset`` instead (the raw records are never all loaded; tokenization runs in
this process) and writes the tokenized examples to Arrow on disk as they come.

What the training loop holds per example is then a few numpy integers (padded length
and trained positions: :class:`ArrowExamples`, 4 bytes) and the epoch's batch index
(:mod:`.array_batching`, 4.5 bytes): no Python object per example. An example's token
ids are read from the memory-mapped Arrow table when its micro-batch is collated, and
the pages of the mapping that reads touch are given back as the reads go
(:mod:`.mapped_pages`), so neither part of the process's memory grows with the data set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from .arrow_tokenize import load_raw, source_key, tokenize_dataset
from .batching import IGNORE_INDEX
from .mapped_pages import MappedPages
from .records import DataError

logger = logging.getLogger(__name__)

_PASS_ROWS = 16384
"""Rows per read of a pass over whole columns (the numbers, the labels): it bounds the
memory of the pass, and the pages each read touched are given back after it."""


class ArrowExamples:
    """Tokenized examples on disk, behaving as the loop's list of example dicts.

    ``examples[i]`` (or :meth:`take`, for a batch) reads an example's token columns from
    the memory-mapped Arrow table.
    A view holds, per example (what bucketing and the loss normalisation need):

    - ``lengths`` (padded length) and ``n_trained`` (trained positions), numpy arrays in
      the smallest unsigned dtype that holds them: 2 bytes each up to 65,535 tokens;
      ``n_input`` (input tokens, for the tokens/s figure) is ``lengths`` itself for a causal
      model, 2 more bytes for a sequence-to-sequence one. They are read on first use, for
      this view's rows only (one pass over the number columns);
    - which rows of the table it holds: nothing for the whole table or for a view made by
      :meth:`without` (it keeps the rows left out: the training examples beside a held-out
      validation set); 4 bytes per example for a view made by :meth:`subset`.

    So 4 bytes per training example of a causal model. The pages of the Arrow files that
    reads touch are given back (:class:`~.mapped_pages.MappedPages`, shared by the views
    of one table) when the files are opened, after each read of a pass over whole
    columns, and every ``pages.every`` examples read, so the file-backed memory of the
    process does not grow with the data set either.
    """

    def __init__(self, dataset: Any, is_encoder_decoder: bool, *, rows: np.ndarray | None = None,
                 skip: np.ndarray | None = None, columns: dict[str, np.ndarray] | None = None,
                 pages: MappedPages | None = None) -> None:
        self.dataset, self.is_seq2seq = dataset, is_encoder_decoder
        if pages is None:  # a new table: give back what opening its files read
            pages = MappedPages(dataset)
            pages.release()
        self.pages = pages
        self.rows = rows  # the table rows of this view, in its order (None: see skip)
        self.skip = skip  # sorted table rows left out, the others in order (None: none)
        self._gaps = None if skip is None else skip - np.arange(len(skip), dtype=skip.dtype)
        self._columns = columns  # read on first use
        self._reader: Any = None

    def _numbers(self) -> tuple[str, ...]:
        return ("length", "n_trained", "n_input") if self.is_seq2seq else ("length", "n_trained")

    def columns(self) -> dict[str, np.ndarray]:
        """The per-example numbers of this view (read from the table on first use)."""
        if self._columns is None:
            self._columns = _number_columns(self.dataset, self._numbers(), self.pages,
                                            rows=self.rows, skip=self.skip)
        return self._columns

    @property
    def lengths(self) -> np.ndarray:
        """Padded length of every example."""
        return self.columns()["length"]

    @property
    def n_trained(self) -> np.ndarray:
        """Trained positions of every example."""
        return self.columns()["n_trained"]

    @property
    def n_input(self) -> np.ndarray:
        """Input tokens of every example (for a causal model, its padded length)."""
        columns = self.columns()
        return columns.get("n_input", columns["length"])

    def __len__(self) -> int:
        if self.rows is not None:
            return len(self.rows)
        return len(self.dataset) - (0 if self.skip is None else len(self.skip))

    def table_rows(self, positions: Any) -> Any:
        """The table rows of ``positions`` (an int or an array) of this view."""
        if self.rows is not None:
            return self.rows[positions]
        if self.skip is None:
            return positions
        return positions + np.searchsorted(self._gaps, positions, side="right")

    def __getitem__(self, i: int) -> dict:
        return self.take([i])[0]

    def take(self, positions: list[int]) -> list[dict]:
        """The examples at ``positions``: their token columns only, ``pages.every`` rows per
        call of ``datasets`` (several times faster than a call per example)."""
        if self._reader is None:  # reads the token columns only (and only their pages)
            self._reader = self.dataset.with_format(columns=["input_ids", "labels"])
        n, out = len(self), []
        for g in range(0, len(positions), max(1, self.pages.every)):
            wanted = [int(i) for i in positions[g : g + max(1, self.pages.every)]]
            if not all(-n <= i < n for i in wanted):
                raise IndexError(f"example index out of range 0..{n - 1}: {wanted}")
            cols = self._reader[[int(self.table_rows(i % n)) for i in wanted]]
            self.pages.count(len(wanted))
            out += [{"input_ids": ids, "labels": labels, "is_seq2seq": self.is_seq2seq}
                    for ids, labels in zip(cols["input_ids"], cols["labels"], strict=True)]
        return out

    def subset(self, positions: np.ndarray) -> ArrowExamples:
        """The examples at ``positions`` (of this view), sharing the table (not this view's
        arrays: a view of most examples lets the full arrays go)."""
        positions = np.asarray(positions, dtype=np.int64)
        columns = None
        if self._columns is not None:
            columns = {k: v[positions] for k, v in self._columns.items()}
        return ArrowExamples(self.dataset, self.is_seq2seq, columns=columns, pages=self.pages,
                             rows=_index_array(self.table_rows(positions)))

    def without(self, positions: np.ndarray) -> ArrowExamples:
        """The examples but those at ``positions``, in order. From a view of the whole table
        the result keeps only the rows left out, not a row index per example."""
        drop = np.unique(np.asarray(positions, dtype=np.int64))
        if self.rows is not None or self.skip is not None:
            keep = np.ones(len(self), dtype=bool)
            keep[drop] = False
            return self.subset(np.flatnonzero(keep))
        columns = None
        if self._columns is not None:
            columns = {k: np.delete(v, drop) for k, v in self._columns.items()}
        return ArrowExamples(self.dataset, self.is_seq2seq, skip=_index_array(drop),
                             columns=columns, pages=self.pages)

    def token_counts(self, vocab_size: int) -> np.ndarray:
        """(V,) unigram counts of the trained target tokens of these examples.

        One pass over the labels, ``_PASS_ROWS`` rows at a time, on numpy views of the
        mapped Arrow buffers (no copy of a column: what a read holds is a few masks and
        the selected labels of its rows).
        """
        counts = np.zeros(vocab_size, dtype=np.int64)
        rows = None if self.rows is None else np.sort(self.rows)
        for start, chunk in _read_chunks(self.dataset, ["labels"], self.pages):
            for part in chunk["labels"].chunks:
                offsets = part.offsets.to_numpy(zero_copy_only=False)
                values = part.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
                sizes = np.diff(offsets)
                keep = values != IGNORE_INDEX
                mask = _row_mask(start, start + len(part), rows, self.skip)
                if mask is not None:
                    keep &= np.repeat(mask, sizes)
                if not self.is_seq2seq:  # position 0 of a causal example is never trained
                    keep[(offsets[:-1] - offsets[0])[sizes > 0]] = False
                flat = values[keep]
                if flat.size and int(flat.max()) >= vocab_size:
                    raise ValueError(f"label id {int(flat.max())} is outside the vocabulary "
                                     f"({vocab_size})")
                counts += np.bincount(flat, minlength=vocab_size)
                start += len(part)
        return counts.astype(np.float64)


def _row_mask(start: int, stop: int, rows: np.ndarray | None, skip: np.ndarray | None
              ) -> np.ndarray | None:
    """Which table rows ``start:stop`` a view holds: those in ``rows`` (sorted), or all but
    those in ``skip`` (sorted); None when it holds them all."""
    chosen = rows if rows is not None else skip
    if chosen is None:
        return None
    inside = chosen[np.searchsorted(chosen, start) : np.searchsorted(chosen, stop)] - start
    mask = np.full(stop - start, rows is None, dtype=bool)
    mask[inside] = rows is not None
    return mask


def _read_chunks(dataset: Any, columns: list[str], pages: MappedPages,
                 step: int = _PASS_ROWS) -> Iterator[tuple[int, Any]]:
    """``(start, pyarrow table of columns)`` for every ``step`` rows of ``dataset``; the
    pages a read touched are given back before the next one, and at the end."""
    table = dataset.with_format("arrow", columns=columns)
    try:
        for start in range(0, len(dataset), step):
            yield start, table[start : start + step]
            pages.release()
    finally:
        pages.release()


def _number_columns(dataset: Any, names: tuple[str, ...], pages: MappedPages, *,
                    rows: np.ndarray | None = None, skip: np.ndarray | None = None,
                    step: int = _PASS_ROWS) -> dict[str, np.ndarray]:
    """Columns of non-negative ints for the table rows ``rows`` (in that order), or for all
    rows but ``skip`` (sorted), or for all: each in the smallest unsigned dtype that holds
    it (uint16 at least), read ``step`` rows at a time into the final arrays."""
    n = len(rows) if rows is not None else len(dataset) - (0 if skip is None else len(skip))
    out = {k: np.zeros(n, dtype=np.uint16) for k in names}
    order = None if rows is None else np.argsort(rows, kind="stable")
    ordered = None if rows is None else rows[order]
    at = 0  # where the next kept row goes (without ``rows``)
    for start, chunk in _read_chunks(dataset, list(names), pages, step):
        stop = start + chunk.num_rows
        if ordered is not None:
            lo, hi = np.searchsorted(ordered, start), np.searchsorted(ordered, stop)
            take, into = ordered[lo:hi] - start, order[lo:hi]
        else:
            mask = _row_mask(start, stop, None, skip)
            take = slice(None) if mask is None else mask
        for k in names:
            values = np.concatenate([p.to_numpy(zero_copy_only=False) for p in chunk[k].chunks])
            values = values[take]
            top = int(values.max()) if len(values) else 0
            if top > np.iinfo(out[k].dtype).max:
                out[k] = out[k].astype(np.min_scalar_type(top))
            if ordered is not None:
                out[k][into] = values
            else:
                out[k][at : at + len(values)] = values
        if ordered is None:
            at += chunk.num_rows if isinstance(take, slice) else int(take.sum())
    return out


def _index_array(rows: np.ndarray) -> np.ndarray:
    """Row indices as int32 (int64 past 2**31 rows)."""
    rows = np.asarray(rows)
    small = not len(rows) or int(rows.max()) < 2**31
    return rows.astype(np.int32 if small else np.int64, copy=False)


def load_examples_arrow(path: str, tokenizer: Any, *, is_encoder_decoder: bool,
                        streaming: bool = False, num_proc: int | None = None,
                        cache_dir: str | None = None, **settings: Any) -> ArrowExamples:
    """Read and tokenize a data file into :class:`ArrowExamples` (see the module docstring).

    ``settings`` are :func:`~sigmoid_head.data.tokenize.tokenize_records`'s (task, max_length, prompt_template,
    use_chat_template).
    """
    raw = load_raw(path, streaming=streaming, cache_dir=cache_dir)
    settings = {**settings, "is_encoder_decoder": is_encoder_decoder, "source_name": str(path)}
    source = source_key(path)
    ds = tokenize_dataset(raw, tokenizer, settings, num_proc=num_proc, cache_dir=cache_dir,
                          source=source)
    if len(ds) == 0:
        raise DataError(f"{path} yielded no trainable examples")
    return ArrowExamples(ds, is_encoder_decoder)


def split_validation(examples: ArrowExamples, fraction: float, cap: int, seed: int
                     ) -> tuple[ArrowExamples, ArrowExamples | None]:
    """Hold out ``min(cap, fraction * N)`` random examples (numpy's generator, own order)."""
    n = len(examples)
    if fraction <= 0 or n < 2:
        return examples, None
    n_val = min(cap, max(1, int(n * fraction)))
    held = np.random.default_rng([seed, 17]).choice(n, size=n_val, replace=False)
    return examples.without(held), examples.subset(held)


# ------------------------------------------------------ what the loop asks of its examples


def lengths_of(examples: Any) -> Any:
    """Padded length of every example (numpy for Arrow examples)."""
    from .batching import example_length

    if isinstance(examples, ArrowExamples):
        return examples.lengths
    return [example_length(e) for e in examples]


def examples_at(examples: Any, indices: list[int]) -> list[dict]:
    """The examples at ``indices``: one read per group for Arrow examples."""
    if isinstance(examples, ArrowExamples):
        return examples.take(indices)
    return [examples[i] for i in indices]


def batches_of(examples: Any, *, batch_size: int | None, max_tokens: int | None, shuffle: bool,
               seed: int, epoch: int) -> Any:
    """Micro-batches: ``make_batches`` for a list, a :class:`BatchIndex` for Arrow examples."""
    from .array_batching import make_batch_index
    from .batching import make_batches

    if isinstance(examples, ArrowExamples):
        return make_batch_index(examples.lengths, batch_size=batch_size, max_tokens=max_tokens,
                                shuffle=shuffle, seed=seed, epoch=epoch)
    return make_batches(lengths_of(examples), batch_size=batch_size, max_tokens=max_tokens,
                        shuffle=shuffle, seed=seed, epoch=epoch)
