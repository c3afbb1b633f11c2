"""What the ``score`` and ``generate`` commands share: model options, inputs, baselines, output.

Inputs are read with :mod:`sigmoid_head.data.records` (the one reader); scoring and the
baselines are library calls (:mod:`sigmoid_head.scoring`).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import DataError, iter_jsonl_lines, iter_lines
from . import UsageError


def _number(kind: type, low: float, high: float | None = None, low_open: bool = False,
            what: str = "") -> Any:
    """An argparse type: a finite ``kind`` number in [low, high] (``(low, high]`` if low_open)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what or kind.__name__}") from None
        bad = not math.isfinite(value) or value < low or (low_open and value == low) \
            or (high is not None and value > high)
        if bad:
            span = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'}" \
                   f"{']' if high is not None else ')'}"
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number in {span}")
        return value

    parse.__name__ = kind.__name__
    return parse


POSITIVE_INT = _number(int, 1, what="an integer")
NONNEG_INT = _number(int, 0, what="an integer")
POSITIVE_FLOAT = _number(float, 0, low_open=True, what="a number")
PROBABILITY = _number(float, 0, 1, low_open=True, what="a number")


def check_early(args: argparse.Namespace) -> None:
    """What can be refused before any model is loaded: templates and the output path."""
    from ..data.templates import check_template
    from ..io_utils import check_output_path
    from ..output_safety import refuse_overlaps

    refuse_overlaps({"--to-json": args.to_json, "--html": getattr(args, "html", None)},
                    {f"--{k}": getattr(args, k, None) for k in ("input", "sources", "candidates")},
                    {"--head": args.head, "--model": args.model})
    if args.prompt_template is not None:
        check_template(args.prompt_template)
    if getattr(args, "judge_template", None):
        check_template(args.judge_template, ("source", "candidate"), "judge template")
    if args.to_json:
        check_output_path(args.to_json)
    if getattr(args, "html", None):
        check_output_path(args.html)


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--head", help="trained head directory (without it: baselines only)")
    g.add_argument(
        "--model",
        help="base model id/path (default: the head's base model, "
        "else the embedded SmolLM2-135M-Instruct)",
    )
    g.add_argument("--dtype", default="auto",
                   help="auto (float32 on the CPU, the checkpoint's own dtype on CUDA), float32, "
                   "bfloat16 or float16 (half precision on the CPU is first probed in a child "
                   "process, once per machine)")
    g.add_argument("--device", help="cpu or cuda (default: cuda if available)")
    g.add_argument("--batch-size", type=POSITIVE_INT, default=16, help="sequences per forward pass")
    g.add_argument(
        "--prompt-template",
        help="causal pairs: prompt with {source} "
        "(default: the head's training setting, else '{source}\\n')",
    )
    g.add_argument(
        "--chat",
        action="store_true",
        default=None,
        help="render source/candidate pairs with the tokenizer's chat template",
    )
    g.add_argument("--with-tokens", action="store_true", help="add per-token and per-word scores")
    g.add_argument("--to-json", help="write one JSON record per output to this .jsonl file")
    g.add_argument("--quiet", action="store_true", help="no progress bars")


def add_explain_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--html",
        help="also write one self-contained page of the outputs' tokens coloured by each "
        "method's score, numbers on hover, error spans marked (keeps the per-token scores in "
        "the rows, as --with-tokens does, and draws the page from them)",
    )


def head_extras(args: argparse.Namespace, command: str) -> tuple[Any, Any, Any]:
    """The :class:`~sigmoid_head.evaluation.calibration.Calibrator` and
    :class:`~sigmoid_head.evaluation.spans.SpanConfig` that ``sigmoid-head calibrate`` saved
    in the head folder (None for each that is not there), and the
    :class:`~sigmoid_head.evaluation.combination.Combination` of the combined score: the
    head folder's fitted one, else ``command``'s default (``"score"`` or ``"generate"``)."""
    from ..evaluation.calibration import Calibrator
    from ..evaluation.combination import for_command
    from ..evaluation.spans import SpanConfig

    head = args.head if args.head and Path(args.head).is_dir() else None
    try:
        combination = for_command(command, head)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not head:
        return None, None, combination
    return Calibrator.load(head), SpanConfig.load(head), combination


def explain_rows(rows: list[dict], calibrator: Any, spans: Any, keep_tokens: bool,
                 combination: Any = None) -> None:
    """Add the combined score (``combined``, ``combined_log``), calibrated probabilities
    (``<method>_platt``, ``<method>_isotonic``) and error spans (``errors``) to output rows
    in place; drop the per-token and per-word scores the spans needed unless ``keep_tokens``."""
    from ..evaluation.spans import add_errors

    if combination is not None:
        combination.apply(rows)
    if calibrator is not None:
        calibrator.apply(rows)
    if spans is not None:
        add_errors(rows, spans)
    if not keep_tokens:
        for r in rows:
            r.pop("tokens", None)
            r.pop("words", None)


def page_sink(args: argparse.Namespace, rows: list[dict]) -> Any:
    """What keeps the rows for ``--html`` as they are written (``rows.extend``): only when
    there is no ``--to-json`` file to read them back from."""
    return rows.extend if getattr(args, "html", None) and not args.to_json else None


def write_html(args: argparse.Namespace, rows: list[dict], model: Any, spans: Any) -> None:
    """``--html`` (process 0): the page of every output row, read back from ``--to-json``
    when given (so a resumed run's page has the rows of the earlier run too), else
    ``rows`` as kept by :func:`page_sink`."""
    from ..evaluation.html import write_page
    from ..io_utils import read_complete_jsonl
    from ..scoring.distributed import process_group
    from ..scoring.token_scores import unpack_model

    if process_group()[1] != 0:
        return
    if args.to_json:
        rows = read_complete_jsonl(args.to_json)
    path = write_page(args.html, rows, unpack_model(model)[0].tokenizer,
                      spans_from=spans.describe() if spans is not None else None)
    print(f"page of {len(rows)} outputs written to {path}")


def add_baseline_args(p: argparse.ArgumentParser, mc: bool) -> None:
    g = p.add_argument_group("extra baselines")
    if mc:
        g.add_argument(
            "--mc-samples",
            type=NONNEG_INT,
            default=0,
            help="add Monte Carlo sequence entropy from N samples (paper: 10)",
        )
    g.add_argument("--rauq", action="store_true",
                   help="add RAUQ (attention-based, causal LMs) from the same pass; it runs "
                        "with eager attention")
    g.add_argument("--rauq-alpha", type=_number(float, 0, 1, what="a number"),
                   help="RAUQ's weight of the token probability (default 0.2, LM-Polygraph's; "
                        "it uses 0.5 for instruction-tuned models)")
    g.add_argument("--rauq-layers", type=_layer_list,
                   help="RAUQ's layers, comma-separated 0-based (default: the middle third)")
    g.add_argument("--self-judge", action="store_true", help="add the LLM self-judge score")
    g.add_argument("--judge-template", help="self-judge prompt with {source} and {candidate}")
    g.add_argument("--comet-model", help="local CometKiwi checkpoint (needs unbabel-comet)")


def _layer_list(text: str) -> tuple[int, ...]:
    try:
        layers = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of layers") from None
    if not layers or min(layers) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: layers are 0-based indices")
    return layers


def rauq_config(args: argparse.Namespace) -> Any:
    """The RauqConfig the options ask for, or None without ``--rauq``."""
    if not args.rauq:
        if args.rauq_alpha is not None or args.rauq_layers is not None:
            raise UsageError("--rauq-alpha and --rauq-layers need --rauq")
        return None
    from ..scoring.rauq import RauqConfig

    return RauqConfig(alpha=args.rauq_alpha, layers=args.rauq_layers)


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
        if self.jsonl:
            for lineno, rec in iter_jsonl_lines(self.jsonl, objects=True):
                problem = record_problem(rec, self.need_candidates)
                if problem:
                    raise DataError(f"{self.jsonl}:{lineno}: {problem}")
                yield rec
        elif self.candidates is None:
            yield from ({"source": s} for _, s in iter_lines(self.sources))
        else:
            for (_, s), (_, c) in zip(iter_lines(self.sources), iter_lines(self.candidates),
                                      strict=True):
                yield {"source": s, "candidate": c}


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


def load_model(args: argparse.Namespace) -> Any:
    if args.head:
        from ..model import SigmoidHeadModel

        return SigmoidHeadModel.from_pretrained(
            args.head, args.model, dtype=args.dtype, device=args.device
        )
    from ..backbone import load_backbone

    return load_backbone(args.model, dtype=args.dtype, device=args.device)


def source_text(rec: dict) -> str:
    if "messages" in rec:
        users = [m["content"] for m in rec["messages"] if m.get("role") == "user"]
        return users[-1] if users else rec["messages"][-1]["content"]
    return rec.get("source", "")


def add_baselines(
    model: Any, inputs: list[dict], rows: list[dict], args: argparse.Namespace, per_input: int = 1
) -> None:
    """Add self-judge / CometKiwi / MC columns to the output rows in place."""
    from ..scoring.baselines import JUDGE_TEMPLATE, comet_kiwi, mc_sequence_entropy, self_judge

    sources = [source_text(inputs[i // per_input]) for i in range(len(rows))]
    cands = [r["candidate"] for r in rows]
    if args.self_judge:
        judged = self_judge(
            model,
            sources,
            cands,
            template=args.judge_template or JUDGE_TEMPLATE,
            batch_size=args.batch_size,
        )
        for r, v in zip(rows, judged, strict=True):
            r["self_judge"] = v
    if args.comet_model:
        for r, v in zip(rows, comet_kiwi(sources, cands, args.comet_model), strict=True):
            r["comet_kiwi"] = v
    if getattr(args, "mc_samples", 0):
        from ..data.prompts import prompt_ids, render_settings
        from ..scoring.token_scores import unpack_model

        backbone, _ = unpack_model(model)
        prompts = prompt_ids(
            inputs,
            backbone.tokenizer,
            is_encoder_decoder=backbone.is_encoder_decoder,
            **render_settings(model, args.prompt_template, args.chat),
        )
        mc = mc_sequence_entropy(
            model,
            prompts,
            args.mc_samples,
            seed=args.seed,
            max_new_tokens=args.max_new_tokens,
            progress=not args.quiet,
        )
        for i, r in enumerate(rows):
            r.update(mc[i // per_input])


def summary(rows: Sequence[dict], n: int | None = None) -> str:
    """Mean sequence scores per method, as a small text table (``n``: the number of
    outputs, when ``rows`` holds their means only)."""
    lines = [f"{'method':<14}{'mean':>12}{'mean_log':>12}{'min':>12}"]
    for name in ("sigmoid", "softmax", "boostedprob", "rauq"):
        if name in rows[0]:
            vals = [
                np.mean([r[k] for r in rows]) for k in (name, f"{name}_mean_log", f"{name}_min")
            ]
            lines.append(f"{name:<14}" + "".join(f"{v:>12.4f}" for v in vals))
    if "combined" in rows[0]:
        lines.append(f"{'combined':<14}{np.mean([r['combined'] for r in rows]):>12.4f}"
                     f"{np.mean([r['combined_log'] for r in rows]):>12.4f}")
    for name in (
        "entropy_mean",
        "self_judge",
        "comet_kiwi",
        "mc_softmax",
        "mc_sigmoid",
        "n_tokens",
    ):
        if name in rows[0]:
            lines.append(f"{name:<14}{np.mean([r[name] for r in rows]):>12.4f}")
    return f"{len(rows) if n is None else n} outputs scored\n" + "\n".join(lines)
