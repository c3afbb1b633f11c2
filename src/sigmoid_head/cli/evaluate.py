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
    g = p.add_argument_group("word tags and error spans (need scores from score --with-tokens)")
    g.add_argument("--gold-format", choices=["wmt-tags", "esa", "mqm", "ragtruth"],
                   help="gold word tags / error spans: WMT word-level .tags, ESA or MQM span "
                   "JSONL, RAGTruth response.jsonl (default: detected from the file)")
    g.add_argument("--gold-mt", help="wmt-tags: the MT text file (default: the tags file's .mt)")
    g.add_argument("--gold-source", help="wmt-tags: the source file (intervals by source)")
    g.add_argument("--thresholds", help="word score below which a word is BAD: 0.3, or "
                   "sigmoid=0.1,softmax=0.05 (default: the --head's saved span settings, else 0.5)")
    g.add_argument("--head", help="head folder whose saved error-span settings give the threshold")
    g.add_argument("--severity-weighted", action="store_true",
                   help="weigh spans by severity in the MPP score (minor 1, major 5, critical 10)")
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


OUT_FILES = ("results.md", "results.csv", "results.json", "distributions.png", "roc.png",
             "scatter.png", "reliability.png")
"""Every file ``--out-dir`` may receive (each written atomically, never through a link)."""


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head evaluate``: metrics table (and report files with --out-dir)."""
    from ..evaluation.evaluate import evaluate_scores
    from ..evaluation.gold_formats import span_format
    from ..output_safety import check_out_dir

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
        ci=not args.no_ci,
        n_boot=args.n_boot,
        groups=args.groups,
    )
    print(table, end="")
    if args.out_dir:
        print(f"report written to {args.out_dir}")
    return 0


def _run_gold(args: argparse.Namespace, fmt: str) -> int:
    """Word and span metrics against word tags or error spans."""
    from pathlib import Path

    from ..evaluation.gold_eval import evaluate_gold_files
    from ..io_utils import write_atomic
    from ..json_safety import dumps

    res, table = evaluate_gold_files(
        args.scores, args.gold, fmt, mt=args.gold_mt, source=args.gold_source,
        methods=_split(args.methods), thresholds=args.thresholds, head=args.head,
        severity_weighted=args.severity_weighted, ci=not args.no_ci, n_boot=args.n_boot)
    print(table, end="")
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "results.md", table)
        write_atomic(out / "results.json", dumps(res, indent=1))  # undefined metrics: null
        print(f"report written to {args.out_dir}")
    return 0
