"""Training data through Hugging Face ``datasets``: Arrow on disk, tokenized in workers.

``TrainConfig(data_engine="datasets")`` reads the training file with ``datasets``
(``.jsonl``/``.json``/``.tsv``/``.txt``, gzipped too, through the reader of the in-memory
path, :mod:`.records`, a line at a time; ``.parquet``, ``.arrow``, ``.csv`` and
``save_to_disk`` directories through ``datasets``' own readers; a hub data set id where
there is a network), tokenizes it with ``Dataset.map(batched=True,
num_proc=...)`` in worker processes (the same :func:`~sigmoid_head.data.tokenize.tokenize_records`
as the in-memory path, so the examples are the same), and keeps the result as Arrow
files on disk, memory-mapped. ``data_engine="streaming"`` reads the file as an
``IterableDataset`` instead (the raw records are never all loaded; tokenization runs in
this process) and writes the tokenized examples to Arrow on disk as they come.

What the training loop holds per example is then a few numpy integers (padded length,
input tokens, trained positions: :class:`ArrowExamples`) and the batch index
(:mod:`.array_batching`): no Python object per example. An example's token ids are read
from the memory-mapped Arrow table when its micro-batch is collated.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .batching import IGNORE_INDEX
from .records import DataError, iter_records_with_lines
from .tokenize import tokenize_records

logger = logging.getLogger(__name__)

_RECORD_KEYS = ("source", "target", "messages", "text")
_EXAMPLE_KEYS = ("input_ids", "labels", "length", "n_input", "n_trained")
_NUMBERS = ("length", "n_input", "n_trained")
_ATTRS = ("lengths", "n_input", "n_trained")


_BUILDERS = {".parquet": "parquet", ".arrow": "arrow", ".csv": "csv"}
"""Formats read by ``datasets``' own builders; .jsonl/.json/.tsv/.txt (and .gz) are read
by :func:`~sigmoid_head.data.records.iter_records_with_lines`, the reader of the in-memory
path (the same checks, and errors that name the file and the line)."""


def _records(path: str, stamp: tuple[int, int]) -> Iterator[dict]:
    """The records of a JSONL/TSV/text file, one line at a time (``stamp``, the file's size
    and mtime, is there so that ``datasets`` fingerprints a changed file anew)."""
    for _, rec in iter_records_with_lines(path):
        yield rec


def load_raw(path: str, *, streaming: bool = False, cache_dir: str | None = None) -> Any:
    """The records of ``path`` as a ``datasets.Dataset`` (or ``IterableDataset`` when streaming)."""
    import datasets

    p = Path(path)
    if p.is_dir():
        if streaming:
            return datasets.load_from_disk(str(p)).to_iterable_dataset()
        return datasets.load_from_disk(str(p))
    if not p.exists():  # a hub data set id
        return datasets.load_dataset(path, split="train", streaming=streaming, cache_dir=cache_dir)
    builder = _BUILDERS.get(p.suffix.lower())
    if builder is not None:
        return datasets.load_dataset(builder, data_files=str(p), split="train",
                                     streaming=streaming, cache_dir=cache_dir)
    stat = p.stat()
    gen_kwargs = {"path": str(p), "stamp": (stat.st_size, stat.st_mtime_ns)}
    if streaming:
        return datasets.IterableDataset.from_generator(_records, gen_kwargs=gen_kwargs)
    return datasets.Dataset.from_generator(_records, gen_kwargs=gen_kwargs, cache_dir=cache_dir,
                                           fingerprint=_hash(["records", gen_kwargs]))


def _hash(value: Any) -> str:
    from datasets.fingerprint import Hasher

    return Hasher.hash(value)


class _Tokenize:
    """The batched ``map`` function: columns of records -> columns of examples."""

    def __init__(self, tokenizer: Any, settings: dict) -> None:
        self.tokenizer, self.settings = tokenizer, settings

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        keys = [k for k in _RECORD_KEYS if k in batch]
        n = len(batch[keys[0]]) if keys else 0
        return self.records([{k: batch[k][i] for k in keys if batch[k][i] is not None}
                             for i in range(n)])

    def records(self, records: list[dict]) -> dict[str, list]:
        """Columns of the examples of ``records`` (an example with nothing to train is dropped)."""
        examples, _ = tokenize_records(records, self.tokenizer, **self.settings)
        enc_dec = self.settings["is_encoder_decoder"]
        out: dict[str, list] = {k: [] for k in _EXAMPLE_KEYS}
        for ex in examples:
            ids, labels = ex["input_ids"], ex["labels"]
            out["input_ids"].append(ids)
            out["labels"].append(labels)
            out["n_input"].append(len(ids))
            out["length"].append(len(ids) + (len(labels) if enc_dec else 0))
            trained = labels if enc_dec else labels[1:]
            out["n_trained"].append(sum(1 for t in trained if t != IGNORE_INDEX))
        return out


def _tokenized_rows(raw: Any, fn: _Tokenize, batch_size: int) -> Iterator[dict]:
    """Examples of a streamed data set, tokenized ``batch_size`` records at a time."""
    it = iter(raw)
    while batch := [{k: v for k, v in rec.items() if k in _RECORD_KEYS and v is not None}
                    for rec in itertools.islice(it, batch_size)]:
        columns = fn.records(batch)
        for i in range(len(columns["input_ids"])):
            yield {k: columns[k][i] for k in _EXAMPLE_KEYS}


def tokenize_dataset(raw: Any, tokenizer: Any, settings: dict, *, num_proc: int | None = None,
                     cache_dir: str | None = None, batch_size: int = 1000,
                     source: Any = None) -> Any:
    """Tokenize a (streamed or on-disk) data set of records into an on-disk Arrow ``Dataset``.

    ``source`` names a streamed data set for the cache's fingerprint (the path and its
    size and mtime, or the hub id): the same source and settings reuse the Arrow files.
    """
    import datasets

    fn = _Tokenize(tokenizer, settings)
    features = _features()
    if isinstance(raw, datasets.IterableDataset):
        return datasets.Dataset.from_generator(
            _tokenized_rows, gen_kwargs={"raw": raw, "fn": fn, "batch_size": batch_size},
            features=features, cache_dir=cache_dir,
            fingerprint=_hash(["tokenized", source, fn, batch_size]))
    return raw.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc,
                   remove_columns=raw.column_names, features=features, desc="tokenize")


def _features() -> Any:
    """The tokenized examples' columns, 32-bit (half the bytes of ``datasets``' default int64)."""
    from datasets import Features, Sequence, Value

    ids = Sequence(Value("int32"))
    return Features({"input_ids": ids, "labels": ids, "length": Value("int32"),
                     "n_input": Value("int32"), "n_trained": Value("int32")})


class ArrowExamples:
    """Tokenized examples on disk, behaving as the loop's list of example dicts.

    ``examples[i]`` reads one example from the memory-mapped Arrow table. ``lengths``,
    ``n_input`` and ``n_trained`` are numpy arrays in the smallest unsigned dtype that holds
    them (2 bytes per example each up to 65,535 tokens); a view made by :meth:`subset` also
    keeps its ``rows`` into the table (4 bytes per example).
    """

    def __init__(self, dataset: Any, is_encoder_decoder: bool, rows: np.ndarray | None = None,
                 columns: dict[str, np.ndarray] | None = None) -> None:
        self.dataset, self.is_seq2seq = dataset, is_encoder_decoder
        if columns is None:
            columns = {k: _int_column(dataset, k) for k in _NUMBERS}
        self.rows = rows  # indices into ``dataset`` (None: all, in order)
        self.lengths, self.n_input, self.n_trained = (columns[k] for k in _NUMBERS)

    def __len__(self) -> int:
        return len(self.lengths)

    def _row(self, i: int) -> int:
        return int(i) if self.rows is None else int(self.rows[i])

    def __getitem__(self, i: int) -> dict:
        row = self.dataset[self._row(i)]
        return {"input_ids": row["input_ids"], "labels": row["labels"],
                "is_seq2seq": self.is_seq2seq}

    def subset(self, positions: np.ndarray) -> ArrowExamples:
        """The examples at ``positions`` (of this view), sharing the table (not this view's
        arrays: a view of most examples lets the full arrays go)."""
        rows = positions if self.rows is None else self.rows[positions]
        columns = {k: getattr(self, a)[positions] for k, a in zip(_NUMBERS, _ATTRS, strict=True)}
        return ArrowExamples(self.dataset, self.is_seq2seq, _index_array(rows), columns)

    def token_counts(self, vocab_size: int) -> np.ndarray:
        """(V,) unigram counts of the trained target tokens of these examples."""
        import pyarrow as pa
        import pyarrow.compute as pc

        table = self.dataset.with_format("arrow")
        counts = np.zeros(vocab_size, dtype=np.float64)
        keep = None
        if self.rows is not None:
            keep = np.zeros(len(self.dataset), dtype=bool)
            keep[self.rows] = True
        step = 16384  # rows per read: bounds the memory of a pass over every label
        for start in range(0, len(self.dataset), step):
            labels = table[start : start + step]["labels"]
            if keep is not None:
                labels = pc.filter(labels, pa.array(keep[start : start + step]))
            if not self.is_seq2seq:  # position 0 of a causal example is never trained
                labels = pc.list_slice(labels, 1)
            flat = pc.list_flatten(labels).to_numpy(zero_copy_only=False)
            flat = flat[flat != IGNORE_INDEX]
            if flat.size and int(flat.max()) >= vocab_size:
                raise ValueError(f"label id {int(flat.max())} is outside the vocabulary ({vocab_size})")
            counts += np.bincount(flat, minlength=vocab_size)
        return counts


def _int_column(dataset: Any, name: str) -> np.ndarray:
    """A column of non-negative ints, in the smallest unsigned dtype that holds it."""
    if not len(dataset):
        return np.zeros(0, dtype=np.uint16)
    col = dataset.with_format("arrow")[name].to_numpy(zero_copy_only=False)
    return col.astype(np.min_scalar_type(max(int(col.max()), 2**8)), copy=False)


def _index_array(rows: np.ndarray) -> np.ndarray:
    """Row indices as int32 (int64 past 2**31 rows)."""
    rows = np.asarray(rows)
    small = not len(rows) or int(rows.max()) < 2**31
    return rows.astype(np.int32 if small else np.int64, copy=False)


def load_examples_arrow(path: str, tokenizer: Any, *, is_encoder_decoder: bool,
                        streaming: bool = False, num_proc: int | None = None,
                        cache_dir: str | None = None, **settings: Any) -> ArrowExamples:
    """Read and tokenize a data file into :class:`ArrowExamples` (see the module docstring).

    ``settings`` are :func:`tokenize_records`'s (task, max_length, prompt_template,
    use_chat_template).
    """
    raw = load_raw(path, streaming=streaming, cache_dir=cache_dir)
    settings = {**settings, "is_encoder_decoder": is_encoder_decoder, "source_name": str(path)}
    source = _source_key(path)
    ds = tokenize_dataset(raw, tokenizer, settings, num_proc=num_proc, cache_dir=cache_dir,
                          source=source)
    if len(ds) == 0:
        raise DataError(f"{path} yielded no trainable examples")
    return ArrowExamples(ds, is_encoder_decoder)


def _source_key(path: str) -> Any:
    """What identifies the data behind ``path`` (for a streamed source's fingerprint): the
    size and mtime of the file, or of every file of a directory; a hub id as it is."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    return [str(p.resolve()) if p.exists() else path,
            [(str(f.relative_to(p)), f.stat().st_size, f.stat().st_mtime_ns) for f in files]]


def split_validation(examples: ArrowExamples, fraction: float, cap: int, seed: int
                     ) -> tuple[ArrowExamples, ArrowExamples | None]:
    """Hold out ``min(cap, fraction * N)`` random examples (numpy's generator, own order)."""
    n = len(examples)
    if fraction <= 0 or n < 2:
        return examples, None
    n_val = min(cap, max(1, int(n * fraction)))
    held = np.random.default_rng([seed, 17]).choice(n, size=n_val, replace=False)
    keep = np.ones(n, dtype=bool)
    keep[held] = False
    return examples.subset(np.flatnonzero(keep)), examples.subset(held)


# ------------------------------------------------------ what the loop asks of its examples


def lengths_of(examples: Any) -> Any:
    """Padded length of every example (numpy for Arrow examples)."""
    from .batching import example_length

    if isinstance(examples, ArrowExamples):
        return examples.lengths
    return [example_length(e) for e in examples]


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
