"""Streamed, resumable, data-parallel output of corpus scoring (:mod:`.corpus`).

:func:`run_streamed` reads the inputs as a stream and scores them window by window with
:func:`sigmoid_head.scoring.distributed.run_sharded` (in one process, or in every process
started by ``accelerate launch`` / ``torchrun``: :func:`join_processes`). Process 0 appends
each window's rows, in input order, to :class:`sigmoid_head.safe.resumable_jsonl.ResumableJsonlWriter`
as soon as they are done: a crash keeps every row scored so far in ``<out>.partial``,
rerunning the same call (with any number of processes) continues after the last complete
row, and ``<out>`` itself appears only when every row is there. The summary is of every
row, kept as running means; :func:`write_page` draws the HTML page, :func:`summary` the
text table, :func:`record_mix` the record of the mix that made ``combined`` beside the
output (``<out>.mix.json``, read by ``evaluate``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from typing import Any, Protocol

import numpy as np

from ..safe.resumable_jsonl import ResumableJsonlWriter, inputs_key, iter_complete_jsonl
from .distributed import RunningMeans, from_first_process, process_group, run_sharded


class CorpusInputs(Protocol):
    """Inputs read as a stream: sized and iterable more than once (a list of records, or the
    CLI's files read line by line)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Any: ...


def join_processes(device: str | None) -> tuple[int, str | None]:
    """Join the processes of ``accelerate launch`` / ``torchrun`` (when ``WORLD_SIZE`` > 1);
    returns the number of processes and this process's device (``device`` unchanged in
    one process)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 1, device
    import torch
    from accelerate import PartialState

    state = PartialState(cpu=device == "cpu" or not torch.cuda.is_available())
    return state.num_processes, str(state.device) if device in (None, "cuda") else device


def _writer(path: str | None, inputs: CorpusInputs, total: int, settings: dict
            ) -> ResumableJsonlWriter | None:
    """Process 0's writer (None elsewhere, or without ``path``); a refusal (the partial
    file of another run, ...) stops every process."""
    _, rank, _ = process_group()
    writer, error = None, None
    if path and rank == 0:
        try:
            writer = ResumableJsonlWriter(path, key=inputs_key(inputs, **settings), total=total)
        except (ValueError, OSError) as err:
            error = err
    refused = from_first_process(None if error is None else str(error))
    if error is not None:
        raise error
    if refused:
        raise ValueError(refused)
    return writer


def run_streamed(inputs: CorpusInputs, score_batch: Callable[[list[dict]], list[dict]], *,
                 to_json: str | None, settings: dict, batch_size: int, window: int,
                 rows_per_input: int = 1, progress: bool = True,
                 on_rows: Callable[[list[dict]], None] | None = None) -> RunningMeans:
    """Score ``inputs`` (``score_batch`` on ``batch_size`` of them at a time, windows of
    ``window``), streamed to ``to_json`` when given, resumed from an interrupted run with
    the same inputs and ``settings``. Returns the means of every row (process 0; rows written
    by an earlier run included) and prints the throughput. ``on_rows`` also receives each
    window's new rows on process 0, in input order."""
    total = len(inputs) * rows_per_input
    writer = _writer(to_json, inputs, total, settings)
    done = writer.done if writer is not None else 0
    means = RunningMeans()
    if done:
        print(f"{to_json}: continuing after {done} rows already written")
        means.add(iter_complete_jsonl(writer.partial))

    def sink(rows: list[dict]) -> None:
        if writer is not None:  # one fsync per window: a rerun scores the window again anyway
            writer.write_many(rows, each=False)
        means.add(rows)
        if on_rows is not None:
            on_rows(rows)

    start = time.perf_counter()
    with writer if writer is not None else nullcontext():
        new = run_sharded(iter(inputs), score_batch, sink, batch_size=batch_size, window=window,
                          total=len(inputs), skip_rows=done, per_input=rows_per_input,
                          progress=progress)
    seconds = time.perf_counter() - start
    _, rank, world = process_group()
    if rank == 0:
        print(f"{new} new output{'' if new == 1 else 's'} in {seconds:.1f} s ({new / max(seconds, 1e-9):.1f}/s, "
              f"{world} process{'es' if world > 1 else ''})")
    if to_json and rank == 0 and means.n != total:
        raise ValueError(f"{to_json}: has {means.n} rows, expected {total}")
    return means


def write_page(path: str, rows: Sequence[dict], to_json: str | None, tokenizer: Any,
               spans_from: str | None, notices: Sequence[str] = ()) -> None:
    """The HTML page of every output row (process 0): read back from ``to_json`` when given
    (so a resumed run's page has the rows of the earlier run too), else ``rows``; the
    ``notices`` (saved settings that leave the head out) at its top."""
    from ..evaluation.html import write_page as render
    from ..safe.files import is_stream
    from ..safe.resumable_jsonl import read_complete_jsonl

    if process_group()[1] != 0:
        return
    if to_json and not is_stream(to_json):  # a stream (/dev/stdout) cannot be read back
        rows = read_complete_jsonl(to_json)
    out = render(path, rows, tokenizer, spans_from=spans_from, notices=notices)
    print(f"page of {len(rows)} outputs written to {out}")


def record_mix(to_json: str | None, combination: Any, command: str, n: int,
               has_combined: bool) -> None:
    """Record beside the finished output ``to_json`` (process 0; not for a stream, which has
    no "beside") the mix that made its ``combined`` column
    (:func:`~sigmoid_head.evaluation.combination.mix_record`), or remove the record of an
    earlier run into the same file when this one has no ``combined``."""
    from ..evaluation.combination import file_digest, mix_record, mix_record_path
    from ..safe.files import is_stream, write_atomic
    from ..safe.json_io import dumps

    if not to_json or is_stream(to_json) or process_group()[1] != 0:
        return
    path = mix_record_path(to_json)
    if combination is None or not has_combined:
        path.unlink(missing_ok=True)
        return
    record = {**mix_record(combination, command, n), "scores_sha256": file_digest(to_json)}
    write_atomic(path, dumps(record, indent=1, sort_keys=True) + "\n")


def __getattr__(name: str) -> object:
    if name == "PASS_COLUMNS":  # the registry's, read when asked
        from ..registry.columns import summary_keys

        return tuple(summary_keys())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def summary(rows: Sequence[dict], n: int | None = None) -> str:
    """Mean sequence scores per registered method (product, mean_log, min), the combined
    score and the single columns the column registry shows in the summary, as a small text table (``n``: the number of outputs, when
    ``rows`` holds their means only)."""
    from ..registry.columns import summary_keys
    from ..registry.methods import AGGREGATIONS, methods

    shown = ("product", "mean_log", "min")
    lines = [f"{'method':<14}" + "".join(f"{('mean' if a == 'product' else a):>12}" for a in shown)]
    for m in methods():
        if m.name in rows[0]:
            vals = [_mean(rows, AGGREGATIONS[a].key(m.name)) for a in shown if a in m.aggregations]
            lines.append(f"{m.name:<14}" + "".join(f"{v:>12.4f}" for v in vals))
    if "combined" in rows[0]:
        lines.append(f"{'combined':<14}{_mean(rows, 'combined'):>12.4f}"
                     f"{_mean(rows, 'combined_log'):>12.4f}")
    for name in summary_keys():  # the registry's single columns (entropy_mean, ...)
        if name in rows[0]:
            lines.append(f"{name:<14}{_mean(rows, name):>12.4f}")
    return f"{len(rows) if n is None else n} outputs scored\n" + "\n".join(lines)


def _mean(rows: Iterable[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))
