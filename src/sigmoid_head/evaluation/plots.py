"""Figures a person can read: per-label score distributions and ROC curves for binary gold.

Sequence scores are products of token probabilities: good and bad outputs both sit
within a hair of 0 on a linear axis, so a scatter against 0/1 labels shows nothing. For
binary gold the report therefore draws, per method, the distribution of scores of each
label on a log axis (where the scores are positive and span orders of magnitude), and
one ROC curve per method. Shared figure helpers (matplotlib's object-oriented API on
the Agg canvas, imported lazily) live here too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .metrics import calibration_bins, ece, is_binary, roc_auc

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["calibration_plot", "checked_scores", "distribution_plot", "log_axis_helps", "new_figure", "roc_curve",
           "roc_plot", "save_png"]

LOG_DECADES = 2.0
"""A log axis is used when positive scores span at least this many powers of ten."""
COLOURS = {0: "#d62728", 1: "#2ca02c"}
"""Label -> colour (bad red, good green)."""


def new_figure(nrows: int, ncols: int, figsize: tuple[float, float], **kw: Any) -> Figure:
    """A constrained-layout figure with an ``nrows x ncols`` grid of axes (``fig.axes``)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'sigmoid-head[plots]'") from e
    fig = Figure(figsize=figsize, layout="constrained")
    fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig


def checked_scores(
    scores: Mapping[str, ArrayLike], gold: ArrayLike
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The scores and gold as float arrays of one shape, (N,) each, all finite."""
    g = np.asarray(gold, dtype=np.float64)
    if g.ndim != 1 or not np.all(np.isfinite(g)):
        raise ValueError("gold must be a 1-D array of finite values")
    if not scores:
        raise ValueError("scores is empty")
    out = {}
    for name, s in scores.items():
        p = np.asarray(s, dtype=np.float64)
        if p.shape != g.shape:
            raise ValueError(f"method {name!r}: scores shape {p.shape} != gold shape {g.shape}")
        if not np.all(np.isfinite(p)):
            raise ValueError(f"method {name!r}: scores contain NaN or inf")
        out[name] = p
    return out, g


def save_png(fig: Figure, out_path: str | Path) -> Path:
    """Write ``fig`` as a PNG at 120 dpi (parent folders created)."""
    import io

    from ..safe.files import write_atomic

    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    return write_atomic(path, buf.getvalue())  # whole, and never through a planted link


def log_axis_helps(values: ArrayLike) -> bool:
    """Whether ``values`` are all positive and span >= :data:`LOG_DECADES` powers of ten."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or v.min() <= 0:
        return False
    lo, hi = np.quantile(v, [0.02, 0.98])
    return bool(math.log10(hi / lo) >= LOG_DECADES) if lo > 0 else False


def roc_curve(score: ArrayLike, gold_binary: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(false positive rates, true positive rates) at every distinct threshold, from (0, 0)
    to (1, 1); tied scores move both rates at once (the diagonal step)."""
    s, g = np.asarray(score, dtype=np.float64), np.asarray(gold_binary, dtype=np.float64)
    order = np.argsort(-s, kind="mergesort")
    s, g = s[order], g[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # last index of each tie group
    tp, fp = np.cumsum(g)[last], np.cumsum(1 - g)[last]
    return np.r_[0.0, fp / max(fp[-1], 1)], np.r_[0.0, tp / max(tp[-1], 1)]


def distribution_plot(scores: Mapping[str, ArrayLike], gold_binary: ArrayLike,
                      out_path: str | Path, ncols: int = 3, bins: int = 30) -> Path:
    """Per method, the histogram of each label's scores (log x axis where it helps).

    Args:
        scores: method -> (N,) scores, higher = better.
        gold_binary: (N,) 0/1 labels.
        out_path: PNG to write.
        ncols: subplots per row.
        bins: histogram bins per method (shared by both labels).

    Returns:
        ``out_path`` as a Path.
    """
    preds, g = checked_scores(scores, gold_binary)
    if not is_binary(g):
        raise ValueError("distribution_plot needs binary (0/1) gold labels")
    ncols = max(1, min(ncols, len(preds)))
    nrows = math.ceil(len(preds) / ncols)
    fig = new_figure(nrows, ncols, (4.2 * ncols, 3.3 * nrows))
    for ax, (name, p) in zip(fig.axes, preds.items(), strict=False):
        log = log_axis_helps(p)
        if log:
            edges = np.geomspace(p.min(), p.max(), bins + 1)
            ax.set_xscale("log")
        else:
            edges = np.linspace(p.min(), p.max() if p.max() > p.min() else p.min() + 1, bins + 1)
        for label, text in ((1, "good (1)"), (0, "bad (0)")):
            ax.hist(p[g == label], bins=edges, alpha=0.55, color=COLOURS[label],
                    label=f"{text}, n={int(np.sum(g == label))}")
        ax.set_title(f"{name}   ROC-AUC {roc_auc(p, g):.3f}", fontsize=10)
        ax.set_xlabel("score" + (" (log scale)" if log else ""))
        ax.set_ylabel("items")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in fig.axes[len(preds):]:
        ax.set_visible(False)
    fig.suptitle("Score distribution per gold label (separated = good)", fontsize=11)
    return save_png(fig, out_path)


def roc_plot(scores: Mapping[str, ArrayLike], gold_binary: ArrayLike, out_path: str | Path) -> Path:
    """One ROC curve per method (AUC in the legend) with the chance diagonal."""
    preds, g = checked_scores(scores, gold_binary)
    if not is_binary(g) or g.min() == g.max():
        raise ValueError("roc_plot needs binary gold with both labels")
    fig = new_figure(1, 1, (5.2, 5.0))
    ax = fig.axes[0]
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="chance (0.5)")
    styles = ("-", "--", ":", "-.")  # curves of methods that rank alike stay visible
    ranked = sorted(preds.items(), key=lambda kv: -roc_auc(kv[1], g))
    for j, (name, p) in enumerate(ranked):
        fpr, tpr = roc_curve(p, g)
        ax.plot(fpr, tpr, lw=1.8, ls=styles[j % len(styles)], label=f"{name} ({roc_auc(p, g):.3f})")
    ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate (bad kept)",
           ylabel="true positive rate (good kept)", title="ROC curves (AUC)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save_png(fig, out_path)


def calibration_plot(variants: Mapping[str, Mapping[str, ArrayLike]], gold_binary: ArrayLike,
                     out_path: str | Path, n_bins: int = 10) -> Path:
    """Reliability before and after calibration: one panel per method, one curve per
    variant (e.g. raw product, Platt, isotonic), marker area proportional to the items
    in the bin, ECE in the legend.

    Args:
        variants: method -> variant name -> (N,) probabilities in [0, 1].
        gold_binary: (N,) 0/1 labels.
        out_path: PNG to write.
        n_bins: equal-width bins of the predicted probability.

    Returns:
        ``out_path`` as a Path.
    """
    if not variants:
        raise ValueError("variants is empty")
    checked = {m: checked_scores(v, gold_binary)[0] for m, v in variants.items()}
    g = checked_scores(next(iter(variants.values())), gold_binary)[1]
    if not is_binary(g):
        raise ValueError("calibration_plot needs binary (0/1) gold labels")
    if any(p.min() < 0 or p.max() > 1 for v in checked.values() for p in v.values()):
        raise ValueError("calibration_plot needs probabilities in [0, 1]")
    fig = new_figure(1, len(checked), (4.2 * len(checked), 4.4), sharey=True)
    for ax, (method, curves) in zip(fig.axes, checked.items(), strict=True):
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect")
        for name, p in curves.items():
            mean_pred, frac_pos, counts = calibration_bins(p, g, n_bins)
            keep = counts > 0
            (ln,) = ax.plot(mean_pred[keep], frac_pos[keep], lw=1.5,
                            label=f"{name} (ECE {ece(p, g, n_bins):.3f})")
            ax.scatter(mean_pred[keep], frac_pos[keep], s=12 + 400 * counts[keep] / g.size,
                       color=ln.get_color(), alpha=0.6, edgecolors="none")
        ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), title=method,
               xlabel="predicted probability (bin mean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")  # below the diagonal: under-confident curves stay clear
    fig.axes[0].set_ylabel("fraction of good items")
    fig.suptitle("Reliability before and after calibration (marker area = items in the bin)",
                 fontsize=11)
    return save_png(fig, out_path)
