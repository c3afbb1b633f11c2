"""``sigmoid-head calibrate``: fit calibrated probabilities, the combined score and
error-span settings on a labelled dev set, and save them in the head directory (JSON, no
pickle).

Parses the options (generated from :class:`sigmoid_head.evaluation.settings.CalibrateConfig`)
and calls :class:`sigmoid_head.evaluation.calibration.Calibrator`,
:func:`sigmoid_head.evaluation.combination.fit_combination` and
:func:`sigmoid_head.evaluation.spans.fit_span_config`; numpy only, no torch.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from . import UsageError

DESCRIPTION = (
    "Fit Platt scaling and isotonic regression of the sequence scores (with --gold), the "
    "combined score's baseline and weight (with --gold or --quality) and the error-span "
    "threshold and minimum length (with --gold-spans), a learned segment quality score "
    "(with --quality --quality-model) and a learned word-level error detector (with "
    "--gold-spans --word-model) on dev scores from "
    "`sigmoid-head score --with-tokens`; saves calibration.json / combination.json / "
    "error_spans.json / quality_model.json / word_model.json in --head, which "
    "`sigmoid-head score --head` and `generate --head` then apply."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..evaluation.settings import CalibrateConfig
    from .options import add_settings

    add_settings(p, CalibrateConfig)


def _spans(path: str, args: argparse.Namespace, rows: list[dict]) -> list[list[tuple[int, int]]]:
    from ..data.records import iter_jsonl_lines
    from ..evaluation.gold_eval import gold_spans
    from ..evaluation.gold_formats import span_format
    from ..evaluation.spans import check_span_ranges

    fmt = args.gold_format or span_format(path)
    if fmt:
        texts, spans = gold_spans(path, fmt, args.gold_mt)
        bad = next((k for k, (r, t) in enumerate(zip(rows, texts, strict=False))
                    if r.get("candidate") != t), None)
        if bad is not None:
            raise UsageError(f"item {bad + 1}: the scored candidate differs from the gold text")
        return spans
    out = []
    for k, (lineno, rec) in enumerate(iter_jsonl_lines(path)):
        spans = rec.get("error_spans") if isinstance(rec, dict) else rec
        if not isinstance(spans, list):
            raise UsageError(f"{path}:{lineno}: expected a list of [start, end] spans (or an "
                             "object with 'error_spans')")
        if k < len(rows):  # more lines than rows: refused by the count check
            check_span_ranges(spans, len(rows[k].get("candidate") or ""), f"{path}:{lineno}")
        out.append([(int(s), int(e)) for s, e in spans])
    return out


def _fit_combination(args: argparse.Namespace, rows: list[dict]) -> tuple[object, dict]:
    from ..evaluation.combination import fit_combination
    from ..evaluation.readers import read_gold

    gold = read_gold(args.quality, args.gold_field) if args.quality else read_gold(args.gold, args.gold_field)
    try:
        return fit_combination(rows, gold)
    except ValueError as e:
        raise UsageError(f"combined score: {e}") from None


def _print_combination(comb: object, info: dict, head: str) -> None:
    """Save the fitted combination when it beats the default on the dev items; say which
    mix the head's ``combined`` will be."""
    default = info["default"]
    if info["beats_default"]:
        path = comb.save(head)  # type: ignore[attr-defined]
        print(f"combined score saved to {path}: {comb.describe()} (dev {info['metric']} "  # type: ignore[attr-defined]
              f"{info['per_baseline'][info['best']]['value']:.4f}, the default of "
              f"{default['command']} {default['value']:.4f})")
    else:
        print(f"combined score not saved: the best fit, {comb.describe()}, is no better on "  # type: ignore[attr-defined]
              f"these dev items than the default of {default['command']}, {default['describe']} "
              f"({info['per_baseline'][info['best']]['value']:.4f} against {default['value']:.4f}); "
              "the head keeps the default")
    print(f"dev {info['metric']} ({info['n']} items), best weight on the head per baseline:")
    for b, r in info["per_baseline"].items():
        print(f"  {b:<22} weight {r['weight']:.2f}: {r['value']:.4f} (head alone {r['head_alone']:.4f}, "
              f"baseline alone {r['baseline_alone']:.4f})")


def _save_or_remove(model: object, beats: bool, head: str, head_sha256: str | None, what: str,
                    line: str, without: str) -> None:
    """Save a learned model (the quality score or the word model), tied to the head's
    weights, when it clears its bar; else remove the one saved before (it would stay
    active: one unlink); say so either way, ``line`` holding its dev figures."""
    from dataclasses import replace

    from ..head.files import remove_extra

    if beats:
        model = replace(model, head_sha256=head_sha256)  # type: ignore[type-var]
        print(f"{what} saved to {model.save(head)}: {line}")  # type: ignore[attr-defined]
        return
    old = Path(head) / model.FILE  # type: ignore[attr-defined]
    removed = old.is_file()
    remove_extra(head, old.name)
    print(f"{what} not saved: {line}; " + (f"the earlier {old} is removed, " if removed else "") + without)


def _print_quality_model(model: object, info: dict, head: str, head_sha256: str | None) -> None:
    line = (f"out-of-fold dev Pearson {info['cv_pearson']:.4f} against the best single score, "
            f"{info['best_single']}, {info['best_single_pearson']:.4f} ({info['n']} items, "
            f"{info['features']} features, alpha {info['alpha']:g})")
    _save_or_remove(model, info["beats"], head, head_sha256, "learned quality score", line,
                    "rows get no learned_quality")


def _print_word_model(model: object, info: dict, head: str, head_sha256: str | None) -> None:
    line = (f"out-of-fold dev word MCC {info['cv_mcc']:.4f} (AP {info['cv_ap']:.4f}) against the best "
            f"single word score, {info['best_single']}, {info['best_single_mcc']:.4f} at its own best "
            f"threshold ({info['n_words']} words of {info['n_rows']} items, {info['n_errors']} errors; "
            f"{info['features']} features, C {info['c']:g})")
    _save_or_remove(model, info["beats"], head, head_sha256, "learned word model", line,
                    "words get no learned_word")


def _read_scores(path: str) -> list[dict]:
    """Score records, those of earlier releases under today's names."""
    from ..data.records import read_jsonl
    from ..registry.methods import upgrade_columns

    # null is how a NaN score is written (always-valid JSON): read back as NaN, so the
    # fits refuse it in one line ("NaN or inf") instead of failing on None
    return [upgrade_columns({k: math.nan if v is None else v for k, v in r.items()})
            if isinstance(r, dict) else r for r in read_jsonl(path)]


def run(args: argparse.Namespace) -> int:
    """``sigmoid-head calibrate``: everything is read, checked and fitted first, then the
    files are written, so a refusal (exit 2) leaves the head folder as it was."""
    from ..evaluation.calibration import Calibrator, format_report
    from ..evaluation.readers import read_gold
    from ..evaluation.spans import fit_span_config, fit_span_method
    from ..head.files import CONFIG_NAME, EXTRA_FILES
    from ..safe.outputs import refuse_overlaps

    if not (args.gold or args.gold_spans or args.quality):
        raise UsageError("give --gold (sequence labels), --quality (dev quality scores) and/or "
                         "--gold-spans (error locations)")
    if args.quality_model and not args.quality:
        raise UsageError("--quality-model needs --quality (dev quality scores, higher = better)")
    if args.word_model and not args.gold_spans:
        raise UsageError("--word-model needs --gold-spans (dev error locations)")
    if args.test_scores and not args.test_gold:
        raise UsageError("--test-scores needs --test-gold")
    if not (Path(args.head) / CONFIG_NAME).is_file():
        raise UsageError(f"{args.head} is not a head directory (no {CONFIG_NAME})")
    refuse_overlaps({n: Path(args.head) / n for n in EXTRA_FILES},
                    {f"--{k.replace('_', '-')}": getattr(args, k) for k in (
                        "scores", "gold", "quality", "gold_spans", "gold_mt", "test_scores",
                        "test_gold")})
    rows = _read_scores(args.scores)
    cal = comb = cfg = test_report = qmodel = head_sha = wmodel = None
    if args.gold:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
        cal = Calibrator.fit(rows, read_gold(args.gold, args.gold_field), methods)
        if args.test_scores:
            test = _read_scores(args.test_scores)
            test_report = (cal.report(test, read_gold(args.test_gold, args.gold_field)), len(test))
    if args.gold or args.quality:
        comb, info = _fit_combination(args, rows)
    if args.quality_model:
        from ..evaluation.quality_model import fit_quality_model
        from ..head.files import head_weights_sha256

        head_sha = head_weights_sha256(args.head)  # the head it is tied to
        try:
            qmodel, qinfo = fit_quality_model(rows, read_gold(args.quality, args.gold_field))
        except ValueError as e:
            raise UsageError(f"quality model: {e}") from None
    if args.gold_spans:
        if any("words" not in r for r in rows):
            raise UsageError("error spans need per-word scores: score the dev set with --with-tokens")
        from ..evaluation.gold_check import read_score_rows

        # every word has the method's score (with auto: the scores the first word has)
        read_score_rows(args.scores, None if args.span_method == "auto" else [args.span_method])
        gold = _spans(args.gold_spans, args, rows)
        if len(gold) != len(rows):
            raise UsageError(f"{len(rows)} scored items but {len(gold)} lines of gold spans")
        if args.span_method == "auto":
            cfg, _ = fit_span_method(rows, gold)
        else:
            cfg = fit_span_config(rows, gold, args.span_method)
        if args.word_model:
            from ..evaluation.word_model import fit_word_model
            from ..head.files import head_weights_sha256

            head_sha = head_weights_sha256(args.head)
            try:
                wmodel, winfo = fit_word_model(rows, gold)
            except ValueError as e:
                raise UsageError(f"word model: {e}") from None
    # every check passed: write
    if cal is not None:
        print(f"calibration saved to {cal.save(args.head)}")
        print(format_report(cal.dev, f"dev ({cal.n} items, in-sample): ECE and BCE"))
        if test_report is not None:
            print(format_report(test_report[0], f"held out ({test_report[1]} items): ECE and BCE"))
    if comb is not None:
        _print_combination(comb, info, args.head)
    if qmodel is not None:
        _print_quality_model(qmodel, qinfo, args.head, head_sha)
    if wmodel is not None:
        _print_word_model(wmodel, winfo, args.head, head_sha)
    if cfg is not None:
        print(f"error spans saved to {cfg.save(args.head)}: {cfg.method} word score "
              f"< {cfg.threshold:.4g}, at least {cfg.min_words} word(s); dev span "
              f"P {cfg.dev['precision']:.3f} R {cfg.dev['recall']:.3f} F1 {cfg.dev['f1']:.3f}")
    return 0
