"""What the ``score`` and ``generate`` commands share: options, inputs, the summary.

The options come from dataclass fields (:class:`ModelOptions`,
:class:`sigmoid_head.scoring.corpus.CorpusConfig`); inputs are read with
:mod:`sigmoid_head.data.records` (the one reader); the scoring is
:mod:`sigmoid_head.scoring.corpus`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..data.records import DataError, Located, iter_jsonl_lines, iter_lines
from . import UsageError
from .options import add_dataclass_options, number_type


def _number(kind: type, low: float, high: float | None = None, low_open: bool = False,
             what: str = "", high_open: bool = False) -> Any:
    """An argparse type: a finite, representable ``kind`` number in [low, high] (``(low,
    high]`` if low_open), see :func:`sigmoid_head.cli.options.number_type`."""
    return number_type(kind, low=low, high=high, low_open=low_open, high_open=high_open,
                       what=what)


POSITIVE_INT = _number(int, 1, what="an integer")
NONNEG_INT = _number(int, 0, what="an integer")
POSITIVE_FLOAT = _number(float, 0, low_open=True, what="a number")
PROBABILITY = _number(float, 0, 1, low_open=True, what="a number")


def _limited(name: str, kind: type = float) -> Any:
    """The argparse type of a setting with a range in :data:`sigmoid_head.safe.finite.LIMITS`."""
    from ..safe.finite import LIMITS

    lim = {k: v for k, v in LIMITS[name].items() if k != "integer"}
    return _number(kind, lim.pop("low"), lim.pop("high", None),
                   what="an integer" if kind is int else "a number", **lim)


TEMPERATURE = _limited("temperature")
SEED = _limited("seed", int)
SAMPLES = _limited("samples", int)


@dataclass
class ModelOptions:
    """Which model scores."""

    head: str | None = None
    """Trained head directory (without it: baselines only)."""
    model: str | None = None
    """Base model id/path (default: the head's base model, else the embedded SmolLM2-135M-Instruct)."""
    dtype: str = "auto"
    """auto (float32 on the CPU, the checkpoint's own dtype on CUDA), float32, bfloat16 or
    float16 (half precision on the CPU is first probed in a child process, once per machine)."""
    device: str | None = None
    """cpu or cuda (default: cuda if available)."""

    def load(self) -> Any:
        """The SigmoidHeadModel of ``head`` (else the bare backbone)."""
        if self.head:
            from ..head.model import SigmoidHeadModel

            return SigmoidHeadModel.from_pretrained(self.head, self.model, dtype=self.dtype,
                                                    device=self.device)
        from ..lm.backbone import load_backbone

        return load_backbone(self.model, dtype=self.dtype, device=self.device)


def add_corpus_args(p: argparse.ArgumentParser, command: str) -> None:
    """The model options (:class:`ModelOptions`) and those of
    :class:`~sigmoid_head.scoring.corpus_config.CorpusConfig` of ``score`` or ``generate``:
    one option group per config group, one per registered baseline that the command runs
    (a field or a baseline of other commands left out); ranges come from the fields."""
    p.add_argument("--describe", action="store_true",
                   help="print every output field with its direction (higher = better or "
                   "worse) and range, then exit")
    add_dataclass_options(p.add_argument_group("model"), ModelOptions)
    add_config_groups(p, command)


def add_config_groups(p: argparse.ArgumentParser, command: str,
                      skip: tuple[str, ...] = ()) -> None:
    """The CorpusConfig option groups of ``command``: every field it offers
    (:func:`~sigmoid_head.scoring.corpus_config.offers`) but those in ``skip`` (options
    the command spells its own way), and the baselines it runs."""
    from dataclasses import fields

    from ..registry import columns
    from ..scoring.corpus_config import GROUP_TITLES, GROUPS, baseline_settings, offers

    def offered(f: Any) -> bool:
        return offers(f, command) and f.name not in skip

    for group, cls in GROUPS.items():
        names = [f.name for f in fields(cls) if offered(f)]
        if names:
            add_dataclass_options(p.add_argument_group(GROUP_TITLES[group]), cls, only=names)
    for name, cls in baseline_settings().items():
        column = columns.COLUMNS.get(name)  # an opt-in method: score and generate
        if command not in (column.commands if column is not None else ("score", "generate")):
            continue
        names = [f.name for f in fields(cls) if offered(f)]
        if names:
            title = getattr(cls, "TITLE", None) or (cls.__doc__ or name).split(" (")[0].strip().rstrip(".")
            add_dataclass_options(p.add_argument_group(f"extra baseline: {title}"), cls, only=names)


def describe_fields() -> int:
    """Print the output fields' directions and ranges (``--describe``); returns 0."""
    from ..scoring.fields import describe

    print(describe(), end="")
    return 0


def corpus_config(args: argparse.Namespace) -> Any:
    """The CorpusConfig of the options; refuses, before any model is loaded, output paths
    that cannot be written or that would overwrite an input or land in the head or model
    folder."""
    from ..evaluation.combination import mix_record_path
    from ..safe.files import check_output_path
    from ..safe.outputs import refuse_overlaps
    from ..scoring.corpus import CorpusConfig, config_from

    mix = mix_record_path(args.to_json) if args.to_json else None  # written beside --to-json
    refuse_overlaps({"--to-json": args.to_json, "--html": getattr(args, "html", None),
                     "--to-json's mix record": mix},
                    {f"--{k}": getattr(args, k, None) for k in ("input", "sources", "candidates")},
                    {"--head": args.head, "--model": args.model})
    config = config_from(vars(args), CorpusConfig)
    for path in (config.to_json, config.html):
        if path:
            check_output_path(path)
    return config


def print_result(result: Any) -> None:
    """The summary table of a corpus run (process 0, when rows were scored) and the line
    naming the mix that made ``combined``."""
    from ..scoring.corpus_output import summary

    if result.n:
        print(summary([result.means], n=result.n))
        if result.mix and "combined" in result.means:
            print(result.mix)
        for line in result.notices:
            print(line)


class Inputs:
    """The inputs of ``score`` / ``generate`` (``--input`` JSONL, or ``-s`` [``-t``] text
    files), read as a stream: the constructor reads them once, checking every record (errors
    name the file and line) and counting them, before any model is loaded; each iteration
    reads them again, one line at a time. Memory does not grow with the files."""

    def __init__(self, args: argparse.Namespace, need_candidates: bool) -> None:
        self.jsonl, self.sources = args.input, args.sources
        self.candidates = getattr(args, "candidates", None) if need_candidates else None
        self.need_candidates = need_candidates
        if self.jsonl:
            if args.sources or getattr(args, "candidates", None):
                raise UsageError("give either --input or -s/-t, not both")
            self.n = sum(1 for _ in self)
            if not self.n:
                raise DataError(f"{self.jsonl}: no records")
            return
        if not args.sources:
            raise UsageError("give --input FILE.jsonl or -s SOURCES.txt"
                             + (" -t CANDIDATES.txt" if need_candidates else ""))
        self.n = _count_nonempty(args.sources)
        if not need_candidates:
            return
        if not args.candidates:
            raise UsageError("-s needs -t CANDIDATES.txt")
        n_cands, empty = 0, None
        for lineno, cand in iter_lines(args.candidates):
            n_cands += 1
            if empty is None and not cand.strip():
                empty = lineno
        if not n_cands:
            raise DataError(f"{args.candidates}: file is empty")
        if self.n != n_cands:
            raise UsageError(f"{self.n} sources ({args.sources}) but {n_cands} candidates "
                             f"({args.candidates})")
        if empty is not None:
            raise DataError(f"{args.candidates}:{empty}: the candidate is empty")

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[dict]:
        if self.jsonl:  # each record knows its file:line, which warnings about it name
            for lineno, rec in iter_jsonl_lines(self.jsonl, objects=True):
                problem = record_problem(rec, self.need_candidates)
                if problem:
                    raise DataError(f"{self.jsonl}:{lineno}: {problem}")
                yield Located(rec, self.jsonl, lineno)
        elif self.candidates is None:
            yield from (Located({"source": s}, self.sources, n) for n, s in iter_lines(self.sources))
        else:
            for (n, s), (_, c) in zip(iter_lines(self.sources), iter_lines(self.candidates),
                                      strict=True):
                yield Located({"source": s, "candidate": c}, self.sources, n)


def record_problem(rec: dict, need_candidates: bool) -> str | None:
    """What is wrong with one ``--input`` record, or None."""
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str) for m in msgs):
            return "'messages' must be a non-empty list of {role, content} strings"
    elif not isinstance(rec.get("source"), str):
        return f"needs a string 'source' or a 'messages' list, has keys {sorted(rec)}"
    if need_candidates:
        cand = rec.get("candidate", rec.get("target"))
        if not isinstance(cand, str):
            return f"needs a string 'candidate', has keys {sorted(rec)}"
        if not cand.strip():
            return "the candidate is empty"
    return None


def _count_nonempty(path: str) -> int:
    n = sum(1 for _ in iter_lines(path))
    if not n:
        raise DataError(f"{path}: file is empty")
    return n
