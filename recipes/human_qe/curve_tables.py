"""The learning curve's tables (issue 49, item 2), from committed data only.

Each point's head columns (``results/curve/<point>/<set>/``, written by ``curve.py``) are
joined by ``id`` with the committed run's rows (the softmax side: the same frozen model on
the same texts) and the set's gold, and evaluated with :func:`evaluate_sets.evaluate_set` on
the point's texts (thresholds on dev, test once, 1,000 resamples over sources). Written to
``results/curve/curve.json`` and the page's ``human-qe-curve`` blocks by ``tables.py``:

* the curve: per point, the head against the softmax: WMT ro-en test word MCC (with the
  paired delta and its two-sided p, Holm within the set's family) and AP, segment Pearson
  of the mean log-probability with the human score on WMT (minus HTER) and on the MQM
  subset, and Mu-SHROOM IoU;
* the vocabulary diagnostic: on the WMT test words, the rule "flag every MT word absent from
  the head's training targets" (whitespace tokens, exact match; the records the head was
  fitted on, the validation share it held out excluded: :func:`curve.fitted_rows`) against the head's word MCC,
  and the head's and the softmax's ROC-AUC on the words seen and unseen in that data.

Mu-SHROOM's gold is not committed: without ``--shroom-data`` its figures are taken from the
committed ``curve.json`` unchanged (and so not checked).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .curve import CURVE, POINTS, fitted_rows, train_rows, trained_text
from .evaluate_sets import evaluate_set, flat_words, items_of

N_BOOT = 1000
"""Resamples of every curve figure (a bootstrap p of 0 is printed as below one in N_BOOT)."""

CURVE_JSON = CURVE / "curve.json"
CURVE_BLOCK = "human-qe-curve"


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def point_set(point: str, name: str, shroom_data: Path | None) -> dict[str, Any] | None:
    """``evaluate_set`` of one point on one set's curve texts (None: not scored or no gold)."""
    from .committed import RESULTS, gold_rows, joined, with_head

    folder = CURVE / point / name
    if not (folder / "settings.json").exists():
        return None
    splits = []
    for split in ("dev", "test"):
        gold = gold_rows(name, split, shroom_data)
        if gold is None:
            return None
        head = _read(folder / f"{split}.scores.jsonl.gz")
        keep = {h["id"] for h in head}
        gold = [g for g in gold if g["id"] in keep]
        base = [r for r in _read(RESULTS / name / f"{split}.scores.jsonl.gz") if r["id"] in keep]
        splits += [gold, with_head(joined(gold, base), head)]
    res = evaluate_set(name, *splits, n_boot=N_BOOT)
    if name == "mlqe-roen-word":  # secondary: segment Pearson, head against softmax
        res["segment_paired"] = segment_test(*splits)
    return res


SEGMENT_AGGREGATES = ("_mean_log", "_logprob", "_min")
"""Segment scores a side may use: mean and sum of token log-probabilities, the minimum."""


def segment_test(dev_gold: list[dict], dev_scored: list[dict], gold: list[dict],
                 scored: list[dict]) -> dict[str, Any]:
    """The curve's secondary test: paired bootstrap over sources of the WMT segment Pearson
    with minus HTER, head against softmax, two-sided: (a) both as mean log-probability;
    (b) each side's aggregate with the best dev Pearson (head: ``sigmoid_*``; softmax side:
    softmax, BoostedProb and RAUQ aggregates and minus mean entropy), test scored once."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.metrics import pearson

    from .evaluate_sets import human_scores, item_groups

    def column(rows: list[dict], f: str) -> np.ndarray:
        if f == "-entropy_mean":
            return -np.asarray([float(r["entropy_mean"]) for r in rows])
        return np.asarray([float(r[f]) for r in rows])

    fields = [f for f in scored[0] if f.endswith(SEGMENT_AGGREGATES)] + ["-entropy_mean"]
    dev_h = human_scores("wmt", dev_gold)
    dev_r = {f: pearson(column(dev_scored, f), dev_h) for f in fields}
    head = max((f for f in fields if f.startswith("sigmoid_")), key=dev_r.get)
    soft = max((f for f in fields if not f.startswith("sigmoid_")), key=dev_r.get)
    human = human_scores("wmt", gold)
    groups = item_groups(items_of("wmt", gold))
    out: dict[str, Any] = {}
    for name, (fa, fb) in (("mean_log", ("sigmoid_mean_log", "softmax_mean_log")),
                           ("dev_best", (head, soft))):
        t = paired_bootstrap(pearson, column(scored, fa), column(scored, fb), human, n=N_BOOT,
                             groups=groups)
        out[name] = {"head": fa, "softmax": fb, "head_r": pearson(column(scored, fa), human),
                     "softmax_r": pearson(column(scored, fb), human),
                     **{k: t[k] for k in ("delta", "ci_low", "ci_high", "p_value", "p_normal")}}
    return out


def vocabulary(point: str, shroom_data: Path | None) -> dict[str, Any] | None:
    """The "unseen in training" rule and ROC-AUC on seen / unseen WMT test words."""
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.evaluation.span_metrics import mcc

    from .committed import RESULTS, gold_rows, joined, with_head

    folder = CURVE / point / "mlqe-roen-word"
    if not (folder / "settings.json").exists():
        return None
    seen = {w for r in fitted_rows(point) for w in trained_text(r).split()}  # not the held-out share
    gold = gold_rows("mlqe-roen-word", "test", shroom_data)
    head = _read(folder / "test.scores.jsonl.gz")
    rows = with_head(joined(gold, _read(RESULTS / "mlqe-roen-word" / "test.scores.jsonl.gz")), head)
    items = items_of("wmt", gold)
    bad = np.concatenate(flat_words(rows, items, "sigmoid")[1]).astype(bool)
    known = np.asarray([w in seen for g in gold for w in g["candidate"].split()])
    if known.size != bad.size:
        raise ValueError("the WMT candidates' words and tags differ in number")
    out: dict[str, Any] = {
        "n_words": int(bad.size),
        "n_unseen": int((~known).sum()),
        "rule_mcc": float(mcc(~known, bad)),
    }
    for m in ("sigmoid", "softmax"):
        s = np.concatenate(flat_words(rows, items, m)[0])
        for part, mask in (("seen", known), ("unseen", ~known)):  # low score = BAD
            ok = mask & np.isfinite(s)
            both = 0 < bad[ok].sum() < ok.sum()
            out[f"{m}_auc_{part}"] = (
                float(roc_auc(-s[ok], bad[ok].astype(int))) if both else math.nan
            )
    return out


def build_curve(shroom_data: Path | None) -> dict[str, Any]:
    """Every point's figures (the committed ``curve.json``'s where the gold is not here)."""
    old = json.loads(CURVE_JSON.read_text()) if CURVE_JSON.exists() else {}
    out: dict[str, Any] = {}
    for point in POINTS:
        fig: dict[str, Any] = {}
        for name in ("mlqe-roen-word", "mqm-ted-zhen", "mushroom-en"):
            res = point_set(point, name, shroom_data)
            if res is None:
                kept = old.get(point, {}).get(name)
                if kept is not None and name == "mushroom-en" and shroom_data is None:
                    fig[name] = kept
                continue
            fig[name] = _figures(res)
        if fig:
            vocab = vocabulary(point, shroom_data)
            if vocab:
                fig["vocabulary"] = vocab
            fig["n_train"] = len(train_rows(point))
            out[point] = fig
    return out


def _figures(res: dict[str, Any]) -> dict[str, Any]:
    """The curve's figures of one set (value, low, high), head and softmax."""
    seg = res["segment"]
    out: dict[str, Any] = {
        "n_dev": res["n_dev"],
        "n_test": res["n_test"],
        "pearson": {m: seg[f"{m}_mean_log"]["pearson"] for m in ("sigmoid", "softmax")},
    }
    if res["kind"] in ("wmt", "mqm"):
        w = res["word"]["methods"]
        out.update({k: {m: w[m][k] for m in ("sigmoid", "softmax")} for k in ("mcc", "ap")})
        out["flagged"] = {m: _flag_rate(res, m) for m in ("sigmoid", "softmax")}
    if res["kind"] == "shroom":
        out["iou"] = {m: res["shroom"]["methods"][m]["iou"] for m in ("sigmoid", "softmax")}
        out["flagged"] = {m: res["shroom"]["flagged"][m] for m in ("sigmoid", "softmax")}
    if "segment_paired" in res:
        out["segment_paired"] = res["segment_paired"]
    t = res["paired"]["softmax" if res["kind"] != "mqm" else "softmax_mean_log"]
    out["paired"] = {
        k: t[k] for k in ("delta", "ci_low", "ci_high", "p_value", "p_holm", "family_size")
    }
    return out


def _flag_rate(res: dict[str, Any], m: str) -> float | None:
    """Share of test words flagged at the dev-chosen threshold."""
    return res["word"]["flagged"][m]


def _f(x: Any) -> str:
    v = x[0] if isinstance(x, list | tuple) else x
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def _flags(d: dict[str, Any]) -> str:
    f = d.get("flagged") or {}
    if f.get("sigmoid") is None or f.get("softmax") is None:
        return ""
    return f" ({f['sigmoid']:.0%} / {f['softmax']:.0%})"


UNITS = {"mlqe-en-pool": "post-edits", "general-en": "passages of text"}
"""What one training record of each corpus is."""


def data_cell(point: str, n: int) -> str:
    """A point's training data in the curve table: the count and what was counted."""
    return f"{n:,} {UNITS[POINTS[point]['data']]}"


def seed_groups(curve: dict[str, Any]) -> dict[str, list[str]]:
    """The curve's points grouped by training data (corpus and size): seeds of one size."""
    groups: dict[str, list[str]] = {}
    for point in curve:
        spec = POINTS[point]
        key = next(p for p in POINTS if POINTS[p]["data"] == spec["data"] and POINTS[p]["n"] == spec["n"])
        groups.setdefault(key, []).append(point)
    return groups


def seed_mean(curve: dict[str, Any], points: list[str], name: str, key: str, who: str
              ) -> tuple[float, float] | None:
    """Mean and sample SD over seeds of one figure (None when a seed lacks it)."""
    vals = [curve[p].get(name, {}).get(key, {}).get(who) for p in points]
    if any(v is None for v in vals):
        return None
    xs = np.array([v[0] if isinstance(v, list | tuple) else v for v in vals], dtype=float)
    return float(xs.mean()), float(xs.std(ddof=1)) if len(xs) > 1 else 0.0


def gap_trend(curve: dict[str, Any]) -> dict[str, Any] | None:
    """Least-squares line of the WMT word-MCC gap (seed means) on log10(training pairs) over
    the post-edit pool's sizes, and where it would cross zero (None with under 3 sizes)."""
    xs, ys = [], []
    for base, points in seed_groups(curve).items():
        if POINTS[base]["data"] != "mlqe-en-pool":
            continue
        deltas = [curve[p]["mlqe-roen-word"]["paired"]["delta"] for p in points
                  if "mlqe-roen-word" in curve[p]]
        if deltas:
            xs.append(math.log10(curve[base]["n_train"]))
            ys.append(float(np.mean(deltas)))
    if len(xs) < 3:
        return None
    slope, icept = np.polyfit(xs, ys, 1)
    zero = 10 ** (-icept / slope) if slope > 0 else None
    return {"sizes": len(xs), "slope": float(slope), "zero_at": zero}


def curve_lines(curve: dict[str, Any]) -> list[str]:
    """The curve and vocabulary tables (markdown)."""
    lines = [
        "#### Learning curve: the head against the softmax, per training size",
        "",
        "| point | training data | WMT word MCC head / softmax (words flagged) | delta [95% CI], Holm p | "
        "WMT AP head / softmax | WMT Pearson head / softmax | MQM Pearson head / softmax "
        "| Mu-SHROOM IoU head / softmax |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for point, fig in curve.items():
        w, q, s = (fig.get(k, {}) for k in ("mlqe-roen-word", "mqm-ted-zhen", "mushroom-en"))
        pair = w.get("paired")
        delta = (
            f"{pair['delta']:+.3f} [{pair['ci_low']:+.3f}, {pair['ci_high']:+.3f}], "
            + (f"< {1 / N_BOOT:.3g}" if pair["p_holm"] == 0 else f"{pair['p_holm']:.3g}")
            if pair
            else "–"
        )
        cells = [
            f"{_f(d.get(k, {}).get('sigmoid'))} / {_f(d.get(k, {}).get('softmax'))}"
            + (_flags(d) if k in ("mcc", "iou") else "")
            for d, k in ((w, "mcc"), (w, "ap"), (w, "pearson"), (q, "pearson"), (s, "iou"))
        ]
        lines.append(
            f"| {point} | {data_cell(point, fig['n_train'])} | {cells[0]} | {delta} | "
            + " | ".join(cells[1:])
            + " |"
        )
    for base, points in seed_groups(curve).items():
        if len(points) < 2:
            continue
        cells = []
        for name, key in (("mlqe-roen-word", "mcc"), ("mlqe-roen-word", "ap"),
                          ("mlqe-roen-word", "pearson"), ("mqm-ted-zhen", "pearson"),
                          ("mushroom-en", "iou")):
            h, m = (seed_mean(curve, points, name, key, w) for w in ("sigmoid", "softmax"))
            cells.append("–" if h is None or m is None
                         else f"{h[0]:.3f} (SD {h[1]:.3f}) / {m[0]:.3f}")
        deltas = [curve[p]["mlqe-roen-word"]["paired"]["delta"] for p in points]
        lines.append(
            f"| {base}, mean of {len(points)} seeds | {data_cell(base, curve[base]['n_train'])} "
            f"| {cells[0]} | "
            f"{np.mean(deltas):+.3f} (seeds {min(deltas):+.3f} to {max(deltas):+.3f}) | "
            + " | ".join(cells[1:]) + " |"
        )
    seg = {(p, kind): t for p, f in curve.items()
           for kind, t in f.get("mlqe-roen-word", {}).get("segment_paired", {}).items()}
    if seg:
        from sigmoid_head.evaluation.pvalues import holm

        adj = dict(zip(seg, holm([t["p_value"] for t in seg.values()]), strict=True))
        adj_n = dict(zip(seg, holm([t["p_normal"] for t in seg.values()]), strict=True))
        lines += [
            "",
            "#### Learning curve, secondary: WMT segment Pearson, head against softmax (test)",
            "",
            "| point | compared | head | softmax side | head - softmax [95% CI] | p | Holm p | Holm p (normal) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (point, kind), t in seg.items():
            p_txt = f"< {1 / N_BOOT:.3g}" if adj[point, kind] == 0 else f"{adj[point, kind]:.3g}"
            raw = f"< {1 / N_BOOT:.3g}" if t["p_value"] == 0 else f"{t['p_value']:.3g}"
            what = "mean log, both" if kind == "mean_log" else "each side's best on dev"
            lines.append(
                f"| {point} | {what} | {t['head']} {t['head_r']:.3f} | {t['softmax']} {t['softmax_r']:.3f} "
                f"| {t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
                f"| {raw} | {p_txt} | {adj_n[point, kind]:.2g} |")
        lines += ["", "Pearson with minus HTER on the 1,000 WMT ro-en test segments. \"Best on dev\": "
                      "of each side's segment scores (mean and sum of log-probabilities, minimum; "
                      "the softmax side also BoostedProb, RAUQ and minus mean entropy), the one "
                      "with the highest Pearson on the 1,000 dev segments. Two-sided paired "
                      "bootstrap over sources (1000 resamples); Holm over every row of this table "
                      "(a secondary family, declared after the word-level results)."]
    fit = gap_trend(curve)
    if fit:
        lines += ["", (
            f"Trend of the WMT word-MCC gap (head minus softmax; the mean over seeds at each size) "
            f"over the {fit['sizes']} pool sizes, least squares on log10 of the training pairs: "
            f"{fit['slope']:+.3f} per tenfold more data"
            + (f", reaching zero near {round(fit['zero_at'], -3):,.0f} pairs if it held." if fit["zero_at"]
               else ", not closing.")
        )]
    lines += [
        "",
        "#### Vocabulary diagnostic: WMT ro-en test words seen and unseen in the head's training data",
        "",
        "| point | MT words unseen in training | rule MCC | head MCC | head AUC seen / "
        "unseen | softmax AUC seen / unseen |",
        "|---|---|---|---|---|---|",
    ]
    for point, fig in curve.items():
        v = fig.get("vocabulary")
        if v:
            mcc_head = fig["mlqe-roen-word"]["mcc"]["sigmoid"]
            lines.append(
                f"| {point} | {v['n_unseen']:,} of {v['n_words']:,} | {_f(v['rule_mcc'])} "
                f"| {_f(mcc_head)} | {_f(v['sigmoid_auc_seen'])} / {_f(v['sigmoid_auc_unseen'])} "
                f"| {_f(v['softmax_auc_seen'])} / {_f(v['softmax_auc_unseen'])} |"
            )
    return [*lines, ""]


FIGURE = CURVE.parents[3] / "docs" / "results" / "human_qe_curve.svg"
PANELS = (
    ("mlqe-roen-word", "mcc", "WMT ro-en word MCC"),
    ("mlqe-roen-word", "ap", "WMT ro-en word AP"),
    ("mqm-ted-zhen", "pearson", "MQM zh-en segment Pearson (subset)"),
    ("mushroom-en", "iou", "Mu-SHROOM IoU"),
)


def plot(curve: dict[str, Any], out: Path = FIGURE) -> None:
    """The curve's figure (head against softmax per panel, training pairs on a log axis)
    from ``curve.json``: the line joins each size's mean over seeds; a size with one seed
    has its 95% interval over test sources, a size with several has every seed as a dot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "human-qe-curve"
    fig, axes = plt.subplots(1, len(PANELS), figsize=(3.2 * len(PANELS), 3.0))
    pool = {p: f for p, f in curve.items() if POINTS[p]["data"] == "mlqe-en-pool"}
    groups = [g for g in seed_groups(pool).values()]
    general = curve.get("general-en")
    for ax, (name, key, title) in zip(axes, PANELS, strict=True):
        for who, style, colour in (("sigmoid", "o", "C0"), ("softmax", "s", "C1")):
            label = "head" if who == "sigmoid" else "softmax"
            sizes, means = [], []
            for g in groups:
                have = [pool[p][name][key][who] for p in g if name in pool[p]]
                if not have:
                    continue
                n = pool[g[0]]["n_train"]
                sizes.append(n)
                means.append(float(np.mean([v[0] for v in have])))
                if len(have) == 1:  # one seed: its interval over test sources
                    v = have[0]
                    ax.errorbar([n], [v[0]], yerr=[[v[0] - v[1]], [v[2] - v[0]]], fmt=style,
                                color=colour, capsize=3)
                else:  # several seeds: every seed a dot, no interval
                    ax.plot([n] * len(have), [v[0] for v in have], style, color=colour,
                            fillstyle="none")
            ax.plot(sizes, means, style + ("-" if who == "sigmoid" else "--"), color=colour,
                    label=label)
        if general and name in general and key in general[name]:  # another kind of data
            ax.axhline(general[name][key]["sigmoid"][0], color="C2", linestyle=":",
                       label=f"head on general English ({general['n_train']:,} passages)")
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n / 1000:.0f}k" for n in sizes])
        ax.minorticks_off()
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("training pairs (MLQE-PE post-edits)", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Draw the learning curve's figure from curve.json.")
    ap.add_argument("--plot", action="store_true", required=True)
    ap.add_argument("--out", type=Path, default=FIGURE)
    args = ap.parse_args(argv)
    plot(json.loads(CURVE_JSON.read_text()), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
