"""Corpus-size and data-parallel scoring: inputs in windows, batches over processes, rows in input order.

:func:`run_sharded` drives any per-batch scoring function over a stream of inputs:

- the inputs are read lazily, a *window* of ``window`` inputs at a time, so memory is
  bounded by the window, not the corpus;
- inside a window the inputs are sorted by length (less padding) and cut into batches of
  ``batch_size``; batch ``b`` goes to process ``b % world_size`` (``accelerate launch`` /
  ``torchrun``; one process without them). The windows and the batches do not depend on
  the number of processes, so every batch is scored as one process scores it and the rows
  are the same as a one-process run's;
- each process's rows are gathered on process 0 (``torch.distributed.gather_object``),
  which hands them, in input order, to ``sink`` (the CLI's sink appends them to
  :class:`sigmoid_head.safe.resumable_jsonl.ResumableJsonlWriter`);
- ``skip_rows`` rows already written by an interrupted run are not handed on again. The
  windows are counted from the first input, so the window holding the first missing row
  is scored whole, and a resumed output equals an uninterrupted one;
- process 0 shows a progress bar with the rate and the time left (ETA).

Without ``torch.distributed`` initialised everything runs in this process.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

DEFAULT_WINDOW_BATCHES = 32
"""Batches per window: the sort-by-length horizon and the unit of gathering and writing."""


class RunningMeans:
    """Means of the numeric fields of the rows seen (for a summary without keeping rows)."""

    def __init__(self) -> None:
        self.n, self.sums = 0, {}

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.n += 1
            for k, v in r.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    self.sums[k] = self.sums.get(k, 0.0) + float(v)

    def row(self) -> dict:
        """One row holding the mean of every numeric field."""
        return {k: v / max(self.n, 1) for k, v in self.sums.items()}


def _length_key(rec: dict) -> int:
    text = rec.get("candidate", rec.get("target", ""))
    src = rec.get("source") or "".join(m.get("content", "") for m in rec.get("messages", []))
    return len(text or "") + len(src or "")


def window_batches(records: list[dict], batch_size: int) -> list[list[int]]:
    """Batches of one window: indices into ``records``, longest first (by characters); a
    window of one batch keeps its order."""
    if len(records) <= batch_size:
        return [list(range(len(records)))]
    order = sorted(range(len(records)), key=lambda i: -_length_key(records[i]))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def process_group() -> tuple[Any, int, int]:
    """(``torch.distributed`` when initialised else None, rank, world size)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist, dist.get_rank(), dist.get_world_size()
    return None, 0, 1


def from_first_process(value: Any) -> Any:
    """``value`` as process 0 has it, on every process (itself without a process group)."""
    dist, _, _ = process_group()
    if dist is None:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _score(score_batch: Callable[[list[dict]], list[dict]], window: list[dict], batch: list[int],
           first: int, per_input: int) -> list[dict]:
    """``score_batch`` of one batch; an error about its "record N" names the input's number."""
    try:
        rows = score_batch([window[i] for i in batch])
    except ValueError as err:
        m = re.search(r"\brecord (\d+)", str(err))
        if m is None or not 1 <= int(m[1]) <= len(batch):
            raise
        message = str(err).replace(m[0], f"input {first + batch[int(m[1]) - 1] + 1}", 1)
        raise type(err)(message) from err
    if len(rows) != per_input * len(batch):
        raise RuntimeError(f"{len(rows)} rows for {len(batch)} inputs")
    return rows


def _window_rows(window: list[dict], first: int, score_batch: Callable, batch_size: int,
                 per_input: int, rank: int, world: int) -> dict[int, list[dict]]:
    """This process's share of a window: window index -> its rows."""
    mine: dict[int, list[dict]] = {}
    batches = window_batches(window, batch_size)
    for b in range(rank, len(batches), world):
        rows = _score(score_batch, window, batches[b], first, per_input)
        for k, i in enumerate(batches[b]):
            mine[i] = rows[k * per_input : (k + 1) * per_input]
    return mine


def _gathered(dist: Any, rank: int, world: int, part: dict, error: BaseException | None
              ) -> list[dict]:
    """Every process's part on process 0; an error on any process stops all of them."""
    if dist is None:
        if error is not None:
            raise error
        return [part]
    parts = [None] * world if rank == 0 else None
    dist.gather_object((part, None if error is None else f"{type(error).__name__}: {error}"),
                       parts, dst=0)
    failed = [p[1] for p in parts if p[1]] if rank == 0 else None
    failed = from_first_process(failed)
    if error is not None:
        raise error
    if failed:
        raise RuntimeError(f"another process failed: {failed[0]}")
    return [p[0] for p in parts] if rank == 0 else []


def run_sharded(inputs: Iterator[dict], score_batch: Callable[[list[dict]], list[dict]],
                sink: Callable[[list[dict]], None], *, batch_size: int, window: int,
                total: int | None = None, skip_rows: int = 0, per_input: int = 1,
                progress: bool = True, desc: str = "inputs") -> int:
    """Score ``inputs`` batch by batch over all processes; hand the rows on in input order.

    Args:
        inputs: the inputs (every process reads the same stream).
        score_batch: inputs -> ``per_input`` rows per input, in input order.
        sink: takes each window's rows in input order (called on process 0 only).
        batch_size: inputs per ``score_batch`` call.
        window: inputs per window (see the module docstring); the same value in a rerun
            makes the resumed output equal an uninterrupted one.
        total: number of inputs, for the progress bar's ETA.
        skip_rows: rows written by an earlier run (process 0's count counts).
        per_input: rows per input.
        progress: progress bar on process 0.
        desc: the progress bar's label.

    Returns:
        The number of rows handed to ``sink`` (on process 0; 0 elsewhere).
    """
    from tqdm.auto import tqdm

    dist, rank, world = process_group()
    skip_rows = from_first_process(skip_rows)
    if skip_rows % per_input:
        raise ValueError(f"{skip_rows} rows written: that ends inside the rows of one input")
    skip = skip_rows // per_input
    if total is not None and skip >= total:  # everything was written by the earlier run
        return 0
    window = max(1, window)
    first = (skip // window) * window  # the window holding the first missing input
    for _ in islice(inputs, first):
        pass
    bar = tqdm(total=total, initial=skip, desc=desc, unit="input", dynamic_ncols=True,
               disable=not (progress and rank == 0))
    handed = 0
    while chunk := list(islice(inputs, window)):
        part, error = {}, None
        try:
            part = _window_rows(chunk, first, score_batch, batch_size, per_input, rank, world)
        except Exception as err:  # noqa: BLE001 - every process must learn of it
            error = err
        parts = _gathered(dist, rank, world, part, error)
        if rank == 0:
            merged = {i: rows for p in parts for i, rows in p.items()}
            new = [r for i in range(max(skip - first, 0), len(chunk)) for r in merged[i]]
            sink(new)
            handed += len(new)
            bar.update(len(chunk) - max(skip - first, 0))
        first += len(chunk)
    bar.close()
    return handed
