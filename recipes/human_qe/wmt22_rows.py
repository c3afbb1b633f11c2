"""WMT 2022 word level, km-en and ps-en: the leaderboard computed from the official
submissions, with this project's rows beside it (issue 49, item 5).

``build_wmt22.py --leaderboard`` computes every team's MCC from its official predictions
(and records the figure the task published beside it); this script adds the rows of one
``run.py`` run per pair (the head and every softmax-side method on the same test words,
thresholds chosen on dev), and :func:`block` renders the page's table from the committed
``results/wmt22-word.json``.

Usage::

    python -m recipes.human_qe.run --test-gold runs/wmt22/km-en/test.tags \\
        --dev-gold runs/wmt22/km-en/dev.tags --head HEAD --out runs/wmt22-run/km-en
    python -m recipes.human_qe.wmt22_rows --pair km-en --run runs/wmt22-run/km-en --data runs/wmt22
    python -m recipes.human_qe.wmt22_rows --check --data runs/wmt22

With ``--data`` (``build_wmt22.py``'s output folder: the gold, fetched and checked by its
sha256) the run's per-item rows are committed without their text (``results/wmt22/<pair>/``:
ids, every sequence score, per-word scores and offsets; the 2022 repository states no
licence) and our figures are computed from those committed rows and the gold, so
``--check --data`` recomputes every one of them. Without ``--data`` only the run's own
figures are kept (how the rows before issue 58 were made; their runs are gone).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LEADERBOARD = HERE / "results" / "wmt22-word.json"
SOURCE = (
    "[WMT-QE-Task/wmt-qe-2022-data](https://github.com/WMT-QE-Task/wmt-qe-2022-data/tree/"
    "dda0c256b3227a1939f532f101ede9f1b8951f37/official_submissions/task1_word-level)"
)


ROWS = HERE / "results" / "wmt22"
"""Our runs' per-item rows without text: ``<pair>/{dev,test}.scores.jsonl.gz``."""
SPLITS = ("dev", "test")
TEXT_KEYS = ("source", "candidate", "group")
"""Row keys that hold the task's text (kept out of the committed rows)."""


def textless(row: dict) -> dict:
    """A scored row as committed here: no source, candidate or word text (offsets kept; the
    ``group``, which a user-file run fills with the source sentence, dropped too: the
    resampling groups come from the gold), floats to 6 significant digits."""
    from .committed import sig6

    out = {k: v for k, v in row.items() if k not in TEXT_KEYS}
    if "words" in out:
        out["words"] = [{k: v for k, v in w.items() if k != "word"} for w in out["words"]]
    return sig6(out)


def commit_rows(pair: str, run: Path) -> None:
    """Write the run's rows without text under :data:`ROWS` (the pair's folder replaced whole)."""
    from sigmoid_head.safe.outputs import staged_folder

    from .committed import read_jsonl_gz
    from .run import write_jsonl_gz

    rows = {split: read_jsonl_gz(run / f"{split}.scores.jsonl.gz") for split in SPLITS}
    with staged_folder(ROWS / pair) as out:
        for split, split_rows in rows.items():
            write_jsonl_gz(out / f"{split}.scores.jsonl.gz", (textless(r) for r in split_rows))


def evaluate_committed(pair: str, data: Path, n_boot: int) -> dict[str, Any]:
    """``run.py``'s evaluation of the committed rows of ``pair`` against the gold under
    ``data`` (``build_wmt22.py``'s folder), the text restored from the gold by id."""
    from .committed import joined, read_jsonl_gz
    from .evaluate_sets import evaluate_set
    from .run import jsonable
    from .user_files import read_user_sets

    kind, dev, test = read_user_sets(data / pair / "test.tags", data / pair / "dev.tags", None)
    gold = {"dev": dev, "test": test}
    scored = {split: joined(gold[split], read_jsonl_gz(ROWS / pair / f"{split}.scores.jsonl.gz"))
              for split in SPLITS}
    res = evaluate_set(f"wmt22-{pair}", gold["dev"], scored["dev"], gold["test"], scored["test"],
                       n_boot=n_boot, kind=kind)
    return json.loads(json.dumps(jsonable(res)))  # as results.json holds it: lists, no numpy


def add_run(pair: str, run: Path, data: Path | None = None) -> dict[str, Any]:
    """The run's word MCC per method (value, 95% CI over sources), dev thresholds, paired
    tests; with ``data``, its rows committed without text and the figures computed from them."""
    res = json.loads((run / "results.json").read_text())
    if res.get("kind") != "wmt":
        raise SystemExit(f"{run}: not a word-tag run")
    board = json.loads(LEADERBOARD.read_text())
    n_words = board["pairs"][pair]["n_words"]
    if res["word"]["counts"]["n_words"] != n_words:
        raise SystemExit(
            f"{run}: {res['word']['counts']['n_words']} test words, the task has {n_words}"
        )
    settings = dict(res["settings"])
    if isinstance(settings.get("head"), str) and Path(settings["head"]).is_absolute():
        settings["head"] = f"heads/{Path(settings['head']).name}"  # no path of this machine
    if data is not None:
        commit_rows(pair, run)
        res = {**evaluate_committed(pair, data, int(settings["n_boot"])), "settings": res["settings"]}
        settings["rows"] = f"results/wmt22/{pair}"
    ours = ours_of(res, settings)
    board.setdefault("ours", {})[pair] = ours
    LEADERBOARD.write_text(json.dumps(board, indent=1) + "\n")
    return ours


def ours_of(res: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The leaderboard's record of one evaluation: counts, settings, per-method MCC and
    dev threshold, the paired tests."""
    return {
        "n_dev": res["n_dev"],
        "n_test": res["n_test"],
        "settings": settings,
        "methods": {
            m: {"mcc": v["mcc"], "threshold": res["word"]["thresholds"][m]}
            for m, v in res["word"]["methods"].items()
        },
        "paired": {
            m: {
                k: t[k]
                for k in (
                    "delta",
                    "ci_low",
                    "ci_high",
                    "p_value",
                    "p_holm",
                    "p_holm_normal",
                    "n_boot",
                    "family",
                )
            }
            for m, t in (res.get("paired") or {}).items()
        },
    }


def check(data: Path) -> int:
    """Recompute our rows of every pair with committed per-item rows; 1 when a figure differs
    (compared as the tables are, :func:`recipes.common.compare.compare`)."""
    from ..common.compare import compare

    board = json.loads(LEADERBOARD.read_text())
    bad = 0
    for pair, ours in board.get("ours", {}).items():
        if "rows" not in ours["settings"]:
            print(f"{pair}: no committed per-item rows (the run's own figures only)")
            continue
        again = ours_of(evaluate_committed(pair, data, int(ours["settings"]["n_boot"])),
                        ours["settings"])
        same = compare(json.dumps(ours, indent=1), json.dumps(again, indent=1))
        bad += not same.ok
        print(f"{pair}: " + (f"every figure recomputed equal (largest relative difference "
                             f"{same.largest:.2g})" if same.ok else same.problem))
    return 1 if bad else 0


def block(board: dict[str, Any]) -> str:
    """The page's table: every submission's MCC (computed here and as published), then ours."""

    lines = [
        "| pair | system | word MCC (computed here) | published | what |",
        "|---|---|---|---|---|",
    ]
    for pair, p in board["pairs"].items():
        subs = p["submissions"]
        best = max((t for t in subs if t != "OrganizersBaselines"), key=lambda t: subs[t]["mcc"])
        for team, r in sorted(subs.items(), key=lambda kv: -kv[1]["mcc"]):
            what = (
                "the organisers' baseline (OpenKiwi)"
                if team == "OrganizersBaselines"
                else "best team"
                if team == best
                else "team"
            )
            pub = f"{r['published_mcc']:.4f}" if r.get("published_mcc") is not None else "-"
            lines.append(f"| {pair} | {team} ({r['method']}) | {r['mcc']:.4f} | {pub} | {what} |")
        ours = board.get("ours", {}).get(pair)
        if not ours:
            lines.append(f"| {pair} | this head and its softmax | - | - | not scored yet |")
            continue
        for m, v in ours["methods"].items():
            x, lo, hi = v["mcc"]
            lines.append(
                f"| {pair} | {m} (SmolLM2-135M-Instruct{', the head' if m == 'sigmoid' else ''}) "
                f"| {x:.4f} [{lo:.3f}, {hi:.3f}] | - | dev threshold {v['threshold']:.3g} |"
            )
    lines += [
        "",
        f"Submissions: {SOURCE}; published figures: the task's results page in the same "
        "repository. Word MCC of BAD over all test words. Our rows: thresholds chosen on dev "
        "(the first sentences of the WMT 2021 test gold of the same pair, MLQE-PE: "
        + (", ".join(f"{p} {o['n_dev']}" for p, o in board.get("ours", {}).items()) or "none yet")
        + "), 95% interval over test sources.",
        "",
    ]
    return "\n".join(lines + _tests(board))


def _tests(board: dict[str, Any]) -> list[str]:
    """The paired tests of our rows (head against each softmax-side method), per pair."""
    from .committed import fmt_p

    lines: list[str] = []
    tests = [
        (pair, m, t) for pair, o in board.get("ours", {}).items() for m, t in o["paired"].items()
    ]
    if tests:
        lines += [
            "| pair | head vs | delta | 95% CI | p | Holm p | Holm p (normal) |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {pair} | {m} | {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
            f"| {fmt_p(t['p_value'], t['n_boot'])} | {fmt_p(t['p_holm'], t['n_boot'])} "
            f"| {t['p_holm_normal']:.2g} |"
            for pair, m, t in tests
        ]
        lines += [
            "",
            "Holm within each pair's family (the head against each softmax-side method, "
            "two-sided, bootstrap over sources).",
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", choices=("km-en", "ps-en"))
    ap.add_argument("--run", type=Path, help="run.py's output folder for that pair")
    ap.add_argument("--data", type=Path, help="build_wmt22.py's output folder (the gold)")
    ap.add_argument("--check", action="store_true",
                    help="recompute our committed rows' figures from them and the gold (--data)")
    args = ap.parse_args(argv)
    if args.check:
        if args.data is None:
            ap.error("--check needs --data (build_wmt22.py's output folder)")
        return check(args.data)
    if args.pair is None or args.run is None:
        ap.error("give --pair and --run (or --check --data)")
    ours = add_run(args.pair, args.run, args.data)
    print(
        f"{args.pair}: " + ", ".join(f"{m} {v['mcc'][0]:.4f}" for m, v in ours["methods"].items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
