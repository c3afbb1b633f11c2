"""``score`` / ``generate`` with ``--to-json``: streamed, resumable, data-parallel.

Run as usual for one process, or under ``accelerate launch --multi_gpu --num_processes N``
/ ``torchrun --nproc_per_node N`` for N processes (one device each): the inputs are read
as a stream and scored window by window (:func:`sigmoid_head.scoring.distributed.run_sharded`),
process 0 writes the rows in input order, and ``--resume`` continues an interrupted run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from . import UsageError
from .common import load_model, summary


def _launched_state():
    """Accelerate's process state when started by a launcher with several processes."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def run_streamed(args: argparse.Namespace, rows_fn: Callable, need_candidates: bool) -> int:
    """Score (or generate for) every input into ``args.to_json``; print the summary."""
    from ..scoring.distributed import JsonlAppendWriter, count_inputs, iter_inputs, run_sharded

    candidates = getattr(args, "candidates", None)
    if args.input and (args.sources or candidates):
        raise UsageError("give either --input or -s/-t, not both")
    if not args.input and not args.sources:
        raise UsageError("give --input FILE.jsonl or -s SOURCES.txt"
                         + (" -t CANDIDATES.txt" if need_candidates else ""))
    if need_candidates and args.sources and not candidates:
        raise UsageError("-s needs -t CANDIDATES.txt")
    total = count_inputs(args.input, args.sources)
    if need_candidates and args.sources:
        n_cand = count_inputs(None, candidates)
        if n_cand != total:
            raise UsageError(f"{total} sources but {n_cand} candidates")
    if total == 0:
        raise UsageError("nothing to score: no inputs")
    state = _launched_state()
    rank = state.process_index if state else 0
    if state and args.device is None:
        args.device = str(state.device)
    model = load_model(args)
    writer = JsonlAppendWriter(args.to_json, resume=args.resume) if rank == 0 else None
    already = writer.done() if writer else 0
    t0 = time.perf_counter()
    means = run_sharded(
        iter_inputs(args.input, args.sources, candidates if need_candidates else None),
        lambda recs: rows_fn(model, recs, args, progress=False),
        writer, batch_size=args.batch_size, total=total, progress=not args.quiet,
        desc="score" if need_candidates else "generate")
    if writer is None:
        return 0
    writer.close()
    seconds = time.perf_counter() - t0
    if means.n:
        print(summary([means.row()], n=means.n))
    print(f"{means.n} new outputs in {seconds:.1f} s ({means.n / max(seconds, 1e-9):.1f}/s, "
          f"{state.num_processes if state else 1} process(es)); {already + means.n} in "
          f"{args.to_json}")
    return 0
