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
    python -m recipes.human_qe.wmt22_rows --pair km-en --run runs/wmt22-run/km-en
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


def add_run(pair: str, run: Path) -> dict[str, Any]:
    """The run's word MCC per method (value, 95% CI over sources), dev thresholds, paired tests."""
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
    ours = {
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
    board.setdefault("ours", {})[pair] = ours
    LEADERBOARD.write_text(json.dumps(board, indent=1) + "\n")
    return ours


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
    ap.add_argument("--pair", required=True, choices=("km-en", "ps-en"))
    ap.add_argument("--run", required=True, type=Path, help="run.py's output folder for that pair")
    args = ap.parse_args(argv)
    ours = add_run(args.pair, args.run)
    print(
        f"{args.pair}: " + ", ".join(f"{m} {v['mcc'][0]:.4f}" for m, v in ours["methods"].items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
