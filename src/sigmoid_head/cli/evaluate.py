"""``sigmoid-head evaluate``: metrics, tables and plots for score files (numpy only, no torch).

Parses the options (generated from :class:`sigmoid_head.evaluation.settings.EvaluateConfig`)
and calls :func:`sigmoid_head.evaluation.evaluate.evaluate_scores`, or
:func:`sigmoid_head.evaluation.gold_eval.evaluate_gold_files` for word tags and error spans.
"""

from __future__ import annotations

import argparse

DESCRIPTION = ("Metrics, tables and plots for score files. Scores are oriented so that "
               "higher = better (entropy is negated).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..evaluation.settings import EvaluateConfig
    from .options import add_settings

    add_settings(p, EvaluateConfig)


OUT_FILES = ("results.md", "results.csv", "results.json", "distributions.png", "roc.png",
             "scatter.png", "reliability.png")
"""Every file ``--out-dir`` may receive (each written atomically, never through a link)."""


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head evaluate``: metrics table (and report files with --out-dir)."""
    from ..evaluation.evaluate import evaluate_scores
    from ..evaluation.gold_formats import span_format
    from ..safe.outputs import check_out_dir

    check_out_dir("--out-dir", args.out_dir, OUT_FILES, {
        "--scores": args.scores, "--gold": args.gold, "--extra-scores": args.extra_scores,
        "--gold-mt": args.gold_mt, "--gold-source": args.gold_source})
    fmt = args.gold_format or span_format(args.gold)
    if fmt:
        return _run_gold(args, fmt)
    if args.thresholds:  # silently ignored before
        raise ValueError(f"--thresholds applies to word tags and error spans; {args.gold} is "
                         "neither (name its format with --gold-format)")
    _, table = evaluate_scores(
        args.scores,
        args.gold,
        gold_field=args.gold_field,
        extra_scores=args.extra_scores,
        methods=_split(args.methods),
        metrics=_split(args.metrics),
        out_dir=args.out_dir,
        ci=args.ci,
        n_boot=args.n_boot,
        groups=args.groups,
        width=args.width,
    )
    print(table, end="")
    if args.out_dir:
        print(f"report written to {args.out_dir}")
    return 0


def _run_gold(args: argparse.Namespace, fmt: str) -> int:
    """Word and span metrics against word tags or error spans."""
    from pathlib import Path

    from ..evaluation.gold_eval import evaluate_gold_files
    from ..safe.files import write_atomic
    from ..safe.json_io import dumps

    res, table = evaluate_gold_files(
        args.scores, args.gold, fmt, mt=args.gold_mt, source=args.gold_source,
        methods=_split(args.methods), thresholds=args.thresholds, head=args.head,
        severity_weighted=args.severity_weighted, ci=args.ci, n_boot=args.n_boot)
    print(table, end="")
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "results.md", table)
        write_atomic(out / "results.json", dumps(res, indent=1))  # undefined metrics: null
        print(f"report written to {args.out_dir}")
    return 0
