"""The labelled-data heads on another language pair (issue 49, item 3), from committed data.

The WMT 2021 word-level QE gold of **et-en** (MLQE-PE, CC0-1.0: test from
``data/test21_goldlabels/et-en-test21.tar.gz``, dev thresholds from
``data/post-editing/dev/et-en-dev.tar.gz``) read as a user's own files
(``run.py --test-gold test.tags --dev-gold dev.tags``, README "User files"), scored once with
each head: the page's unsupervised head (``prior001``: 2,000 ro-en post-edits) and the head
trained on MLQE-PE's ro-en *train* tags (``labelled_roen``), and the same tags mixed with the
paper's objective on those sentences' post-edits (``labelled_roen_mix1``). No head saw an et-en
sentence. Each run folder (``results/user-eten/<head>/``) keeps ``results.json`` and
``report.md`` as ``run.py`` wrote them; the block shows, per head, its word MCC beside the
best softmax-side method's (each at its dev-chosen threshold, the share of test words it
flags) and the head's paired tests against every softmax-side method (two-sided bootstrap
over sources, Holm within that run's family). The two heads are not tested against each
other here: the runs do not keep the gold, so the pairing would have to be rebuilt from the
tags.
"""

from __future__ import annotations

from pathlib import Path

RUNS_DIR = "user-eten"
HEADS = {
    "prior001": "unsupervised: 2,000 ro-en post-edits (the page's head)",
    "labelled_roen": "labelled: MLQE-PE ro-en train tags (6,300 sentences)",
    "labelled_roen_mix1": "labelled + reference (weight 1): the ro-en tags and the same sentences' 6,299 post-edits",
}
BLOCK = "human-qe-labelled:eten"


def _p(t: dict) -> str:
    p, n = t["p_holm"], t["n_boot"]
    return f"< {1 / n:.3g}" if p == 0 else f"{p:.3g}"


def labelled_lines(results: Path) -> list[str]:
    """The et-en block (markdown) from ``results/user-eten/<head>/results.json``."""
    from sigmoid_head.safe.json_io import read_json

    lines = [
        "#### WMT 2021 et-en word tags: each head against the softmax side, word MCC (test)",
        "",
        "| head | trained on | head MCC (words flagged) | best softmax-side MCC (words flagged) "
        "| head - softmax [95% CI], Holm p | head - boostedprob, Holm p | head - rauq, Holm p "
        "| head ROC-AUC / softmax |",
        "|---|---|---|---|---|---|---|---|",
    ]
    runs = {head: read_json(results / RUNS_DIR / head / "results.json") for head in HEADS
            if (results / RUNS_DIR / head / "results.json").is_file()}  # a head not yet run: no row
    for head, res in runs.items():
        trained = HEADS[head]
        word, paired = res["word"], res["paired"]
        mcc = {m: v["mcc"][0] for m, v in word["methods"].items()}
        best = max((m for m in mcc if m != "sigmoid"), key=lambda m: mcc[m])
        flag = word["flagged"]
        soft = paired["softmax"]
        others = [
            f"{paired[m]['delta']:+.3f}, {_p(paired[m])}" if m in paired else "–"
            for m in ("boostedprob", "rauq")
        ]
        auc = word["methods"]
        lines.append(
            f"| {head} | {trained} | {mcc['sigmoid']:.3f} ({flag['sigmoid']:.0%}) "
            f"| {best} {mcc[best]:.3f} ({flag[best]:.0%}) "
            f"| {soft['delta']:+.3f} [{soft['ci_low']:+.3f}, {soft['ci_high']:+.3f}], {_p(soft)} "
            f"| {others[0]} | {others[1]} "
            f"| {auc['sigmoid']['roc_auc'][0]:.3f} / {auc['softmax']['roc_auc'][0]:.3f} |"
        )
    n = runs["prior001"]
    lines += [
        "",
        f"{n['n_test']} test sentences ({n['word']['counts']['n_words']:,} MT words, "
        f"{n['word']['counts']['n_bad_words']:,} BAD), thresholds chosen on {n['n_dev']} dev "
        "sentences; p: two-sided paired bootstrap over sources, Holm within each head's family "
        "(the head against every softmax-side method).",
        "",
    ]
    return lines


def keep(run_dir: Path, head: str, results: Path) -> Path:
    """Copy one head's ``run.py`` output (``results.json``, ``report.md``) into
    ``results/user-eten/<head>/``, the head's path cut to its folder name (no path of the
    machine that ran it enters the repository)."""
    import json

    from sigmoid_head.safe.json_io import read_json

    if head not in HEADS:
        raise ValueError(f"--head {head!r}: one of {', '.join(HEADS)}")
    res = read_json(run_dir / "results.json")
    path = res.get("settings", {}).get("head")
    if not isinstance(path, str) or not path:
        raise ValueError(f"{run_dir / 'results.json'}: a run without a head")
    short = f"heads/{Path(path).name}"
    res["settings"]["head"] = short
    report = (run_dir / "report.md").read_text(encoding="utf-8").replace(f"head={path}", f"head={short}")
    dest = results / RUNS_DIR / head
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "results.json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    (dest / "report.md").write_text(report, encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .committed import RESULTS

    ap = argparse.ArgumentParser(description="Keep one head's et-en run (results.json, report.md).")
    ap.add_argument("--keep", type=Path, required=True, help="a run.py output folder")
    ap.add_argument("--head", required=True, choices=sorted(HEADS))
    args = ap.parse_args(argv)
    print(f"kept {keep(args.keep, args.head, RESULTS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
