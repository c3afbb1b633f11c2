"""Training data through Hugging Face ``datasets``: Arrow on disk, tokenized in workers.

``TrainConfig(data_engine="datasets")`` reads the training file with ``datasets``
(``.jsonl``/``.json`` (gzipped too), ``.parquet``, ``.arrow``, a ``save_to_disk``
directory, ``.tsv``/``.txt`` through the same line parser as :mod:`.records`, or a hub
data set id where there is a network), tokenizes it with ``Dataset.map(batched=True,
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

import gzip
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .batching import IGNORE_INDEX
from .records import DataError, _parse_line
from .tokenize import tokenize_records

logger = logging.getLogger(__name__)

ENGINES = ("memory", "datasets", "streaming")
_RECORD_KEYS = ("source", "target", "messages", "text")


def _builder(path: str) -> tuple[str | None, str]:
    """(datasets builder name, or None for our line parser; line format)."""
    name = path.lower().removesuffix(".gz")
    for ext, builder in ((".jsonl", "json"), (".json", "json"), (".parquet", "parquet"),
                         (".arrow", "arrow"), (".csv", "csv")):
        if name.endswith(ext):
            return builder, ""
    if name.endswith(".tsv"):
        return None, "tsv"
    if name.endswith(".txt"):
        return None, "txt"
    raise DataError(f"{path}: cannot tell the format from the extension "
                    "(.jsonl, .json, .parquet, .arrow, .csv, .tsv, .txt, optionally .gz)")


def _lines(path: str, fmt: str) -> Iterator[dict]:
    """Records of a .tsv/.txt file, one line at a time (never the whole file in memory)."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    n_cols = None
    with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            line = line.strip() if fmt == "txt" else line
            if not line.strip():
                continue
            rec, problem = _parse_line(line, fmt, n_cols)
            if problem:
                raise DataError(f"{path}:{lineno}: {problem}")
            n_cols = len(rec) if fmt == "tsv" else None
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
    builder, fmt = _builder(path)
    if builder is not None:
        return datasets.load_dataset(builder, data_files=str(p), split="train",
                                     streaming=streaming, cache_dir=cache_dir)
    cls = datasets.IterableDataset if streaming else datasets.Dataset
    kw = {} if streaming else {"cache_dir": cache_dir}
    return cls.from_generator(_lines, gen_kwargs={"path": str(p), "fmt": fmt}, **kw)


class _Tokenize:
    """The batched ``map`` function: columns of records -> columns of examples."""

    def __init__(self, tokenizer: Any, settings: dict) -> None:
        self.tokenizer, self.settings = tokenizer, settings

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        keys = [k for k in _RECORD_KEYS if k in batch]
        n = len(batch[keys[0]]) if keys else 0
        records = [{k: batch[k][i] for k in keys if batch[k][i] is not None} for i in range(n)]
        examples, _ = tokenize_records(records, self.tokenizer, **self.settings)
        enc_dec = self.settings["is_encoder_decoder"]
        out: dict[str, list] = {"input_ids": [], "labels": [], "length": [], "n_input": [],
                                "n_trained": []}
        for ex in examples:
            ids, labels = ex["input_ids"], ex["labels"]
            out["input_ids"].append(ids)
            out["labels"].append(labels)
            out["n_input"].append(len(ids))
            out["length"].append(len(ids) + (len(labels) if enc_dec else 0))
            trained = labels if enc_dec else labels[1:]
            out["n_trained"].append(sum(1 for t in trained if t != IGNORE_INDEX))
        return out


def tokenize_dataset(raw: Any, tokenizer: Any, settings: dict, *, num_proc: int | None = None,
                     cache_dir: str | None = None, batch_size: int = 1000) -> Any:
    """Tokenize a (streamed or on-disk) data set of records into an on-disk Arrow ``Dataset``."""
    import datasets

    fn = _Tokenize(tokenizer, settings)
    if isinstance(raw, datasets.IterableDataset):
        cols = list(raw.column_names or [])
        streamed = raw.map(fn, batched=True, batch_size=batch_size, remove_columns=cols or None)

        def rows() -> Iterator[dict]:
            for row in streamed:
                yield {k: row[k] for k in ("input_ids", "labels", "length", "n_input", "n_trained")}

        return datasets.Dataset.from_generator(rows, cache_dir=cache_dir)
    return raw.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc,
                   remove_columns=raw.column_names, desc="tokenize")


class ArrowExamples:
    """Tokenized examples on disk, behaving as the loop's list of example dicts.

    ``examples[i]`` reads one example from the memory-mapped Arrow table; ``lengths``,
    ``n_input`` and ``n_trained`` are numpy arrays (4 bytes per example each).
    """

    def __init__(self, dataset: Any, is_encoder_decoder: bool, rows: np.ndarray | None = None,
                 columns: dict[str, np.ndarray] | None = None) -> None:
        self.dataset, self.is_seq2seq = dataset, is_encoder_decoder
        if columns is None:
            columns = {k: _int_column(dataset, k) for k in ("length", "n_input", "n_trained")}
        self.rows = rows  # indices into ``dataset`` (None: all, in order)
        pick = (lambda a: a) if rows is None else (lambda a: a[rows])
        self.lengths, self.n_input, self.n_trained = (pick(columns[k]) for k in
                                                      ("length", "n_input", "n_trained"))
        self._columns = columns

    def __len__(self) -> int:
        return len(self.lengths)

    def _row(self, i: int) -> int:
        return int(i) if self.rows is None else int(self.rows[i])

    def __getitem__(self, i: int) -> dict:
        row = self.dataset[self._row(i)]
        return {"input_ids": row["input_ids"], "labels": row["labels"],
                "is_seq2seq": self.is_seq2seq}

    def subset(self, positions: np.ndarray) -> ArrowExamples:
        """The examples at ``positions`` (of this view), sharing the table."""
        rows = positions if self.rows is None else self.rows[positions]
        return ArrowExamples(self.dataset, self.is_seq2seq, np.asarray(rows, np.int64),
                             self._columns)

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
        step = 65536
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
    col = dataset.with_format("arrow")[name] if len(dataset) else None
    if col is None:
        return np.zeros(0, dtype=np.int32)
    return col.to_numpy(zero_copy_only=False).astype(np.int32)


def load_examples_arrow(path: str, tokenizer: Any, *, is_encoder_decoder: bool,
                        streaming: bool = False, num_proc: int | None = None,
                        cache_dir: str | None = None, **settings: Any) -> ArrowExamples:
    """Read and tokenize a data file into :class:`ArrowExamples` (see the module docstring).

    ``settings`` are :func:`tokenize_records`'s (task, max_length, prompt_template,
    use_chat_template).
    """
    raw = load_raw(path, streaming=streaming, cache_dir=cache_dir)
    settings = {**settings, "is_encoder_decoder": is_encoder_decoder, "source_name": str(path)}
    ds = tokenize_dataset(raw, tokenizer, settings, num_proc=num_proc, cache_dir=cache_dir)
    if len(ds) == 0:
        raise DataError(f"{path} yielded no trainable examples")
    return ArrowExamples(ds, is_encoder_decoder)


def split_validation(examples: ArrowExamples, fraction: float, cap: int, seed: int
                     ) -> tuple[ArrowExamples, ArrowExamples | None]:
    """Hold out ``min(cap, fraction * N)`` random examples (numpy's generator, own order)."""
    n = len(examples)
    if fraction <= 0 or n < 2:
        return examples, None
    perm = np.random.default_rng([seed, 17]).permutation(n)
    n_val = min(cap, max(1, int(n * fraction)))
    return examples.subset(np.sort(perm[n_val:])), examples.subset(perm[:n_val])


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
