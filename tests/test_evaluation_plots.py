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
