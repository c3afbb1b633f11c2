"""Command line: ``sigmoid-head score`` / ``generate`` / ``evaluate``.

Only argument parsing in front of plain functions:
:func:`sigmoid_head.score.score_records` (Eval Other),
:func:`sigmoid_head.generate.generate_and_score` (Eval Self), the baselines of
:mod:`sigmoid_head.baselines`, and :func:`sigmoid_head.evaluation.evaluate_scores`.

``register(subparsers)`` adds the three subcommands to any argparse subparsers object;
each sets ``func(args) -> int``. ``main(argv)`` is a stand-alone entry point.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import read_jsonl, read_lines


def _model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--head", help="trained head directory (without it: baselines only)")
    g.add_argument(
        "--model",
        help="base model id/path (default: the head's base model, "
        "else the embedded SmolLM2-135M-Instruct)",
    )
    g.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
    g.add_argument("--device", help="cpu or cuda (default: cuda if available)")
    g.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass")
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


def _baseline_args(p: argparse.ArgumentParser, mc: bool) -> None:
    g = p.add_argument_group("extra baselines")
    if mc:
        g.add_argument(
            "--mc-samples",
            type=int,
            default=0,
            help="add Monte Carlo sequence entropy from N samples (paper: 10)",
        )
    g.add_argument("--self-judge", action="store_true", help="add the LLM self-judge score")
    g.add_argument("--judge-template", help="self-judge prompt with {source} and {candidate}")
    g.add_argument("--comet-model", help="local CometKiwi checkpoint (needs unbabel-comet)")


def register(subparsers: Any) -> None:
    """Add ``score``, ``generate`` and ``evaluate`` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "score",
        help="Eval Other: score given outputs (force-decoding)",
        description="Score candidates given their sources, COMET-style.",
    )
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("-t", "--candidates", help="candidates, one per line")
    p.add_argument("--input", help=".jsonl with {source, candidate} or {messages, candidate}")
    p.add_argument("--max-tokens", type=int, help="batch by padded tokens instead of sequences")
    _model_args(p)
    _baseline_args(p, mc=False)
    p.set_defaults(func=run_score)

    p = subparsers.add_parser(
        "generate",
        help="Eval Self: generate, then score the outputs",
        description="Generate with the original model and score it.",
    )
    p.add_argument("-s", "--sources", help="sources, one per line")
    p.add_argument("--input", help=".jsonl with {source} or {messages}")
    _model_args(p)
    g = p.add_argument_group("decoding")
    g.add_argument("--num-beams", type=int, default=1)
    g.add_argument("--do-sample", action="store_true")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--max-new-tokens", type=int, default=128)
    g.add_argument("--seed", type=int, default=0)
    _baseline_args(p, mc=True)
    p.set_defaults(func=run_generate)

    p = subparsers.add_parser(
        "evaluate",
        help="correlate QE scores with gold quality",
        description="Metrics, tables and plots for score files. Scores "
        "are oriented so that higher = better (entropy is negated).",
    )
    p.add_argument("--scores", required=True, help="score .jsonl (from score/generate)")
    p.add_argument("--gold", required=True, help="gold .txt (one per line), .jsonl or .csv")
    p.add_argument("--gold-field", help="gold field/column name")
    p.add_argument(
        "--extra-scores",
        nargs="*",
        default=[],
        help="external score files (.jsonl/.csv/.txt, e.g. CometKiwi), merged by row",
    )
    p.add_argument("--methods", help="comma-separated methods (default: all known present)")
    p.add_argument("--metrics", help="comma-separated metrics, e.g. pearson,spearman,bce")
    p.add_argument("--out-dir", help="write results.md, results.csv and plots here")
    p.add_argument("--no-ci", action="store_true", help="skip bootstrap confidence intervals")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples")
    p.set_defaults(func=run_evaluate)


# ----------------------------------------------------------------------------- inputs


def _read_inputs(args: argparse.Namespace, need_candidates: bool) -> list[dict]:
    if args.input:
        if args.sources or getattr(args, "candidates", None):
            raise SystemExit("give either --input or -s/-t, not both")
        return read_jsonl(args.input)
    if not args.sources:
        raise SystemExit(
            "give --input FILE.jsonl or -s SOURCES.txt"
            + (" -t CANDIDATES.txt" if need_candidates else "")
        )
    sources = read_lines(args.sources)
    if not need_candidates:
        return [{"source": s} for s in sources]
    if not args.candidates:
        raise SystemExit("-s needs -t CANDIDATES.txt")
    cands = read_lines(args.candidates)
    if len(sources) != len(cands):
        raise SystemExit(f"{len(sources)} sources but {len(cands)} candidates")
    return [{"source": s, "candidate": c} for s, c in zip(sources, cands, strict=True)]


def _load_model(args: argparse.Namespace) -> Any:
    if args.head:
        from ..model import SigmoidHeadModel

        return SigmoidHeadModel.from_pretrained(
            args.head, args.model, dtype=args.dtype, device=args.device
        )
    from ..backbone import load_backbone

    return load_backbone(args.model, dtype=args.dtype, device=args.device)


def _source_text(rec: dict) -> str:
    if "messages" in rec:
        users = [m["content"] for m in rec["messages"] if m.get("role") == "user"]
        return users[-1] if users else rec["messages"][-1]["content"]
    return rec.get("source", "")


# ----------------------------------------------------------------------------- commands


def _add_baselines(
    model: Any, inputs: list[dict], rows: list[dict], args: argparse.Namespace, per_input: int = 1
) -> None:
    """Add self-judge / CometKiwi / MC columns to the output rows in place."""
    from ..scoring.baselines import JUDGE_TEMPLATE, comet_kiwi, mc_sequence_entropy, self_judge

    sources = [_source_text(inputs[i // per_input]) for i in range(len(rows))]
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
    for name in ("sigmoid", "softmax", "boostedprob"):
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


def _write(rows: list[dict], path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


def run_score(args: argparse.Namespace) -> int:
    """``sigmoid-head score``: Eval Other."""
    from ..data.prompts import ScoreInputError
    from ..scoring.force_decode import score_records

    inputs = _read_inputs(args, need_candidates=True)
    model = _load_model(args)
    try:
        scores = score_records(
            model,
            inputs,
            prompt_template=args.prompt_template,
            use_chat_template=args.chat,
            batch_size=args.batch_size,
            max_tokens=args.max_tokens,
            with_tokens=args.with_tokens,
            progress=not args.quiet,
        )
    except ScoreInputError as err:
        raise SystemExit(f"error: {err}") from err
    keep = ("source", "messages", "candidate", "target")
    rows = [
        {**{k: rec[k] for k in keep if k in rec}, **s}
        for rec, s in zip(inputs, scores, strict=True)
    ]
    for r in rows:
        if "candidate" not in r:
            r["candidate"] = r.pop("target")
    _add_baselines(model, inputs, rows, args)
    _write(rows, args.to_json)
    print(summary(rows))
    return 0


def run_generate(args: argparse.Namespace) -> int:
    """``sigmoid-head generate``: Eval Self."""
    from ..scoring.generate import DecodingConfig, generate_and_score

    inputs = _read_inputs(args, need_candidates=False)
    model = _load_model(args)
    decoding = DecodingConfig(
        max_new_tokens=args.max_new_tokens,
        num_beams=args.num_beams,
        do_sample=args.do_sample,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
    )
    rows = generate_and_score(
        model,
        inputs,
        decoding,
        prompt_template=args.prompt_template,
        use_chat_template=args.chat,
        batch_size=args.batch_size,
        with_tokens=args.with_tokens,
        progress=not args.quiet,
    )
    _add_baselines(model, inputs, rows, args)
    _write(rows, args.to_json)
    print(summary(rows))
    return 0


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run_evaluate(args: argparse.Namespace) -> int:
    """``sigmoid-head evaluate``: metrics table (and report files with --out-dir)."""
    from ..evaluation.evaluate import evaluate_scores

    try:
        _, table = evaluate_scores(
            args.scores,
            args.gold,
            gold_field=args.gold_field,
            extra_scores=args.extra_scores,
            methods=_split(args.methods),
            metrics=_split(args.metrics),
            out_dir=args.out_dir,
            ci=not args.no_ci,
            n_boot=args.n_boot,
        )
    except ValueError as err:
        raise SystemExit(f"error: {err}") from err
    print(table, end="")
    if args.out_dir:
        print(f"report written to {args.out_dir}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: ``score``, ``generate`` and ``evaluate`` only."""
    parser = argparse.ArgumentParser(prog="sigmoid-head")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
