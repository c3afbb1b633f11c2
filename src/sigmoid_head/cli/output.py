"""Streamed, resumable, data-parallel output for ``score`` and ``generate``.

:func:`run_streamed` reads the inputs as a stream and scores them window by window with
:func:`sigmoid_head.scoring.distributed.run_sharded` (in one process, or in every process
started by ``accelerate launch`` / ``torchrun``: :func:`launch`). Process 0 appends each
window's rows, in input order, to :class:`sigmoid_head.io_utils.ResumableJsonlWriter` as
soon as they are done: a crash keeps every row scored so far in ``<out>.partial``,
rerunning the same command (with any number of processes) continues after the last
complete row, and ``<out>`` itself appears only when every row is there. The output path
is checked before any work; the summary is of every row, kept as running means.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from contextlib import nullcontext

from ..io_utils import ResumableJsonlWriter, inputs_key, iter_complete_jsonl
from ..output_safety import content_settings
from ..scoring.distributed import RunningMeans, from_first_process, process_group, run_sharded
from .common import Inputs

NOT_RESULT_SETTINGS = frozenset({"quiet", "to_json", "func", "verbose", "batch_size",
                                 "max_tokens", "device", "command"})
"""Options that do not change the rows (scores are batch-invariant), left out of the resume key."""


def launch(args: argparse.Namespace) -> int:
    """Join the processes of ``accelerate launch`` / ``torchrun`` (when ``WORLD_SIZE`` > 1) and
    give this one its own device; returns the number of processes."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 1
    import torch
    from accelerate import PartialState

    state = PartialState(cpu=args.device == "cpu" or not torch.cuda.is_available())
    if args.device in (None, "cuda"):
        args.device = str(state.device)
    return state.num_processes


def _writer(args: argparse.Namespace, inputs: Inputs, per_input: int
            ) -> ResumableJsonlWriter | None:
    """Process 0's writer (None elsewhere, or without ``--to-json``); a refusal (the
    partial file of another run, ...) stops every process."""
    _, rank, _ = process_group()
    writer, error = None, None
    if args.to_json and rank == 0:
        settings = content_settings(  # the head by its files' content, not its path
            {k: v for k, v in vars(args).items() if k not in NOT_RESULT_SETTINGS})
        try:
            writer = ResumableJsonlWriter(args.to_json, key=inputs_key(inputs, **settings),
                                          total=len(inputs) * per_input)
        except (ValueError, OSError) as err:
            error = err
    refused = from_first_process(None if error is None else str(error))
    if error is not None:
        raise error
    if refused:
        raise ValueError(refused)
    return writer


def run_streamed(args: argparse.Namespace, inputs: Inputs,
                 score_batch: Callable[[list[dict]], list[dict]], *, batch_size: int,
                 window: int, rows_per_input: int = 1,
                 on_rows: Callable[[list[dict]], None] | None = None) -> RunningMeans:
    """Score ``inputs`` (``score_batch`` on ``batch_size`` of them at a time, windows of
    ``window``), streamed to ``args.to_json`` when given, resumed from an interrupted run
    with the same inputs and settings. Returns the means of every row (process 0; rows
    written by an earlier run included) and prints the throughput. ``on_rows`` also
    receives each window's new rows on process 0, in input order."""
    writer = _writer(args, inputs, rows_per_input)
    done = writer.done if writer is not None else 0
    means = RunningMeans()
    if done:
        print(f"{args.to_json}: continuing after {done} rows already written")
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
                          progress=not args.quiet)
    seconds = time.perf_counter() - start
    _, rank, world = process_group()
    if rank == 0:
        print(f"{new} new outputs in {seconds:.1f} s ({new / max(seconds, 1e-9):.1f}/s, "
              f"{world} process{'es' if world > 1 else ''})")
    if args.to_json and rank == 0 and means.n != len(inputs) * rows_per_input:
        raise ValueError(f"{args.to_json}: has {means.n} rows, expected "
                         f"{len(inputs) * rows_per_input}")
    return means

