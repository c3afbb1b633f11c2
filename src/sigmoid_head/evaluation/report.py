"""Result tables (terminal, Markdown, CSV) and figures (scatter, reliability; per-label
distributions and ROC curves in :mod:`.plots`) for QE runs.

Tables take the rows returned by :func:`.metrics.evaluate_methods`.
Figures need matplotlib (``pip install 'sigmoid-head[plots]'``); it is imported lazily
and drawn with the object-oriented API on the Agg canvas, so no global pyplot state or
display is touched.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..safe.files import write_atomic
from .metrics import METRICS, calibration_bins, ece, is_binary, pearson
from .plots import (
    checked_scores,
    distribution_plot,
    log_axis_helps,
    new_figure,
    roc_plot,
    save_png,
)

__all__ = ["format_table", "reliability_plot", "scatter_plots", "write_report"]

MARKERS = ("o", "s", "^", "D", "v", "P", "X")
"""Marker per method in the reliability diagram."""

_MISSING = "–"


# ----------------------------------------------------------------------------- tables
def _higher_is_better(metric: str) -> bool:
    spec = METRICS.get(metric)
    return True if spec is None else spec.higher_is_better


def _value(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    return None if v is None else float(v)


def _marks(rows: Sequence[Mapping[str, Any]], metric: str, digits: int) -> dict[int, int]:
    """Row index -> 1 (best) or 2 (second best), comparing values at display precision.

    Ties share a mark. Best is marked when >= 2 rows have a value, second best when >= 3.
    """
    vals = {i: round(v, digits) for i, r in enumerate(rows) if (v := _value(r, metric)) is not None}
    vals = {i: v for i, v in vals.items() if math.isfinite(v)}
    if len(vals) < 2:
        return {}
    order = sorted(set(vals.values()), reverse=_higher_is_better(metric))
    top = order[:2] if len(vals) >= 3 else order[:1]
    return {i: top.index(v) + 1 for i, v in vals.items() if v in top}


def _cell(row: Mapping[str, Any], metric: str, digits: int, mark: int = 0) -> str:
    v = _value(row, metric)
    if v is None:
        return _MISSING
    text = f"{v:.{digits}f}"
    text = {1: f"**{text}**", 2: f"_{text}_"}.get(mark, text)
    lo, hi = _value(row, f"{metric}_low"), _value(row, f"{metric}_high")
    if lo is not None and hi is not None:
        text += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
    return text


def _header(metric: str) -> str:
    return f"{metric} {'↑' if _higher_is_better(metric) else '↓'}"


def _infer_metrics(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    present = {k for r in rows for k in r}
    return [m for m in METRICS if m in present]


def _csv(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["method", "n"]
    for m in metrics:
        head += [m, f"{m}_ci_low", f"{m}_ci_high"]
    w.writerow([*head, "notes"])
    for r in rows:
        line: list[Any] = [r.get("method", ""), r.get("n", "")]
        for m in metrics:
            line += [
                repr(v) if (v := _value(r, k)) is not None else ""
                for k in (m, f"{m}_low", f"{m}_high")
            ]
        w.writerow([*line, "; ".join(r.get("notes", []))])
    return buf.getvalue()


def format_table(
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None = None,
    fmt: str = "terminal",
    bold_best: bool = True,
    digits: int = 3,
    max_width: int = 0,
) -> str:
    """Render metric rows as a table: one row per method, one column per metric.

    Cells read ``0.412 [0.370, 0.450]`` when the row has ``<metric>_low/_high`` CIs and
    ``–`` when the metric was skipped. Headers carry the direction (↑ higher is better,
    ↓ lower is better, e.g. ``bce ↓``).

    Args:
        rows: dicts with ``method`` and metric values, as from ``evaluate_methods``.
        metrics: columns to show; default every registered metric present in ``rows``.
        fmt: ``"terminal"`` (aligned plain text), ``"markdown"`` (best value per column in
            **bold**, second best in _italics_, respecting each metric's direction) or
            ``"csv"`` (full precision, separate ``<metric>_ci_low/_ci_high`` columns).
        bold_best: mark best / second-best values in Markdown.
        digits: decimals shown in terminal and Markdown.
        max_width: terminal only: a table wider than this many characters is shown as
            several, each with the method column and as many metric columns as fit (0: one
            table, however wide).

    Returns:
        The table as a string.
    """
    cols = list(metrics) if metrics is not None else _infer_metrics(rows)
    if fmt == "csv":
        return _csv(rows, cols)
    if fmt not in ("terminal", "markdown"):
        raise ValueError(f"fmt must be 'terminal', 'markdown' or 'csv', got {fmt!r}")
    md = fmt == "markdown"
    marks = {m: _marks(rows, m, digits) if (md and bold_best) else {} for m in cols}
    header = ["method", *(_header(m) for m in cols)]
    body = [
        [str(r.get("method", "")), *(_cell(r, m, digits, marks[m].get(i, 0)) for m in cols)]
        for i, r in enumerate(rows)
    ]
    if md:
        lines = [
            "| " + " | ".join(header) + " |",
            "|" + "|".join([":---"] + ["---:"] * len(cols)) + "|",
        ]
        return "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body]) + "\n"
    widths = [max(len(x[j]) for x in [header, *body]) for j in range(len(header))]
    parts = _column_parts(widths, max_width)
    return "\n".join(_aligned([header, *body], widths, part) for part in parts)


def _column_parts(widths: list[int], max_width: int) -> list[list[int]]:
    """Column indices of each part: 0 (the method) and the metric columns that fit in
    ``max_width`` (two spaces between columns; at least one metric per part)."""
    if not max_width or sum(widths) + 2 * (len(widths) - 1) <= max_width:
        return [list(range(len(widths)))]
    parts: list[list[int]] = [[0]]
    used = widths[0]
    for j in range(1, len(widths)):
        if len(parts[-1]) > 1 and used + 2 + widths[j] > max_width:
            parts.append([0])
            used = widths[0]
        parts[-1].append(j)
        used += 2 + widths[j]
    return parts


def _aligned(lines: list[list[str]], widths: list[int], cols: list[int]) -> str:
    """The columns ``cols`` of the lines (header first), aligned, with a rule under the header."""

    def line(cells: list[str]) -> str:
        return "  ".join(cells[j].ljust(widths[j]) if j == 0 else cells[j].rjust(widths[j])
                         for j in cols)

    rule = "  ".join("-" * widths[j] for j in cols)
    return "\n".join([line(lines[0]), rule, *map(line, lines[1:])]) + "\n"


# ----------------------------------------------------------------------------- figures
def scatter_plots(
    scores: Mapping[str, ArrayLike],
    gold: ArrayLike,
    out_path: str | Path,
    title: str | None = None,
    ncols: int = 3,
) -> Path:
    """Gold (x) versus predicted quality (y), one subplot per method, saved as PNG.

    Like the paper's figure "Ground-truth versus predicted quality scores"; each
    subplot title gives the method's Pearson r.

    Args:
        scores: method name -> (N,) predicted quality.
        gold: (N,) gold quality.
        out_path: PNG file to write (parent folders are created).
        title: optional figure title.
        ncols: subplots per row.

    Returns:
        ``out_path`` as a Path.
    """
    preds, g = checked_scores(scores, gold)
    ncols = max(1, min(ncols, len(preds)))
    nrows = math.ceil(len(preds) / ncols)
    fig = new_figure(nrows, ncols, (4.0 * ncols, 3.6 * nrows))
    axes = fig.axes
    for ax, (name, p) in zip(axes, preds.items(), strict=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = pearson(p, g) if g.size >= 2 else math.nan
        ax.scatter(g, p, s=10, alpha=0.35, edgecolors="none")
        if log_axis_helps(p):
            ax.set_yscale("log")
        ax.set_title(f"{name}\nPearson r = {r:.3f}", fontsize=10)
        ax.set_xlabel("gold quality")
        ax.set_ylabel("predicted quality" + (" (log scale)" if log_axis_helps(p) else ""))
        ax.grid(alpha=0.3)
    for ax in axes[len(preds) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return save_png(fig, out_path)


def reliability_plot(
    scores: Mapping[str, ArrayLike],
    gold_binary: ArrayLike,
    out_path: str | Path,
    n_bins: int = 10,
) -> Path:
    """Calibration (reliability) curves with the diagonal and per-bin item counts.

    Top panel: mean predicted probability per equal-width bin versus the observed
    fraction of positives, one line per method, the legend giving its expected
    calibration error (:func:`.metrics.ece`). Bottom panel: items per bin.
    Methods whose scores are not probabilities in [0, 1] are skipped with a warning.

    Returns:
        ``out_path`` as a Path.

    Raises:
        ValueError: gold not binary, or no method has probability scores.
    """
    preds, g = checked_scores(scores, gold_binary)
    if not is_binary(g):
        raise ValueError("reliability_plot needs binary (0/1) gold labels")
    probs = {k: p for k, p in preds.items() if p.min() >= 0 and p.max() <= 1}
    for k in preds.keys() - probs.keys():
        warnings.warn(
            f"reliability_plot: method {k!r} skipped (scores not in [0, 1])", stacklevel=2
        )
    if not probs:
        raise ValueError("reliability_plot: no method has probability scores in [0, 1]")
    fig = new_figure(2, 1, (6.0, 6.5), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top, bottom = fig.axes
    top.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    width = (edges[1] - edges[0]) / (len(probs) + 1)
    for j, (name, p) in enumerate(probs.items()):
        mean_pred, frac_pos, counts = calibration_bins(p, g, n_bins)
        keep = counts > 0
        label = f"{name} (ECE = {ece(p, g, n_bins):.3f})"
        # hollow markers, each smaller than the last: coincident points stay visible
        (ln,) = top.plot(mean_pred[keep], frac_pos[keep], marker=MARKERS[j % len(MARKERS)],
                         ms=max(3.0, 10.0 - 1.5 * j), mfc="none", mew=1.5, label=label)
        bottom.bar(
            edges[:-1] + (j + 0.5) * width, counts, width=width, color=ln.get_color(), align="edge"
        )
    top.set(
        xlim=(-0.02, 1.02),
        ylim=(-0.02, 1.02),
        ylabel="fraction of positives",
        title="Reliability diagram",
    )
    top.grid(alpha=0.3)
    top.legend(fontsize=8, loc="upper left")
    bottom.set(xlabel="predicted probability", ylabel="items per bin")
    bottom.grid(alpha=0.3, axis="y")
    return save_png(fig, out_path)


# ----------------------------------------------------------------------------- report
def write_report(
    rows: Sequence[Mapping[str, Any]],
    scores: Mapping[str, ArrayLike],
    gold: ArrayLike,
    out_dir: str | Path,
    metrics: Sequence[str] | None = None,
    figures: bool = True,
    lines: Sequence[str] = (),
) -> dict[str, Path]:
    """Write ``results.md`` (``lines`` under its table: the mix that made ``combined``),
    ``results.csv`` and (with ``figures``) figures into ``out_dir``:
    for binary gold ``distributions.png`` and ``roc.png`` (:mod:`.plots`), and
    ``reliability.png`` when a method gives probabilities; otherwise ``scatter.png`` (log
    axis where it helps).

    Returns:
        Kind (``"markdown"``, ``"csv"``, ``"distributions"``, ``"roc"``, ``"reliability"``,
        ``"scatter"``) -> path written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cols = list(metrics) if metrics is not None else _infer_metrics(rows)
    notes = sorted({n for r in rows for n in r.get("notes", [])})
    md = ["# Quality-estimation results", "", format_table(rows, cols, fmt="markdown")]
    md.append(
        "Best value per column in **bold**, second best in _italics_; ↑ higher is better, ↓ lower is better."
    )
    if any(f"{m}_low" in r for r in rows for m in cols):
        unit = "sources" if any(r.get("ci_unit") == "source" for r in rows) else "items"
        md.append(f"Brackets: percentile bootstrap confidence interval over {unit}.")
    if lines:
        md += ["", *lines]
    if notes:
        md += ["", "Notes:", "", *(f"- {n}" for n in notes)]
    paths = {"markdown": out / "results.md", "csv": out / "results.csv"}
    write_atomic(paths["markdown"], "\n".join(md) + "\n")  # never through a planted link
    write_atomic(paths["csv"], format_table(rows, cols, fmt="csv"))
    if not figures:
        return paths
    g = np.asarray(gold, dtype=np.float64)
    if is_binary(g) and g.min() != g.max():  # a scatter against 0/1 shows nothing
        paths["distributions"] = distribution_plot(scores, g, out / "distributions.png")
        paths["roc"] = roc_plot(scores, g, out / "roc.png")
    else:
        paths["scatter"] = scatter_plots(scores, gold, out / "scatter.png")
    has_prob = any(np.min(s) >= 0 and np.max(s) <= 1 for s in map(np.asarray, scores.values()))
    if is_binary(g) and has_prob:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            paths["reliability"] = reliability_plot(scores, g, out / "reliability.png")
    return paths
