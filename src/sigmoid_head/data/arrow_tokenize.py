"""Records to tokenized Arrow files through Hugging Face ``datasets`` (the first half of
:mod:`.datasets_io`: reading a data file or hub data set as raw records, and tokenizing
them in worker processes into on-disk Arrow files of 32-bit columns).

``.jsonl``/``.json``/``.tsv``/``.txt`` (gzipped too) are read by the reader of the
in-memory path (:mod:`.records`, a line at a time); ``.parquet``, ``.arrow``, ``.csv``
and ``save_to_disk`` directories by ``datasets``' own readers; any other name is a hub
data set id (where there is a network). Tokenization is
:func:`~sigmoid_head.data.tokenize.tokenize_records`, the in-memory path's, so the
examples are the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .batching import IGNORE_INDEX
from .mapped_pages import MappedPages
from .records import iter_records_with_lines
from .tokenize import tokenize_records

_RECORD_KEYS = ("source", "target", "messages", "text")
_EXAMPLE_KEYS = ("input_ids", "labels", "length", "n_input", "n_trained")


_BUILDERS = {".parquet": "parquet", ".arrow": "arrow", ".csv": "csv"}
"""Formats read by ``datasets``' own builders; .jsonl/.json/.tsv/.txt (and .gz) are read
by :func:`~sigmoid_head.data.records.iter_records_with_lines`, the reader of the in-memory
path (the same checks, and errors that name the file and the line)."""


_RECORD_BATCH_ROWS = 10_000
"""Rows per Arrow record batch of the files written here. Opening a file, ``datasets``
reads the header of every record batch, and each read maps the kernel's fault-around
(64 KiB) of the file into the process; it also keeps a few KiB of objects per batch.
With ``datasets``' default of 1,000 rows that is ~63 MiB of mapped file and ~5 MiB of
private memory per million examples at every load; 10,000 rows cut both tenfold."""

_TOKENIZE_ROWS = 1_000
"""Records tokenized at a time (the Python lists of one such batch are what tokenization
holds; its result goes to Arrow before the next)."""


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
                                           fingerprint=_hash(["records", gen_kwargs, _RECORD_BATCH_ROWS]),
                                           writer_batch_size=_RECORD_BATCH_ROWS)


def _hash(value: Any) -> str:
    from datasets.fingerprint import Hasher

    return Hasher.hash(value)


class _Tokenize:
    """The batched ``map`` function: columns of records -> an Arrow table of examples,
    tokenized ``rows`` records at a time.

    ``after_batch`` (called after each batch) exists in this process only: it is neither
    pickled for worker processes nor part of the cache's fingerprint.
    """

    def __init__(self, tokenizer: Any, settings: dict, rows: int = _TOKENIZE_ROWS) -> None:
        self.tokenizer, self.settings, self.rows = tokenizer, settings, rows
        self.after_batch: Any = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "after_batch": None}

    def __call__(self, batch: dict[str, list]) -> Any:
        import pyarrow as pa

        keys = [k for k in _RECORD_KEYS if k in batch]
        n = len(batch[keys[0]]) if keys else 0
        schema = _features().arrow_schema
        tables = [pa.Table.from_pydict(self.records(
            [{k: batch[k][i] for k in keys if batch[k][i] is not None}
             for i in range(start, min(n, start + self.rows))]), schema=schema)
                  for start in range(0, n, self.rows)]
        if self.after_batch is not None:
            self.after_batch()
        return pa.concat_tables(tables) if tables else schema.empty_table()

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
                     cache_dir: str | None = None, batch_size: int = _TOKENIZE_ROWS,
                     source: Any = None) -> Any:
    """Tokenize a (streamed or on-disk) data set of records into an on-disk Arrow ``Dataset``
    (``batch_size`` records at a time, written in record batches of ``_RECORD_BATCH_ROWS``).

    ``source`` names a streamed data set for the cache's fingerprint (the path and its
    size and mtime, or the hub id): the same source and settings reuse the Arrow files.
    The pages of ``raw``'s Arrow files that this process reads are given back after every
    batch (:class:`~.mapped_pages.MappedPages`; worker processes open their own mappings).
    """
    import datasets

    fn = _Tokenize(tokenizer, settings, batch_size)
    features = _features()
    if isinstance(raw, datasets.IterableDataset):
        return datasets.Dataset.from_generator(
            _tokenized_rows, gen_kwargs={"raw": raw, "fn": fn, "batch_size": batch_size},
            features=features, cache_dir=cache_dir, writer_batch_size=_RECORD_BATCH_ROWS,
            fingerprint=_hash(["tokenized", source, fn, batch_size]))
    pages = MappedPages(raw)
    pages.release()  # what opening it read
    fn.after_batch = pages.release
    try:
        return raw.map(fn, batched=True, batch_size=_RECORD_BATCH_ROWS,
                       writer_batch_size=_RECORD_BATCH_ROWS, num_proc=num_proc,
                       remove_columns=raw.column_names, features=features, desc="tokenize")
    finally:
        fn.after_batch = None
        pages.release()


def _features() -> Any:
    """The tokenized examples' columns, 32-bit (half the bytes of ``datasets``' default int64)."""
    from datasets import Features, Sequence, Value

    ids = Sequence(Value("int32"))
    return Features({"input_ids": ids, "labels": ids, "length": Value("int32"),
                     "n_input": Value("int32"), "n_trained": Value("int32")})


def source_key(path: str) -> Any:
    """What identifies the data behind ``path`` (for a streamed source's fingerprint): the
    size and mtime of the file, or of every file of a directory; a hub id as it is."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    return [str(p.resolve()) if p.exists() else path,
            [(str(f.relative_to(p)), f.stat().st_size, f.stat().st_mtime_ns) for f in files]]
