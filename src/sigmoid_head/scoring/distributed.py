"""Corpus-size and data-parallel ``score`` / ``generate``: streamed, sharded, in input order.

:func:`run_sharded` drives any per-batch scoring function over an input stream:

- the inputs are read lazily (:func:`iter_inputs`), a *window* of ``window_batches x
  batch_size`` records at a time, so memory is bounded by the window, not the corpus;
- inside a window the records are sorted by length (less padding) and cut into batches;
  batch ``b`` goes to process ``b % world_size`` (``accelerate launch`` / ``torchrun``;
  one process without them). The window and the batches do not depend on the number of
  processes, so every batch is scored exactly as one process would score it and the
  output is identical, bit for bit, to a one-process run;
- each process's rows are gathered on process 0 (``torch.distributed.gather_object``),
  which writes them in input order to an append-only JSONL file and flushes it after
  every window;
- a rerun with ``resume=True`` counts the complete lines already written, cuts a
  partial last line, and skips those inputs;
- process 0 shows a progress bar with throughput and ETA.

The output writer is :class:`JsonlAppendWriter`, a deliberately small interface
(``done()``, ``write(rows)``, ``close()``) so that another writer can take its place.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..data.records import DataError

DEFAULT_WINDOW_BATCHES = 64
"""Batches per window: the sort-by-length horizon and the unit of gathering and writing."""


# ------------------------------------------------------------------- input stream


def _open_text(path: str | Path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file not found: {path}")
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    return opener(path, "rt", encoding="utf-8-sig", newline="\n")  # split at "\n" only


def _lines(path: str | Path) -> Iterator[str]:
    with _open_text(path) as f:
        for line in f:
            yield line.removesuffix("\n").removesuffix("\r")


def iter_inputs(input_jsonl: str | None = None, sources: str | None = None,
                candidates: str | None = None) -> Iterator[dict]:
    """Records of ``--input`` (JSONL, blank lines skipped) or ``-s``/``-t`` (one per line),
    read one line at a time, as :func:`sigmoid_head.cli.common.read_inputs` reads them whole."""
    if input_jsonl:
        for lineno, line in enumerate(_lines(input_jsonl), start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{input_jsonl}:{lineno}: bad JSON ({err.msg})") from err
        return
    if candidates is None:
        yield from ({"source": s} for s in _lines(sources))
        return
    try:
        for s, c in zip(_lines(sources), _lines(candidates), strict=True):
            yield {"source": s, "candidate": c}
    except ValueError as err:
        raise DataError(f"{sources} and {candidates} have different numbers of lines") from err


def count_inputs(input_jsonl: str | None = None, sources: str | None = None) -> int:
    """How many records :func:`iter_inputs` yields (a fast pass over the bytes, for the ETA)."""
    if input_jsonl:
        return sum(1 for line in _lines(input_jsonl) if line.strip())
    return sum(1 for _ in _lines(sources))


# -------------------------------------------------------------------- the writer


class JsonlAppendWriter:
    """Append-only JSONL output: ``done()`` complete lines, ``write(rows)``, ``close()``.

    With ``resume`` an existing file is kept and a partial last line (an interrupted
    write) is cut; without it the file is started afresh.
    """

    def __init__(self, path: str | Path, resume: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not resume or not self.path.exists():
            self.path.write_bytes(b"")
        self._done = self._complete_lines()
        self._f = self.path.open("ab")

    def _complete_lines(self) -> int:
        n, end = 0, 0
        with self.path.open("rb") as f:
            pos = 0
            for line in f:
                pos += len(line)
                if line.endswith(b"\n"):
                    n, end = n + 1, pos
        if end != self.path.stat().st_size:
            os.truncate(self.path, end)
        return n

    def done(self) -> int:
        return self._done

    def write(self, rows: Iterable[dict]) -> None:
        data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows)
        self._f.write(data)
        self._f.flush()
        os.fsync(self._f.fileno())
        self._done += data.count(b"\n")

    def close(self) -> None:
        self._f.close()


# --------------------------------------------------------------------- the driver


class RunningMeans:
    """Means of the numeric fields of the rows seen, for the end-of-run summary."""

    def __init__(self) -> None:
        self.n, self.sums = 0, {}

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.n += 1
            for k, v in r.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    self.sums[k] = self.sums.get(k, 0.0) + float(v)

    def row(self) -> dict:
        return {k: v / max(self.n, 1) for k, v in self.sums.items()}


def _length_key(rec: dict) -> int:
    text = rec.get("candidate", rec.get("target", ""))
    src = rec.get("source") or "".join(m.get("content", "") for m in rec.get("messages", []))
    return len(text or "") + len(src or "")


def window_batches(records: list[dict], batch_size: int) -> list[list[int]]:
    """Batches of one window: longest first (by characters), ``batch_size`` each."""
    order = sorted(range(len(records)), key=lambda i: -_length_key(records[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def run_sharded(inputs: Iterator[dict], score_batch: Callable[[list[dict]], list[dict]],
                writer: JsonlAppendWriter | None, *, batch_size: int, total: int | None = None,
                per_input: int = 1, window_batches_n: int = DEFAULT_WINDOW_BATCHES,
                progress: bool = True, desc: str = "score") -> RunningMeans:
    """Score ``inputs`` batch by batch over all processes; write rows in input order.

    Args:
        inputs: the records (every process reads the same stream).
        score_batch: records -> ``per_input`` rows per record, in record order.
        writer: the output (process 0 only writes; None: rows are only summarised).
        batch_size: records per ``score_batch`` call.
        total: number of inputs, for the ETA.
        per_input: rows per input (a resumed run skips ``done // per_input`` inputs).
        window_batches_n: batches per window (see the module docstring).
        progress: progress bar with ETA on process 0.

    Returns:
        The running means of the rows written in this run (process 0; empty elsewhere).
    """
    from tqdm.auto import tqdm

    dist = _dist()
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist else (0, 1)
    skip = [writer.done() // per_input if (writer is not None and rank == 0) else 0]
    if dist:
        dist.broadcast_object_list(skip, src=0)
    skip = skip[0]
    means = RunningMeans()
    bar = tqdm(total=total, initial=skip, desc=desc, unit="rec", dynamic_ncols=True,
               disable=not (progress and rank == 0))
    for _ in range(skip):
        next(inputs, None)
    window_size = batch_size * window_batches_n
    while True:
        window = [rec for _, rec in zip(range(window_size), inputs, strict=False)]
        if not window:
            break
        batches = window_batches(window, batch_size)
        mine = {}
        for b in range(rank, len(batches), world):
            rows = score_batch([window[i] for i in batches[b]])
            if len(rows) != per_input * len(batches[b]):
                raise RuntimeError(f"{len(rows)} rows for {len(batches[b])} inputs")
            for k, i in enumerate(batches[b]):
                mine[i] = rows[k * per_input : (k + 1) * per_input]
        parts = [mine]
        if dist:
            parts = [None] * world if rank == 0 else None
            dist.gather_object(mine, parts, dst=0)
        if rank == 0:
            merged = {i: rows for part in parts for i, rows in part.items()}
            ordered = [r for i in range(len(window)) for r in merged[i]]
            if writer is not None:
                writer.write(ordered)
            means.add(ordered)
            bar.update(len(window))
    bar.close()
    if dist:
        dist.barrier()
    return means
