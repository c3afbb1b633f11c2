"""Tables and figures of the report module."""

from __future__ import annotations

import csv
import io
import sys

import numpy as np
import pytest

from sigmoid_head.evaluation.metrics import evaluate_methods
from sigmoid_head.evaluation.report import (
    format_table,
    reliability_plot,
    scatter_plots,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

ROWS = [
    {"method": "softmax", "n": 100, "notes": [], "pearson": 0.20, "bce": 9.1},
    {"method": "boostedprob", "n": 100, "notes": [], "pearson": 0.35, "bce": 1.9},
    {"method": "sigmoid", "n": 100, "notes": [], "pearson": 0.50, "bce": 0.4},
    {"method": "kiwi", "n": 100, "notes": [], "pearson": 0.41, "bce": 2.5},
]


def _md_cells(table: str) -> dict[str, list[str]]:
    lines = table.strip().splitlines()[2:]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return {c[0]: c[1:] for c in cells}


def test_markdown_bolds_best_respecting_direction() -> None:
    table = format_table(ROWS, ["pearson", "bce"], fmt="markdown")
    assert table.splitlines()[0] == "| method | pearson ↑ | bce ↓ |"
    cells = _md_cells(table)
    assert cells["sigmoid"] == ["**0.500**", "**0.400**"]
    assert cells["kiwi"][0] == "_0.410_"  # second-highest pearson
    assert cells["boostedprob"][1] == "_1.900_"  # second-lowest bce
    assert cells["softmax"] == ["0.200", "9.100"]
    assert table.count("**") == 4 and table.count("_0.") + table.count("_1.") == 2


def test_markdown_ties_and_no_marks() -> None:
    rows = [{"method": m, "pearson": v} for m, v in [("a", 0.3), ("b", 0.3), ("c", 0.1)]]
    cells = _md_cells(format_table(rows, ["pearson"], fmt="markdown"))
    assert cells["a"] == ["**0.300**"] and cells["b"] == ["**0.300**"] and cells["c"] == ["_0.100_"]
    plain = format_table(rows, ["pearson"], fmt="markdown", bold_best=False)
    assert "**" not in plain and "_0" not in plain


def test_ci_cells_and_missing_values() -> None:
    rows = [
        {"method": "a", "pearson": 0.41234, "pearson_low": 0.37, "pearson_high": 0.45},
        {"method": "b", "pearson": 0.2, "pearson_low": 0.1, "pearson_high": 0.3},
    ]
    table = format_table(rows, ["pearson", "bce"], fmt="markdown")
    cells = _md_cells(table)
    assert cells["a"] == ["**0.412** [0.370, 0.450]", "–"]
    assert cells["b"][0] == "0.200 [0.100, 0.300]"


def test_terminal_is_aligned() -> None:
    text = format_table(ROWS, ["pearson", "bce"])
    lines = text.splitlines()
    assert len(lines) == 2 + len(ROWS)
    assert len({len(ln) for ln in lines}) == 1
    assert "bce ↓" in lines[0] and "**" not in text


def test_csv_parses_back() -> None:
    rows = evaluate_methods(
        {"x": np.arange(30.0) ** 2, "y": np.sin(np.arange(30.0))}, np.arange(30.0), n_boot=50
    )
    text = format_table(rows, ["pearson", "prr"], fmt="csv")
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert [r["method"] for r in parsed] == ["x", "y"]
    for row, back in zip(rows, parsed, strict=True):
        assert float(back["pearson"]) == row["pearson"]
        assert float(back["pearson_ci_low"]) == row["pearson_low"]
        assert float(back["prr_ci_high"]) == row["prr_high"]
        assert int(back["n"]) == 30
    assert parsed[0]["notes"] == ""


def test_bad_format() -> None:
    with pytest.raises(ValueError, match="fmt"):
        format_table(ROWS, ["pearson"], fmt="html")


# ----------------------------------------------------------------------------- figures
def _scores(n: int = 200) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    q = rng.uniform(size=n)
    y = (rng.uniform(size=n) < q).astype(float)
    scores = {
        "softmax": np.clip(q * 0.4 + rng.normal(scale=0.3, size=n), 0, 1),
        "sigmoid": np.clip(q + rng.normal(scale=0.1, size=n), 0, 1),
        "logprob": np.log(q + 1e-3),
    }
    return scores, q, y


def _assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000


def test_scatter_and_reliability_pngs(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    scores, q, y = _scores()
    out = scatter_plots(scores, q, tmp_path / "sub" / "scatter.png", title="test", ncols=2)
    _assert_png(out)
    with pytest.warns(UserWarning, match="'logprob'"):
        out = reliability_plot(scores, y, tmp_path / "rel.png", n_bins=8)
    _assert_png(out)
    with pytest.raises(ValueError, match="binary"):
        reliability_plot(scores, q, tmp_path / "x.png")
    with pytest.raises(ValueError, match="'bad'"):
        scatter_plots({"bad": np.full(200, np.nan)}, q, tmp_path / "y.png")


def test_write_report(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    scores, q, y = _scores()
    rows = evaluate_methods(scores, y, n_boot=50)
    paths = write_report(rows, scores, y, tmp_path / "bin")
    assert set(paths) == {"markdown", "csv", "distributions", "roc", "reliability"}
    md = paths["markdown"].read_text(encoding="utf-8")
    assert "| method |" in md and "bce ↓" in md and "'logprob'" in md
    assert paths["csv"].read_text(encoding="utf-8").startswith("method,n,")
    for key in ("distributions", "roc", "reliability"):
        _assert_png(paths[key])
    rows = evaluate_methods(scores, q, n_boot=50)
    paths = write_report(rows, scores, q, tmp_path / "real", metrics=["pearson", "kendall"])
    assert set(paths) == {"markdown", "csv", "scatter"}
    assert "kendall ↑" in paths["markdown"].read_text(encoding="utf-8")


def test_missing_matplotlib_message(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    scores, q, _ = _scores(20)
    with pytest.raises(ImportError, match=r"sigmoid-head\[plots\]"):
        scatter_plots(scores, q, tmp_path / "s.png")
