"""What the ``score`` and ``generate`` commands share: model options, inputs, baselines, output.

Inputs are read with :mod:`sigmoid_head.data.records` (the one reader); scoring and the
baselines are library calls (:mod:`sigmoid_head.scoring`).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import DataError, read_jsonl_lines, read_lines
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

    if args.prompt_template is not None:
        check_template(args.prompt_template)
    if getattr(args, "judge_template", None):
        check_template(args.judge_template, ("source", "candidate"), "judge template")
    if args.to_json:
        check_output_path(args.to_json)


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--head", help="trained head directory (without it: baselines only)")
    g.add_argument(
        "--model",
        help="base model id/path (default: the head's base model, "
        "else the embedded SmolLM2-135M-Instruct)",
    )
    g.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
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


def read_inputs(args: argparse.Namespace, need_candidates: bool) -> list[dict]:
    if args.input:
        if args.sources or getattr(args, "candidates", None):
            raise UsageError("give either --input or -s/-t, not both")
        return check_score_inputs(args.input, read_jsonl_lines(args.input, objects=True),
                                  need_candidates)
    if not args.sources:
        raise UsageError(
            "give --input FILE.jsonl or -s SOURCES.txt"
            + (" -t CANDIDATES.txt" if need_candidates else "")
        )
    sources = _read_nonempty(args.sources)
    if not need_candidates:
        return [{"source": s} for s in sources]
    if not args.candidates:
        raise UsageError("-s needs -t CANDIDATES.txt")
    cands = _read_nonempty(args.candidates)
    if len(sources) != len(cands):
        raise UsageError(f"{len(sources)} sources ({args.sources}) but {len(cands)} candidates "
                         f"({args.candidates})")
    for lineno, cand in enumerate(cands, start=1):
        if not cand.strip():
            raise DataError(f"{args.candidates}:{lineno}: the candidate is empty")
    return [{"source": s, "candidate": c} for s, c in zip(sources, cands, strict=True)]


def check_score_inputs(path: str, rows: list[tuple[int, dict]], need_candidates: bool
                       ) -> list[dict]:
    """The records of an ``--input`` file, each checked (errors name the file and line)."""
    if not rows:
        raise DataError(f"{path}: no records")
    for lineno, rec in rows:
        problem = None
        if "messages" in rec:
            msgs = rec["messages"]
            if not isinstance(msgs, list) or not msgs or not all(
                    isinstance(m, dict) and isinstance(m.get("role"), str)
                    and isinstance(m.get("content"), str) for m in msgs):
                problem = "'messages' must be a non-empty list of {role, content} strings"
        elif not isinstance(rec.get("source"), str):
            problem = f"needs a string 'source' or a 'messages' list, has keys {sorted(rec)}"
        if problem is None and need_candidates:
            cand = rec.get("candidate", rec.get("target"))
            if not isinstance(cand, str):
                problem = f"needs a string 'candidate', has keys {sorted(rec)}"
            elif not cand.strip():
                problem = "the candidate is empty"
        if problem:
            raise DataError(f"{path}:{lineno}: {problem}")
    return [rec for _, rec in rows]


def _read_nonempty(path: str) -> list[str]:
    lines = read_lines(path)
    if not lines:
        raise DataError(f"{path}: file is empty")
    return lines


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


def summary(rows: Sequence[dict]) -> str:
    """Mean sequence scores per method, as a small text table."""
    lines = [f"{'method':<14}{'mean':>12}{'mean_log':>12}{'min':>12}"]
    for name in ("sigmoid", "softmax", "boostedprob", "rauq"):
        if name in rows[0]:
            vals = [
                np.mean([r[k] for r in rows]) for k in (name, f"{name}_mean_log", f"{name}_min")
            ]
            lines.append(f"{name:<14}" + "".join(f"{v:>12.4f}" for v in vals))
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
    return f"{len(rows)} outputs scored\n" + "\n".join(lines)


def write_rows(rows: list[dict], path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
