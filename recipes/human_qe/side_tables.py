"""More generated tables of docs/human_labels.md (issue 49), from committed data only.

* ``talks``: MQM TED zh-en test, talk by talk: segment Pearson of the mean
  log-probability with the MQM score, the head against the softmax, 95% intervals over
  source segments, the paired delta with its two-sided bootstrap p, Holm over the talks.
* ``thresholds``: WMT ro-en test, the seed-0 committed head against its seed-1 twin
  (``heads/prior001_s1``) in word MCC at several thresholds: each head's own dev-chosen
  one (the page's comparison), then both heads at the threshold that flags the same
  share of each head's dev words (10% to 60%); two-sided paired bootstrap over sources.

Beside them :func:`extra` builds the labelled heads' et-en block (:mod:`.labelled_tables`)
and the learning curve (:mod:`.curve_tables`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .evaluate_sets import flat_words, human_scores, item_groups, items_of, pick_threshold

N_BOOT = 1000
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def _rows(name: str, split: str, variant: str | None = None) -> tuple[list[dict], list[dict]]:
    from .committed import RESULTS, gold_rows, joined, read_jsonl_gz, with_head

    gold = gold_rows(name, split, None)
    rows = joined(gold, read_jsonl_gz(RESULTS / name / f"{split}.scores.jsonl.gz"))
    if variant:
        head = read_jsonl_gz(RESULTS / name / "heads" / variant / f"{split}.scores.jsonl.gz")
        n = len(head)
        gold, rows = gold[:n], with_head(rows[:n], head)
    return gold, rows


def talk_lines() -> list[str]:
    """The MQM test set's per-talk table (markdown)."""
    from sigmoid_head.evaluation.bootstrap import clustered_ci, paired_bootstrap
    from sigmoid_head.evaluation.metrics import pearson
    from sigmoid_head.evaluation.pvalues import add_holm

    gold, rows = _rows("mqm-ted-zhen", "test")
    tests, cis = {}, {}
    for talk in sorted({g["doc"] for g in gold}):
        keep = [k for k, g in enumerate(gold) if g["doc"] == talk]
        sub = [gold[k] for k in keep]
        human, groups = human_scores("mqm", sub), item_groups(items_of("mqm", sub))
        x = {
            m: np.asarray([float(rows[k][f"{m}_mean_log"]) for k in keep])
            for m in ("sigmoid", "softmax")
        }
        cis[talk] = {
            m: clustered_ci(lambda i, v=v, h=human: {"r": pearson(v[i], h[i])}, groups, N_BOOT)["r"]
            for m, v in x.items()
        }
        cis[talk]["n"] = (len(keep), len(set(groups)))
        tests[talk] = paired_bootstrap(
            pearson, x["sigmoid"], x["softmax"], human, n=N_BOOT, groups=groups
        )
    add_holm(
        tests, "MQM test talks: head vs softmax, segment Pearson (mean log), Holm over the talks"
    )
    lines = [
        "| talk | segments (sources) | head | softmax | delta [95% CI] | p | Holm p |",
        "|---|---|---|---|---|---|---|",
    ]
    for talk, t in tests.items():
        (n, s), h, sm = cis[talk]["n"], cis[talk]["sigmoid"], cis[talk]["softmax"]
        lines.append(
            f"| {talk} | {n:,} ({s}) | {h[0]:.3f} [{h[1]:.3f}, {h[2]:.3f}] "
            f"| {sm[0]:.3f} [{sm[1]:.3f}, {sm[2]:.3f}] "
            f"| {t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
            f"| {_p(t['p_value'])} | {_p(t['p_holm'])} |"
        )
    return [*lines, ""]


def _p(p: float) -> str:
    return f"< {1 / N_BOOT:.3g}" if p == 0 else f"{p:.3g}"


def threshold_lines() -> list[str]:
    """Seed 0 against seed 1 on WMT word MCC at several thresholds (markdown)."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.span_metrics import mcc

    name, heads = "mlqe-roen-word", {"seed 0": None, "seed 1": "prior001_s1"}
    dev, test, cut = {}, {}, []
    for split, out in (("dev", dev), ("test", test)):
        both = {label: _rows(name, split, variant) for label, variant in heads.items()}
        n = min(len(gold) for gold, _ in both.values())  # a head scored on a prefix: that prefix
        if n < max(len(gold) for gold, _ in both.values()):
            cut.append(f"{split}: the first {n} texts")
        for label, (gold, rows) in both.items():
            items = items_of("wmt", gold[:n])
            s, b = flat_words(rows[:n], items, "sigmoid")
            out[label] = (np.concatenate(s), np.concatenate(b), items)
    items = test["seed 0"][2]
    bad = test["seed 0"][1]
    groups = _word_groups(items)
    chosen = {"dev-chosen (each head's own)": {h: pick_threshold(*dev[h][:2]) for h in heads}}
    for q in SHARES:
        chosen[f"flags {q:.0%} of dev words"] = {h: float(np.quantile(dev[h][0], q)) for h in heads}
    scope = [f"Both heads on the texts both were scored on ({'; '.join(cut)}).", ""] if cut else []
    lines = scope + [
        "| thresholds | seed 0 MCC | seed 1 MCC | test words flagged (seed 0 / 1) | delta [95% CI] | p |",
        "|---|---|---|---|---|---|",
    ]
    for label, thr in chosen.items():
        pred = {h: (test[h][0] < thr[h]).astype(float) for h in heads}
        t = paired_bootstrap(mcc, pred["seed 0"], pred["seed 1"], bad, n=N_BOOT, groups=groups)
        lines.append(
            f"| {label} | {mcc(pred['seed 0'], bad):.3f} | {mcc(pred['seed 1'], bad):.3f} "
            f"| {pred['seed 0'].mean():.0%} / {pred['seed 1'].mean():.0%} "
            f"| {t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] | {_p(t['p_value'])} |"
        )
    return [*lines, ""]


def _word_groups(items: list) -> np.ndarray:
    from sigmoid_head.evaluation.gold_eval import gold_word_bad

    return np.concatenate([[it.group] * len(gold_word_bad(it)) for it in items])


TALKS_BLOCK = "human-qe-talks:mqm-ted-zhen"
THRESHOLDS_BLOCK = "human-qe-thresholds:mlqe-roen-word"
CURVE_BLOCK = "human-qe-curve:curve"


def extra(
    sets: tuple[str, ...], shroom_data: Path | None
) -> tuple[dict[Path, str], dict[str, str]]:
    """(file -> text, page block -> text) of the per-talk, threshold, labelled-head and curve
    tables."""
    import json

    from .committed import RESULTS
    from .curve_tables import CURVE_JSON, build_curve, curve_lines
    from .labelled_tables import BLOCK as LABELLED_BLOCK
    from .labelled_tables import HEADS, RUNS_DIR, labelled_lines

    files: dict[Path, str] = {}
    blocks: dict[str, str] = {}
    if "mqm-ted-zhen" in sets:
        blocks[TALKS_BLOCK] = "\n".join(talk_lines())
    if "mlqe-roen-word" in sets and (RESULTS / "mlqe-roen-word" / "heads" / "prior001_s1").is_dir():
        blocks[THRESHOLDS_BLOCK] = "\n".join(threshold_lines())
    runs = [RESULTS / RUNS_DIR / head / "results.json" for head in HEADS]
    if "mlqe-roen-word" in sets and all(p.is_file() for p in runs):
        blocks[LABELLED_BLOCK] = "\n".join(labelled_lines(RESULTS))
    inputs = [RESULTS / s / "dev.scores.jsonl.gz" for s in ("mlqe-roen-word", "mqm-ted-zhen")]
    # the curve reads every set's committed rows: built where they all are (not in a copy of one set)
    if {"mlqe-roen-word", "curve"} & set(sets) and all(p.is_file() for p in inputs):
        curve = build_curve(shroom_data)
        files[CURVE_JSON] = json.dumps(curve, indent=1) + "\n"
        blocks[CURVE_BLOCK] = "\n".join(curve_lines(curve))
    return files, blocks
