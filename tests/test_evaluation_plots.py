"""Per-label distributions and ROC curves (evaluation/plots.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sigmoid_head.evaluation.metrics import roc_auc
from sigmoid_head.evaluation.plots import distribution_plot, log_axis_helps, roc_curve, roc_plot


def test_roc_curve_area_equals_roc_auc_with_ties() -> None:
    rng = np.random.default_rng(0)
    g = (rng.random(300) < 0.4).astype(float)
    s = np.round(rng.normal(size=300) + g, 1)  # many ties
    fpr, tpr = roc_curve(s, g)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    assert area == pytest.approx(roc_auc(s, g), abs=1e-12)


def test_log_axis_only_for_positive_scores_spanning_decades() -> None:
    assert log_axis_helps(np.geomspace(1e-12, 1e-2, 50))
    assert not log_axis_helps(np.linspace(0.2, 0.9, 50))
    assert not log_axis_helps(np.array([-3.0, -1.0, 2.0]))


def test_pngs(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    g = np.r_[np.ones(100), np.zeros(200)]
    scores = {"sigmoid": np.exp(-rng.gamma(2, 6, 300) - 8 * (1 - g)),
              "-entropy_mean": -rng.gamma(2, 1, 300) + g}
    for fn, name in ((distribution_plot, "d.png"), (roc_plot, "r.png")):
        out = fn(scores, g, tmp_path / name)
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    with pytest.raises(ValueError, match="binary"):
        distribution_plot(scores, np.linspace(0, 1, 300), tmp_path / "x.png")


def _drawn(monkeypatch, fn, *args):
    """The figure ``fn`` draws (saved as usual), for reading its axes."""
    from sigmoid_head.evaluation import plots

    seen = []
    real = plots.save_png
    monkeypatch.setattr(plots, "save_png", lambda fig, path: seen.append(fig) or real(fig, path))
    fn(*args)
    return seen[0]


def test_distributions_count_every_item_on_a_log_axis(tmp_path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(2)
    g = np.r_[np.ones(40), np.zeros(60)]
    scores = {"sigmoid": np.exp(-rng.gamma(2, 6, 100) - 8 * (1 - g)),
              "geomean": rng.uniform(0.3, 0.9, 100)}
    fig = _drawn(monkeypatch, distribution_plot, scores, g, tmp_path / "d.png")
    log_ax, lin_ax = fig.axes[:2]
    assert (log_ax.get_xscale(), lin_ax.get_xscale()) == ("log", "linear")
    for ax in (log_ax, lin_ax):
        heights = [sum(p.get_height() for p in c) for c in ax.containers]
        assert heights == [40, 60]  # good, then bad: every item in a bar
        assert f"ROC-AUC {roc_auc(scores['sigmoid'], g):.3f}" in log_ax.get_title()


def test_calibration_plot_one_panel_per_method(tmp_path, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    from sigmoid_head.evaluation.metrics import ece
    from sigmoid_head.evaluation.plots import calibration_plot

    rng = np.random.default_rng(3)
    g = (rng.random(200) < 0.3).astype(float)
    raw = np.clip(0.01 * rng.random(200) + 0.02 * g, 0, 1)
    fixed = np.clip(0.3 + 0.4 * g + 0.1 * rng.normal(size=200), 0, 1)
    variants = {"sigmoid": {"raw": raw, "platt": fixed}, "softmax": {"raw": raw}}
    fig = _drawn(monkeypatch, calibration_plot, variants, g, tmp_path / "c.png")
    assert [ax.get_title() for ax in fig.axes] == ["sigmoid", "softmax"]
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["perfect", f"raw (ECE {ece(raw, g):.3f})", f"platt (ECE {ece(fixed, g):.3f})"]
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="probabilities"):
        calibration_plot({"x": {"logprob": -raw}}, g, tmp_path / "x.png")
