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

import sys
from pathlib import Path

RUNS_DIR = "user-eten"
HEADS = {
    "prior001": "unsupervised: 2,000 ro-en post-edits (the page's head)",
    "labelled_roen": "labelled: MLQE-PE ro-en train tags (6,287 sentences, clean split)",
    "labelled_roen_mix1": "labelled + reference (weight 1): the same clean ro-en tags and their post-edits",
    "labelled_roen_unfiltered": "labelled: MLQE-PE ro-en train tags (6,300 sentences, before the issue-58 filter)",
    "labelled_roen_mix1_unfiltered": "labelled + reference (weight 1): the unfiltered tags and their 6,299 post-edits",
}
ROWS = ("scores.jsonl.gz",)
"""The per-item rows a kept run carries beside its figures (``dev.`` and ``test.``; MLQE-PE is
CC0): the head's and the softmax side's word scores, recomputable against the et-en gold the
leave-one-pair-out study commits (``results/lopo/et-en/``). Runs kept before issue 58 have none."""
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


ETEN = {"kind": "wmt", "n_dev": 1000, "n_test": 1000, "n_words": 19576, "n_bad_words": 5084}
"""What identifies a whole run on the et-en set (the committed runs' figures): its kind, its
dev and test sizes, and its test words and BAD words."""
MIN_BOOT = 1000
"""The fewest resamples a kept run may have (the committed runs': 1000)."""


def _identity(res: dict) -> dict:
    word = res.get("word") if isinstance(res.get("word"), dict) else {}
    counts = word.get("counts") if isinstance(word.get("counts"), dict) else {}
    return {"kind": res.get("kind"), "n_dev": res.get("n_dev"), "n_test": res.get("n_test"),
            "n_words": counts.get("n_words"), "n_bad_words": counts.get("n_bad_words")}


def check_run(res: object, where: Path) -> dict:
    """The settings of a run ``keep`` may keep: a whole run of the et-en set (:data:`ETEN`),
    with a head and at least :data:`MIN_BOOT` resamples.

    Raises:
        ValueError: a quick or partial run, a run of another set, or one without a head;
            one line naming ``where`` (its results.json).
    """
    settings = res.get("settings") if isinstance(res, dict) else None
    if not isinstance(settings, dict):
        raise ValueError(f"{where}: no run settings (not a results.json of run.py)")
    if settings.get("limit") is not None:
        raise ValueError(f"{where}: a run of the first {settings['limit']} texts of each split "
                         "(--limit/--quick), not the whole et-en set")
    n_boot = settings.get("n_boot")
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < MIN_BOOT:
        raise ValueError(f"{where}: {n_boot!r} resamples (n_boot), fewer than the kept runs' {MIN_BOOT}")
    got = _identity(res)
    if diff := [f"{k} {got[k]!r}, not {v!r}" for k, v in ETEN.items() if got[k] != v]:
        raise ValueError(f"{where}: not a run of the et-en set ({'; '.join(diff)})")
    path = settings.get("head")
    if not isinstance(path, str) or not path:
        raise ValueError(f"{where}: a run without a head")
    return settings


def keep(run_dir: Path, head: str, results: Path) -> Path:
    """Copy one head's ``run.py`` output (``results.json``, ``report.md`` and its per-item rows,
    :data:`ROWS`) into
    ``results/user-eten/<head>/``, the head's path cut to its folder name (no path of the
    machine that ran it enters the repository). Only a whole et-en run with a head is kept
    (:func:`check_run`); the folder is written whole, then swapped in."""
    import json

    from sigmoid_head.safe.files import write_durable
    from sigmoid_head.safe.json_io import read_json
    from sigmoid_head.safe.outputs import staged_folder

    if head not in HEADS:
        raise ValueError(f"--head {head!r}: one of {', '.join(HEADS)}")
    for name in ("results.json", "report.md"):
        if not (run_dir / name).is_file():
            raise ValueError(f"{run_dir / name} is missing: not a finished run.py output folder")
    res = read_json(run_dir / "results.json")
    path = check_run(res, run_dir / "results.json")["head"]
    short = f"heads/{Path(path).name}"
    res["settings"]["head"] = short
    report = (run_dir / "report.md").read_text(encoding="utf-8").replace(f"head={path}", f"head={short}")
    dest = results / RUNS_DIR / head
    with staged_folder(dest) as out:  # the kept run's folder replaced only once all are written
        write_durable(out / "results.json", json.dumps(res, indent=1) + "\n")
        write_durable(out / "report.md", report)
        for split in ("dev", "test"):
            rows = run_dir / f"{split}.{ROWS[0]}"
            if rows.is_file():
                write_durable(out / rows.name, rows.read_bytes())
    return dest


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .committed import RESULTS

    ap = argparse.ArgumentParser(description="Keep one head's et-en run (results.json, report.md).")
    ap.add_argument("--keep", type=Path, required=True, help="a run.py output folder")
    ap.add_argument("--head", required=True, choices=sorted(HEADS))
    args = ap.parse_args(argv)
    try:
        print(f"kept {keep(args.keep, args.head, RESULTS)}")
    except (ValueError, OSError) as err:
        print(f"labelled_tables.py: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
