"""The combined score: its formula, the fit of its baseline and weight on dev data, its
saved file, and the per-command defaults."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sigmoid_head.evaluation.combination import (
    COMBINATION_NAME,
    DEFAULTS,
    Combination,
    fit_combination,
    for_command,
)


def _rows(n: int = 60, seed: int = 0) -> list[dict]:
    """Score records with independent random parts (as ``score`` writes them)."""
    rng = np.random.default_rng(seed)
    return [{"sigmoid_mean_log": float(-rng.gamma(2, 0.3)), "softmax_min": float(rng.uniform(1e-4, 1)),
             "softmax_mean_log": float(-rng.gamma(2, 0.3)), "boostedprob_mean_log": float(-rng.gamma(2, 0.2)),
             "entropy_mean": float(rng.gamma(2, 0.5))} for _ in range(n)]


def test_apply_is_the_weighted_sum_of_log_confidences() -> None:
    row = {"sigmoid_mean_log": -0.2, "softmax_min": 0.05, "entropy_mean": 1.5}
    Combination(0.7, "softmax_min").apply([row])
    assert row["combined_log"] == pytest.approx(0.7 * -0.2 + 0.3 * math.log(0.05))
    assert row["combined"] == pytest.approx(math.exp(row["combined_log"]))
    row2 = dict(row)
    Combination(0.0, "neg_entropy").apply([row2])
    assert row2["combined_log"] == pytest.approx(-1.5)
    Combination(0.25, "neg_entropy").apply([row2])
    assert row2["combined_log"] == pytest.approx(0.25 * -0.2 + 0.75 * -1.5)


def test_describe_names_both_parts_by_their_row_names_in_log_space() -> None:
    comb = Combination(0.1, "softmax_mean_log")
    text = comb.describe()
    assert text == "0.1 x sigmoid_mean_log + 0.9 x softmax_mean_log (log space)"
    row = {"sigmoid_mean_log": -0.3, "softmax_mean_log": -0.5}
    comb.apply([row])  # the text is the formula: the row names it quotes are what it reads
    assert row["combined_log"] == pytest.approx(0.1 * row["sigmoid_mean_log"] + 0.9 * row["softmax_mean_log"])
    assert "geo-mean" not in Combination(0.7, "softmax_min").describe()


def test_apply_skips_rows_without_both_parts() -> None:
    head_only = {"sigmoid_mean_log": -0.2}  # a --sigmoid-only record
    Combination(0.7, "softmax_min").apply([head_only])
    assert "combined" not in head_only


def test_underflowed_minimum_stays_finite() -> None:
    row = {"sigmoid_mean_log": -0.2, "softmax_min": 0.0}
    Combination(0.5, "softmax_min").apply([row])
    assert math.isfinite(row["combined_log"])


@pytest.mark.parametrize("bad", [dict(weight=1.5, baseline="softmax_min"), dict(weight=0.5, baseline="nope")])
def test_invalid_combination(bad) -> None:
    with pytest.raises(ValueError):
        Combination(**bad)


def test_fit_finds_the_part_that_carries_the_quality() -> None:
    rows = _rows()
    head = np.array([r["sigmoid_mean_log"] for r in rows])
    ent = np.array([-r["entropy_mean"] for r in rows])
    comb, info = fit_combination(rows, head)  # quality = the head alone
    assert comb.weight == 1.0 and info["metric"] == "pearson"
    comb, _ = fit_combination(rows, ent)  # quality = minus the entropy alone
    assert (comb.baseline, comb.weight) == ("neg_entropy", 0.0)
    comb, info = fit_combination(rows, 0.4 * head + 0.6 * ent)  # an exact mix
    assert comb.baseline == "neg_entropy" and comb.weight == pytest.approx(0.4)
    assert info["per_baseline"]["neg_entropy"]["value"] == pytest.approx(1.0)


def test_fit_uses_roc_auc_for_labels() -> None:
    rows = _rows()
    head = np.array([r["sigmoid_mean_log"] for r in rows])
    labels = (head > np.median(head)).astype(float)
    comb, info = fit_combination(rows, labels)
    assert info["metric"] == "roc_auc" and comb.weight > 0.5  # mostly the head
    assert info["per_baseline"][comb.baseline]["value"] == 1.0
    assert all(r["head_alone"] == 1.0 and r["baseline_alone"] < 0.8 for r in info["per_baseline"].values())


@pytest.mark.parametrize("gold, message", [([1.0, 2.0], "scored items"), ([1.0] * 60, "two different")])
def test_fit_rejects_bad_gold(gold, message) -> None:
    with pytest.raises(ValueError, match=message):
        fit_combination(_rows(), gold)


def test_saved_combination_overrides_the_default(tmp_path) -> None:
    assert for_command("score", tmp_path) is DEFAULTS["score"]
    assert for_command("generate", None) is DEFAULTS["generate"]
    saved = Combination(0.35, "boostedprob_mean_log", "test")
    saved.save(tmp_path)
    assert for_command("score", tmp_path) == saved == for_command("generate", tmp_path)
    (tmp_path / COMBINATION_NAME).write_text(json.dumps({"weight": 3, "baseline": "softmax_min"}))
    with pytest.raises(ValueError, match=COMBINATION_NAME):
        Combination.load(tmp_path)
