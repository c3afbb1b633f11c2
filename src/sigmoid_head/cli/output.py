"""Streamed, resumable ``--to-json`` output for ``score`` and ``generate``.

:func:`run_streamed` scores the inputs chunk by chunk (in input order) and appends each
chunk's rows to :class:`sigmoid_head.io_utils.ResumableJsonlWriter` as soon as it is
done: a crash keeps every row scored so far in ``<out>.partial``, rerunning the same
command continues after the last complete row, and ``<out>`` itself appears only when
every row is there. The output path is checked before any work.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence

from ..io_utils import ResumableJsonlWriter, inputs_key, read_complete_jsonl

NOT_RESULT_SETTINGS = frozenset({"quiet", "to_json", "func", "verbose", "batch_size",
                                 "max_tokens", "device", "command"})
"""Options that do not change the rows (scores are batch-invariant), left out of the resume key."""


def run_streamed(args: argparse.Namespace, inputs: Sequence[dict],
                 score_chunk: Callable[[list[dict]], list[dict]], chunk_size: int,
                 rows_per_input: int = 1) -> list[dict]:
    """Rows for ``inputs``: ``score_chunk(inputs[i:j])`` chunk by chunk, streamed to
    ``args.to_json`` (when given) and resumed from an interrupted run with the same inputs
    and settings. Returns the rows, reading back those of an earlier run from disk, with
    only their scalar fields when written to a file (enough for the summary)."""
    from tqdm.auto import tqdm

    chunk_size = max(1, chunk_size)
    if not args.to_json:
        rows: list[dict] = []
        for i in range(0, len(inputs), chunk_size):
            rows.extend(_scored(score_chunk, list(inputs[i : i + chunk_size]), i))
        return rows
    settings = {k: v for k, v in vars(args).items() if k not in NOT_RESULT_SETTINGS}
    key = inputs_key(inputs, **settings)
    total = len(inputs) * rows_per_input
    with ResumableJsonlWriter(args.to_json, key=key, total=total) as writer:
        start = writer.done // rows_per_input
        if writer.done % rows_per_input:
            raise ValueError(f"{writer.partial} ends inside the rows of one input; delete it")
        if start:
            print(f"{args.to_json}: continuing after {writer.done} rows already written")
        bar = tqdm(total=len(inputs), initial=start, desc="inputs", disable=args.quiet,
                   dynamic_ncols=True)
        for i in range(start, len(inputs), chunk_size):
            chunk = list(inputs[i : i + chunk_size])
            writer.write_many(_scored(score_chunk, chunk, i))
            bar.update(len(chunk))
        bar.close()
    rows = read_complete_jsonl(args.to_json)
    if len(rows) != total:
        raise ValueError(f"{args.to_json}: has {len(rows)} rows, expected {total}")
    return [{k: v for k, v in r.items() if isinstance(v, int | float)} for r in rows]


def _scored(score_chunk: Callable[[list[dict]], list[dict]], chunk: list[dict], start: int
            ) -> list[dict]:
    """``score_chunk(chunk)``; an error about "record N" of the chunk names the input's number."""
    try:
        return score_chunk(chunk)
    except ValueError as err:
        if start == 0 or not re.search(r"\brecord \d+", str(err)):
            raise
        message = re.sub(r"\brecord (\d+)", lambda m: f"input {int(m[1]) + start}", str(err))
        raise type(err)(message) from err
