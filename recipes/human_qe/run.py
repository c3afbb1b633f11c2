"""Score a human-labelled QE set with a base model (and head) and write its tables.

One command: force-decode the set's dev and test texts with the base model and the head in
one pass per split (every method the library has: the head's ``sigmoid``, ``softmax``,
``boostedprob``, the entropy, RAUQ; :func:`sigmoid_head.scoring.corpus.score_corpus` with
per-token and per-word scores), then evaluate (:mod:`evaluate_sets`: thresholds on dev,
test once) and write:

* ``<out>/{dev,test}.scores.jsonl.gz``: the per-item scores (one row per text, words kept);
* ``<out>/results.json``: every figure with its 95% interval over sources, the thresholds,
  the paired tests;
* ``<out>/report.md``: the tables.

Usage::

    python -m recipes.human_qe.run --set mlqe-roen-word|mqm-ted-zhen|mushroom-en --out DIR
        [--model M] [--head H] [--limit N] [--quick] [--data recipes/human_qe/data]

Your own labels instead of a named set (:mod:`user_files`: any gold format ``evaluate``
reads)::

    python -m recipes.human_qe.run --test-gold test.tags --dev-gold dev.tags --out DIR ...
    python -m recipes.human_qe.run --test-gold spans.jsonl --dev-share 0.3 --out DIR ...

``--quick``: the first 6 texts of each split, 20 resamples (a smoke test; the suite runs it
on a tiny random model). ``--limit N``: the first N texts of each split. Without
``--model`` and ``--head`` the embedded SmolLM2-135M-Instruct scores (baselines only).

Before the model is loaded (:mod:`run_checks`): ``--out`` must be a new folder or an earlier
run of the same set, gold, model and head (which the new run replaces whole, once every
file is written); a folder of committed data (``recipes/human_qe/{data,results}/``, or one
holding files git tracks) or another run's is refused. Dev texts that are test texts (the
same file twice, a copy) are refused when they make at least half of either split, with
the counts; fewer are a warning with the counts.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .evaluate_sets import KIND, evaluate_set
from .run_checks import RUN_FILES, check_leak, check_out, check_same_run, gold_digest  # noqa: F401

HERE = Path(__file__).resolve().parent

PROMPTS = {  # the MT prompt is the one the recipe's head is trained with
    "wmt": "Translate this sentence into English.\n{source}\n",
    "mqm": "Translate this sentence into English.\n{source}\n",
    "shroom": "{source}\n",
}
"""Default prompt per kind of set for causal models, head or not (``--prompt-template``
overrides it; a head trained with another prompt should be given its own)."""


def read_split(data: Path, name: str, split: str) -> list[dict]:
    """The checked records of one split (:func:`~sigmoid_head.evaluation.human_sets.
    read_human_split`: a bad file, line or field is one error naming it)."""
    from sigmoid_head.evaluation.human_sets import read_human_split

    path = data / name / f"{split}.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: build it with recipes/human_qe/build_data.py "
            f"--clones DIR --sets {name}"
        )
    return read_human_split(path, KIND[name])


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def score(model: Any, rows: list[dict], args: argparse.Namespace, has_head: bool) -> list[dict]:
    """Every method from one forward pass per batch (RAUQ included for causal models)."""
    from sigmoid_head.scoring.corpus import CorpusConfig, score_corpus
    from sigmoid_head.scoring.token_scores import unpack_model

    backbone = unpack_model(model)[0]
    causal = not getattr(backbone, "is_seq2seq", False)
    prompt = args.prompt_template
    if prompt is None and causal:  # one prompt for the head and every baseline
        prompt = getattr(args, "user_prompt", None) or PROMPTS[KIND[args.set]]
    cfg = CorpusConfig(
        batch_size=args.batch_size,
        with_tokens=True,
        quiet=True,
        rauq=causal and not args.no_rauq,
        prompt_template=prompt,
    )
    shown = getattr(args, "source_shown", None)  # the prompt without the source (issue 58, lopo.py)
    inputs = [{"source": shown if shown is not None else r.get("source") or "", "candidate": r["candidate"]}
              for r in rows]
    return list(score_corpus(model, inputs, cfg).rows)


def jsonl_gz_bytes(path: Path, rows: Iterable[dict]) -> bytes:
    """The bytes of ``path`` holding one JSON object per line, gzipped with no timestamp
    (the same rows give the same bytes; the header names ``path`` as a file written in
    place would)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=str(path), mode="wb", fileobj=buf, mtime=0) as f:
        for row in rows:
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    return buf.getvalue()


def write_jsonl_gz(path: Path, rows: Iterable[dict]) -> None:
    """:func:`jsonl_gz_bytes` written whole or not at all (a temporary file, flushed to disk,
    renamed over ``path``: a killed run leaves the old file, never a cut one)."""
    from sigmoid_head.safe.files import write_atomic

    write_atomic(path, jsonl_gz_bytes(path, rows))


def write_rows(path: Path, gold: list[dict], scored: list[dict]) -> None:
    write_jsonl_gz(
        path,
        (
            {
                "id": g["id"],
                "group": g["group"],
                **{k: v for k, v in s.items() if k not in ("source", "tokens")},
            }
            for g, s in zip(gold, scored, strict=True)
        ),
    )


def cell(v: Any) -> str:
    """A table cell: a number rounded for the report, an interval as ``x [lo, hi]``."""
    if not isinstance(v, list | tuple):
        return str(v)
    x, lo, hi = v
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.3f} [{lo:.3f}, {hi:.3f}]" if lo == lo else f"{x:.3f}"


def _table(title: str, rows: dict[str, dict], cols: list[str]) -> list[str]:
    cols = [c for c in cols if any(c in r for r in rows.values())]
    out = [f"### {title}", "", "| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    out += [f"| {k} | " + " | ".join(cell(r.get(c)) for c in cols) + " |" for k, r in rows.items()]
    return [*out, ""]


def report(res: dict[str, Any], settings: dict[str, Any]) -> str:
    """The markdown tables of one set's results."""
    lines = [
        f"## {res['set']} ({res['n_dev']} dev / {res['n_test']} test texts)",
        "",
        "Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()),
        "",
        "95% intervals resample sources; thresholds chosen on dev, test scored once.",
        "",
    ]
    lines += _table(
        "Segment level: correlation with the human score (test)",
        res["segment"],
        ["pearson", "kendall"],
    )
    if "word" in res:
        lines += [f"Word counts: {res['word']['counts']}", ""]
        lines += _table(
            "Word and span level (test; BAD = positive)",
            res["word"]["methods"],
            ["mcc", "f1_bad", "roc_auc", "ap", "char_f1", "mpp_f1"],
        )
        if "flagged" in res["word"]:
            flagged = ", ".join(f"{m} {v:.0%}" for m, v in res["word"]["flagged"].items())
            lines += [
                "Thresholds: per method, the dev word-MCC-best of a grid of the dev scores' "
                "1st to 80th percentiles (and 0.5). Share of test words flagged at each "
                f"method's threshold: {flagged}.",
                "",
            ]
    if "gaps" in res:
        lines += [f"Gaps: {res['gaps']['counts']} (proxy gap score: the next word's score)", ""]
        lines += _table(
            "Gaps (test)",
            res["gaps"]["methods"],
            ["gap_mcc", "gap_f1_bad", "gap_roc_auc", "gap_ap"],
        )
    if "source_tags" in res:
        lines += [f"Source tags: {res['source_tags']}.", ""]
    if "shroom" in res:
        lines += _table(
            "Mu-SHROOM (test; per-answer mean)", res["shroom"]["methods"], ["iou", "spearman"]
        )
        if "reference" in res["shroom"]:
            lines += _table(
                "Mu-SHROOM references without a model (test)", res["shroom"]["reference"], ["iou"]
            )
            flagged = ", ".join(f"{m} {v:.0%}" for m, v in res["shroom"]["flagged"].items())
            lines += [
                f"Share of test words flagged at each method's dev-chosen threshold: {flagged}.",
                "",
            ]
        if "uncapped" in res["shroom"]:
            lines += [
                "Thresholds: the dev IoU-best of a grid of the dev scores' 1st to 80th "
                "percentiles (and 0.5). With the grid run up to the 100th percentile (every "
                "word flagged), test IoU and share of test words flagged: "
                + ", ".join(
                    f"{m} {u['iou']:.3f} ({u['flagged']:.0%})"
                    for m, u in res["shroom"]["uncapped"].items()
                )
                + ".",
                "",
            ]
    if res.get("paired"):
        lines += [
            f"### Paired tests: {res['primary']}",
            "",
            "| sigmoid vs | delta | 95% CI | p | p (Holm) | p (normal) | p (normal, Holm) |",
            "|---|---|---|---|---|---|---|",
        ]
        for m, t in res["paired"].items():
            lines.append(
                f"| {m} | {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
                f"| {t['p_value']:.3g} | {t['p_holm']:.3g} "
                f"| {t['p_normal']:.2g} | {t['p_holm_normal']:.2g} |"
            )
        lines += [
            "",
            "p: two-sided paired bootstrap over sources (0 = below one in n_boot); p (normal):"
            " the delta over its bootstrap standard error, normal (resolves small p); Holm"
            " within this table's family.",
            "",
        ]
    else:
        lines += ["No paired tests: no head (`sigmoid`) scores in this run.", ""]
    return "\n".join(lines)


def jsonable(x: Any) -> Any:
    """``x`` with numpy numbers and arrays, and tuples, as plain JSON values."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(KIND), help="a named set (or --test-gold)")
    ap.add_argument("--test-gold", type=Path, help="your own gold file: its test items")
    ap.add_argument("--dev-gold", type=Path, help="your own gold file for dev (thresholds)")
    ap.add_argument("--dev-share", type=float, help="with --test-gold alone: this share of its sources is dev")
    ap.add_argument("--gold-format", help="the format of --test-gold/--dev-gold (default: detected)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--model", help="base model id/path (default: the head's, else SmolLM2)")
    ap.add_argument("--head", help="trained head folder (without it: baselines only)")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--limit", type=_positive, help="the first N texts of each split")
    ap.add_argument("--quick", action="store_true", help="6 texts per split, 20 resamples")
    ap.add_argument("--n-boot", type=_positive, default=1000)
    ap.add_argument("--batch-size", type=_positive, default=16)
    ap.add_argument("--prompt-template", help="causal prompt with {source}")
    ap.add_argument("--source-shown", metavar="TEXT",
                    help="put TEXT in the prompt in place of every source (a prompt without the "
                         "source); items are still grouped by their own source for resampling")
    ap.add_argument("--no-rauq", action="store_true")
    ap.add_argument("--device")
    args = ap.parse_args(argv)
    if bool(args.set) == bool(args.test_gold):
        ap.error("give a named set (--set) or your own gold file (--test-gold), one of them")
    args.user, args.user_prompt = None, None
    if args.test_gold:
        from sigmoid_head.evaluation.gold_formats import detect_format

        from .user_files import SOURCE_PROMPT_FORMATS, read_user_sets

        try:
            args.user = read_user_sets(args.test_gold, args.dev_gold, args.dev_share, args.gold_format)
            fmt = args.gold_format or detect_format(args.test_gold)
        except ValueError as e:
            ap.error(str(e))
        args.set = args.test_gold.name
        args.user_prompt = PROMPTS["shroom" if fmt in SOURCE_PROMPT_FORMATS else "wmt"]
    try:
        return run(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"run.py: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


def _split_names(args: argparse.Namespace) -> tuple[str, str]:
    """How the dev and the test texts are named in an error: their files or options."""
    if getattr(args, "user", None):
        dev = f"--dev-gold {args.dev_gold}" if args.dev_gold else f"--dev-share of {args.test_gold}"
        return dev, f"--test-gold {args.test_gold}"
    return tuple(str(args.data / args.set / f"{split}.jsonl.gz") for split in ("dev", "test"))


def checked_gold(args: argparse.Namespace, limit: int | None,
                 model: str) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """(the dev and test records to score, each split's :func:`gold_digest`), once ``--out``
    (:func:`check_out`, :func:`check_same_run`) and the splits' overlap (:func:`check_leak`)
    are checked: every refusal comes before the model is loaded."""
    check_out(args.out)
    user = getattr(args, "user", None)
    whole = {split: user[1 if split == "dev" else 2] if user else read_split(args.data, args.set, split)
             for split in ("dev", "test")}
    digests = {split: gold_digest(rows) for split, rows in whole.items()}
    check_same_run(args.out, args.set, {"model": model, "head": args.head}, digests)
    gold = {split: rows[:limit] for split, rows in whole.items()}
    if min(len(g) for g in gold.values()) < 2:
        raise ValueError(f"--limit {limit}: a split needs at least 2 texts")
    check_leak(gold["dev"], gold["test"], *_split_names(args))
    return gold, digests


def run(args: argparse.Namespace) -> int:
    """Check every input, score both splits, evaluate, and write the run's folder whole."""
    from sigmoid_head.cli.common import ModelOptions
    from sigmoid_head.safe.files import fsync_dir, write_durable
    from sigmoid_head.safe.outputs import staged_folder

    limit = 6 if args.quick else args.limit
    n_boot = 20 if args.quick else args.n_boot
    user = getattr(args, "user", None)  # your own gold files (user_files.py)
    model_setting = args.model or "(head's base / embedded SmolLM2)"
    gold, digests = checked_gold(args, limit, model_setting)
    t0 = time.time()
    model = ModelOptions(args.head, args.model, device=args.device).load()
    splits = {split: (rows, score(model, rows, args, has_head=bool(args.head)))
              for split, rows in gold.items()}
    t_score = time.time() - t0
    res = evaluate_set(args.set, *splits["dev"], *splits["test"], n_boot=n_boot,
                       kind=user[0] if user else None)
    settings = {
        "model": model_setting,
        "head": args.head,
        "limit": limit,
        "n_boot": n_boot,
        "prompt": args.prompt_template or "default",
        **({"source_shown": args.source_shown} if args.source_shown is not None else {}),
        "scoring_s": round(t_score, 1),
    }
    res["settings"] = settings
    res["gold_sha256"] = digests  # what --out's next run is checked against (check_same_run)
    if "shroom" in res:
        res["shroom"].pop("per_item", None)
    with staged_folder(args.out) as out:  # replaces --out only once every file is written
        for split, (rows, scored) in splits.items():
            write_rows(out / f"{split}.scores.jsonl.gz", rows, scored)
        write_durable(out / "results.json", json.dumps(jsonable(res), indent=1))
        write_durable(out / "report.md", report(res, settings))
    fsync_dir(args.out.parent)
    print(f"{args.set}: wrote {args.out}/report.md ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
