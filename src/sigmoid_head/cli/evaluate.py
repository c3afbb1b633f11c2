"""``sigmoid-head evaluate``: metrics, tables and plots for score files (numpy only, no torch).

Parses the options and calls :func:`sigmoid_head.evaluation.evaluate.evaluate_scores`.
"""

from __future__ import annotations

import argparse

DESCRIPTION = ("Metrics, tables and plots for score files. Scores are oriented so that "
               "higher = better (entropy is negated).")


def add_arguments(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--n-boot", type=_positive_int, default=1000, help="bootstrap resamples")
    p.add_argument("--groups", help="score-file field with each row's source id (e.g. the "
                   "verse): the bootstrap resamples sources, keeping their candidates together")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head evaluate``: metrics table (and report files with --out-dir)."""
    from ..evaluation.evaluate import evaluate_scores

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
        groups=args.groups,
    )
    print(table, end="")
    if args.out_dir:
        print(f"report written to {args.out_dir}")
    return 0
