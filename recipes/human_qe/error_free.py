"""Error-free segment detection on MQM zh-en (issue 49, item 6), from the committed scores.

The WMT 2026 evaluation campaign adds a binary, reference-free subtask: is a translation
error-free (1) or does it contain errors (0)? Its page
(https://www2.statmt.org/wmt26/mteval-subtask3.html) labels a segment error-free when its
ESA score is at least 85 and it has no annotated error span. Its ranking metric is not in
the part of that page reachable here, so this table reports the ROC-AUC of the error-free
class (threshold-free) and the MCC of the binary decision, and says so.

On Google's MQM TED zh-en (no 0-100 score), a segment is error-free when its MQM score is
0 and it has no error span: no rater marked an error that counts (the committed reader's
weights decide what counts; a rebuilt set with other weights changes the labels, and
``tables.py --write`` then rebuilds this table).

Scores: the head's mean log-probability (``sigmoid_mean_log``) and every softmax-side
sequence score of the same pass (mean log and minimum of softmax, BoostedProb and RAUQ;
minus the mean entropy). Each is calibrated on dev into the probability of "error-free"
(Platt scaling, :func:`sigmoid_head.evaluation.calibration.fit_platt`); test is scored
once. Decisions: error-free when the calibrated probability is at least 0.5, and at the
MCC-best dev threshold. The softmax side is represented in the tests by the one score with
the highest dev ROC-AUC (chosen on dev). Paired tests, head against that score, two-sided
bootstrap over sources, Holm over the two figures (ROC-AUC, MCC at the dev threshold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

NAME = "mqm-ted-zhen"
HEAD = "sigmoid_mean_log"
SOFTMAX_SIDE = (
    "softmax_mean_log",
    "softmax_min",
    "boostedprob_mean_log",
    "boostedprob_min",
    "rauq_mean_log",
    "rauq_min",
    "-entropy_mean",
)
FAMILY = "error-free detection, head vs the dev-chosen softmax-side score: ROC-AUC and MCC (two-sided, Holm)"


def labels(gold: Sequence[dict]) -> np.ndarray:
    """(N,) 1 where a segment is error-free: MQM score 0 and no error span."""
    return np.asarray([float(r["mqm"]) == 0.0 and not r["spans"] for r in gold], dtype=float)


def score(rows: Sequence[dict], key: str) -> np.ndarray:
    """(N,) higher = more confident: a sequence field (log of ``*_min``; minus entropy)."""
    if key == "-entropy_mean":
        return -np.asarray([float(r["entropy_mean"]) for r in rows])
    x = np.asarray([float(r[key]) for r in rows])
    return np.log(np.clip(x, 1e-300, None)) if key.endswith("_min") else x


def _mcc_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The probability threshold (error-free when p >= t) with the highest dev MCC."""
    from sigmoid_head.evaluation.span_metrics import mcc

    grid = np.unique(np.quantile(p, np.linspace(0.02, 0.98, 97)))
    return float(max(grid, key=lambda t: mcc(p >= t, y)))


def fit(dev_rows: Sequence[dict], y_dev: np.ndarray, key: str) -> dict[str, float]:
    """Platt scaling of one score on dev, its MCC-best dev threshold and its dev ROC-AUC."""
    from sigmoid_head.evaluation.calibration import fit_platt
    from sigmoid_head.evaluation.metrics import roc_auc

    x = score(dev_rows, key)
    a, b = fit_platt(x, y_dev)
    p = 1.0 / (1.0 + np.exp(-(a * x + b)))
    return {"a": a, "b": b, "threshold": _mcc_threshold(p, y_dev), "dev_roc_auc": roc_auc(x, y_dev)}


def results(n_boot: int = 1000) -> dict[str, Any]:
    """Every figure of the table (module docstring), JSON-ready."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.evaluation.pvalues import add_holm
    from sigmoid_head.evaluation.span_metrics import mcc

    from .committed import gold_rows
    from .feature_combination import split_rows

    (drows, _), (trows, titems) = split_rows(NAME, "dev"), split_rows(NAME, "test")
    yd, yt = labels(gold_rows(NAME, "dev", None)), labels(gold_rows(NAME, "test", None))
    groups = np.asarray([it.group for it in titems])
    out: dict[str, Any] = {
        "set": NAME,
        "family": FAMILY,
        "n_boot": n_boot,
        "counts": {
            "dev": len(yd),
            "dev_error_free": int(yd.sum()),
            "test": len(yt),
            "test_error_free": int(yt.sum()),
        },
        "scores": {},
    }
    decisions = {}
    for key in (HEAD, *SOFTMAX_SIDE):
        f = fit(drows, yd, key)
        x = score(trows, key)
        p = 1.0 / (1.0 + np.exp(-(f["a"] * x + f["b"])))
        decisions[key] = (x, (p >= f["threshold"]).astype(float))
        out["scores"][key] = {
            **f,
            "roc_auc": roc_auc(x, yt),
            "mcc_05": mcc(p >= 0.5, yt),
            "flag_05": float(np.mean(p >= 0.5)),
            "mcc_dev": mcc(p >= f["threshold"], yt),
            "flag_dev": float(np.mean(p >= f["threshold"])),
            "brier": float(np.mean((p - yt) ** 2)),
        }
    best = max(SOFTMAX_SIDE, key=lambda k: out["scores"][k]["dev_roc_auc"])
    tests = {
        "ROC-AUC": paired_bootstrap(
            roc_auc, decisions[HEAD][0], decisions[best][0], yt, n=n_boot, groups=groups
        ),
        "MCC (dev threshold)": paired_bootstrap(
            mcc, decisions[HEAD][1], decisions[best][1], yt, n=n_boot, groups=groups
        ),
    }
    add_holm(tests, FAMILY)
    out["softmax_side_best_on_dev"], out["tests"] = best, tests
    out["base_rate_brier"] = float(np.mean((yd.mean() - yt) ** 2))
    return out


def block(res: dict[str, Any]) -> str:
    """The page's table of :func:`results`."""
    from .committed import fmt_p

    c = res["counts"]
    lines = [
        "| score | dev ROC-AUC | ROC-AUC | MCC, p >= 0.5 | share called error-free | MCC, dev threshold "
        "| share called error-free | Brier |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, s in res["scores"].items():
        name = f"{key} (head)" if key == HEAD else key
        lines.append(
            f"| {name} | {s['dev_roc_auc']:.3f} | {s['roc_auc']:.3f} | {s['mcc_05']:.3f} "
            f"| {s['flag_05']:.0%} | {s['mcc_dev']:.3f} | {s['flag_dev']:.0%} | {s['brier']:.3f} |"
        )
    lines += [
        "",
        f"Head vs {res['softmax_side_best_on_dev']} (the softmax-side score with the highest dev "
        "ROC-AUC):",
        "",
        "| figure | delta (head - it) | 95% CI | p | Holm p | Holm p (normal) |",
        "|---|---|---|---|---|---|",
    ]
    for fig, t in res["tests"].items():
        lines.append(
            f"| {fig} | {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
            f"| {fmt_p(t['p_value'], t['n_boot'])} | {fmt_p(t['p_holm'], t['n_boot'])} | {t['p_holm_normal']:.2g} |"
        )
    base = res["base_rate_brier"]
    return "\n".join(
        [
            *lines,
            "",
            f"Error-free: {c['dev_error_free']} of {c['dev']} dev and "
            f"{c['test_error_free']} of {c['test']} test segments. Brier of the dev base rate "
            f"on test: {base:.3f}"
            + ("" if math.isfinite(base) else " (undefined)")
            + f". Family: {res['family']}; {res['n_boot']} resamples of sources.",
            "",
        ]
    )
