"""Metrics checked against scipy / scikit-learn and against known answers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from sigmoid_head.evaluation.bootstrap import bootstrap_ci, paired_bootstrap
from sigmoid_head.evaluation.metrics import (
    METRICS,
    bce,
    calibration_bins,
    ece,
    evaluate_methods,
    kendall,
    pearson,
    prr,
    roc_auc,
    spearman,
)
from sigmoid_head.evaluation.word_metrics import tags_to_binary, word_bce, word_f1

stats = pytest.importorskip("scipy.stats")
skm = pytest.importorskip("sklearn.metrics")

SEEDS = range(6)


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random (pred, gold); odd seeds use coarse integer values, so many ties."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    if seed % 2:
        return rng.integers(0, 6, n).astype(float), rng.integers(0, 4, n).astype(float)
    gold = rng.normal(size=n)
    return gold + rng.normal(scale=1.5, size=n), gold


# ----------------------------------------------------------------------------- vs references
@pytest.mark.parametrize("seed", SEEDS)
def test_correlations_match_scipy(seed: int) -> None:
    p, g = _data(seed)
    assert pearson(p, g) == pytest.approx(stats.pearsonr(p, g)[0], abs=1e-10)
    assert spearman(p, g) == pytest.approx(stats.spearmanr(p, g)[0], abs=1e-10)
    assert kendall(p, g) == pytest.approx(stats.kendalltau(p, g)[0], abs=1e-10)


def test_kendall_large_with_ties_and_odd_sizes() -> None:
    rng = np.random.default_rng(42)
    for n in (2, 3, 7, 1000, 3001):
        p = rng.integers(0, 50, n).astype(float)
        g = p + rng.integers(0, 20, n)
        assert kendall(p, g) == pytest.approx(stats.kendalltau(p, g)[0], abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_binary_metrics_match_sklearn(seed: int) -> None:
    p, g = _data(seed)
    y = (g > np.median(g)).astype(float)
    assert roc_auc(p, y) == pytest.approx(skm.roc_auc_score(y, p), abs=1e-10)
    prob = 1.0 / (1.0 + np.exp(-p))
    prob[:3] = [0.0, 1.0, 1e-9]  # exercise clipping
    expected = skm.log_loss(y, np.clip(prob, 1e-7, 1 - 1e-7), labels=[0, 1])
    assert bce(prob, y) == pytest.approx(expected, abs=1e-10)


def test_ece_matches_direct_definition() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p**2).astype(float)
    total = 0.0
    for b in range(10):
        m = (p >= b / 10) & ((p < (b + 1) / 10) | (b == 9))
        if m.any():
            total += m.mean() * abs(p[m].mean() - y[m].mean())
    assert ece(p, y, 10) == pytest.approx(total, abs=1e-12)
    _, _, counts = calibration_bins(p, y, 10)
    assert counts.sum() == 500
    assert ece(np.full(4, 0.5), [0, 1, 0, 1]) == pytest.approx(0.0)


# ----------------------------------------------------------------------------- PRR
def _prr_reference(pred: np.ndarray, gold: np.ndarray, max_rejection: float = 1.0) -> float:
    """Literal definition: mean gold of the kept items at each rejected count, no ties."""
    n = len(pred)
    k = int(max_rejection * n)
    by_pred, by_gold = gold[np.argsort(-pred)], np.sort(gold)[::-1]
    curve = [by_pred[: n - j].mean() for j in range(k)]
    oracle = [by_gold[: n - j].mean() for j in range(k)]
    return (np.mean(curve) - gold.mean()) / (np.mean(oracle) - gold.mean())


def test_prr_known_cases() -> None:
    rng = np.random.default_rng(0)
    g = rng.uniform(size=300)
    assert prr(g, g) == pytest.approx(1.0)
    assert prr(2 * g + 5, g) == pytest.approx(1.0)  # only the order of pred matters
    assert prr(-g, g) < -0.9
    assert prr(np.ones_like(g), g) == pytest.approx(0.0, abs=1e-12)  # all tied = random
    big = rng.normal(size=20000)
    assert abs(prr(rng.normal(size=20000), big)) < 0.05


@pytest.mark.parametrize("max_rejection", [1.0, 0.5, 0.25])
def test_prr_matches_reference_and_is_affine_invariant(max_rejection: float) -> None:
    rng = np.random.default_rng(7)
    g = rng.uniform(size=101)
    p = g + rng.normal(scale=0.3, size=101)
    expected = _prr_reference(p, g, max_rejection)
    assert prr(p, g, max_rejection) == pytest.approx(expected, abs=1e-12)
    assert prr(p, 3 * g - 1, max_rejection) == pytest.approx(expected, abs=1e-12)


def test_prr_random_baseline_equals_mean_of_shuffles() -> None:
    """The exact random AUC (mean gold) agrees with lm-polygraph's shuffle estimate."""
    rng = np.random.default_rng(1)
    g = rng.uniform(size=60)
    p = g + rng.normal(scale=0.5, size=60)
    aucs = []
    for _ in range(3000):
        kept = g[rng.permutation(60)]
        aucs.append(np.mean(np.cumsum(kept) / np.arange(1, 61)))
    by_pred, by_gold = g[np.argsort(-p)], np.sort(g)[::-1]
    a_pred = np.mean(np.cumsum(by_pred) / np.arange(1, 61))
    a_orc = np.mean(np.cumsum(by_gold) / np.arange(1, 61))
    mc = (a_pred - np.mean(aucs)) / (a_orc - np.mean(aucs))
    assert prr(p, g) == pytest.approx(mc, abs=0.02)


def test_prr_constant_gold_is_nan() -> None:
    with pytest.warns(UserWarning, match="constant"):
        assert math.isnan(prr([1, 2, 3], [1, 1, 1]))


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_deterministic_and_contains_point() -> None:
    p, g = _data(0)
    a = bootstrap_ci(pearson, p, g, n=300, seed=5)
    assert a == bootstrap_ci(pearson, p, g, n=300, seed=5)
    assert a != bootstrap_ci(pearson, p, g, n=300, seed=6)
    point, lo, hi = a
    assert point == pearson(p, g)
    assert lo < point < hi


def test_bootstrap_batched_path_equals_loop_path() -> None:
    p, g = _data(2)
    for fn in (pearson, spearman):
        fast = bootstrap_ci(fn, p, g, n=200, seed=1)
        slow = bootstrap_ci(lambda a, b, fn=fn: fn(a, b), p, g, n=200, seed=1)
        np.testing.assert_allclose(fast, slow, atol=1e-12)


def test_bootstrap_wider_with_fewer_items() -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=2000)
    p = g + rng.normal(size=2000)
    _, lo_big, hi_big = bootstrap_ci(pearson, p, g, n=500)
    _, lo_small, hi_small = bootstrap_ci(pearson, p[:50], g[:50], n=500)
    assert hi_small - lo_small > 2 * (hi_big - lo_big)
    _, lo, hi = bootstrap_ci(kendall, p[:200], g[:200], n=200)
    assert lo < kendall(p[:200], g[:200]) < hi
    _, lo, hi = bootstrap_ci(prr, p[:200], g[:200], n=200)
    assert lo < prr(p[:200], g[:200]) < hi


def test_paired_bootstrap() -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=300)
    good, bad = g + rng.normal(scale=0.5, size=300), g + rng.normal(scale=3.0, size=300)
    res = paired_bootstrap(pearson, good, bad, g, n=500, alternative="better")
    assert set(res) == {"delta", "p_value", "ci_low", "ci_high", "win_rate", "alternative",
                        "p_better", "p_worse", "n_boot", "unit", "se", "p_normal"}
    assert res["delta"] > 0 and res["p_value"] < 0.05 and res["win_rate"] > 0.95
    assert res["ci_low"] > 0 and res["unit"] == "item"
    reverse = paired_bootstrap(pearson, bad, good, g, n=500, alternative="better")
    assert reverse["p_value"] > 0.95
    assert paired_bootstrap(pearson, bad, good, g, n=500)["p_value"] < 0.05  # two-sided
    copy = paired_bootstrap(pearson, good, good.copy(), g, n=500)
    assert copy["delta"] == 0 and copy["p_value"] == 1.0 and copy["win_rate"] == 0.0
    assert copy["se"] == 0 and copy["p_normal"] == 1.0
    assert paired_bootstrap(pearson, good, bad, g, n=200, seed=3) == paired_bootstrap(
        pearson, good, bad, g, n=200, seed=3
    )


def test_paired_bootstrap_lower_is_better() -> None:
    rng = np.random.default_rng(1)
    q = rng.uniform(size=400)
    y = (rng.uniform(size=400) < q).astype(float)
    calibrated, overconfident = q, np.where(q > 0.5, 0.999, 0.001)
    res = paired_bootstrap(bce, calibrated, overconfident, y, n=500, higher_is_better=False)
    assert res["delta"] < 0 and res["p_value"] < 0.05


# ----------------------------------------------------------------------------- word level
def test_word_f1_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    tags_int = (rng.uniform(size=400) < 0.7).astype(int)
    prob = np.clip(0.5 * tags_int + rng.uniform(size=400) * 0.6, 0, 1)
    tags_str = ["OK" if t else "BAD" for t in tags_int]
    pred = (prob >= 0.5).astype(int)
    f1_ok = skm.f1_score(tags_int, pred, pos_label=1)
    f1_bad = skm.f1_score(tags_int, pred, pos_label=0)
    for tags in (tags_int, tags_str, list(tags_int.astype(bool))):
        res = word_f1(prob, tags)
        assert res["f1_ok"] == pytest.approx(f1_ok, abs=1e-12)
        assert res["f1_bad"] == pytest.approx(f1_bad, abs=1e-12)
        assert res["f1_mult"] == pytest.approx(f1_ok * f1_bad, abs=1e-12)
    res = word_f1(prob, tags_int, threshold=0.8)
    assert res["f1_ok"] == pytest.approx(skm.f1_score(tags_int, (prob >= 0.8).astype(int)))
    expected = skm.log_loss(tags_int, np.clip(prob, 1e-7, 1 - 1e-7))
    assert word_bce(prob, tags_str) == pytest.approx(expected, abs=1e-10)


def test_word_level_nested_sentences() -> None:
    probs = [[0.9, 0.2], [0.7, 0.6, 0.1]]
    tags = [["OK", "BAD"], ["ok", "OK", "BAD"]]
    assert tags_to_binary(tags).tolist() == [1, 0, 1, 1, 0]
    assert word_f1(probs, tags)["f1_mult"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown word tag"):
        tags_to_binary(["OK", "GOOD"])
    with pytest.raises(ValueError, match="unknown word tag"):
        tags_to_binary([1, 2])
    with pytest.raises(ValueError, match="tags"):
        word_f1([0.5, 0.5], ["OK"])


# ----------------------------------------------------------------------------- validation
def test_input_validation() -> None:
    with pytest.raises(ValueError, match="same shape"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="NaN or inf"):
        spearman([1, np.nan, 3], [1, 2, 3])
    with pytest.raises(ValueError, match="1-D"):
        kendall(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="binary"):
        bce([0.2, 0.3], [0.5, 1.0])
    with pytest.raises(ValueError, match="probabilities"):
        bce([0.2, 1.3], [0, 1])
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([0.2, 0.3], [1, 1])
    with pytest.raises(ValueError, match="at least"):
        pearson([1.0], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci(pearson, [1, 2, 3], [1, 2, 3], alpha=1.5)


def test_constant_predictions_give_nan_with_warning() -> None:
    for fn in (pearson, spearman, kendall):
        with pytest.warns(UserWarning, match="constant"):
            assert math.isnan(fn([1, 1, 1, 1], [1, 2, 3, 4]))
    with pytest.warns(UserWarning, match="'flat'"):
        rows = evaluate_methods({"flat": np.full(50, 0.5)}, np.arange(50.0), n_boot=50)
    assert math.isnan(rows[0]["pearson"]) and math.isnan(rows[0]["pearson_low"])
    assert rows[0]["prr"] == pytest.approx(0.0)


# ----------------------------------------------------------------------------- evaluate_methods
def test_registry() -> None:
    for name in ("pearson", "spearman", "kendall", "bce", "roc_auc", "prr"):
        fn, higher, binary = METRICS[name]
        assert callable(fn)
    assert METRICS["bce"].higher_is_better is False and METRICS["bce"].needs_binary_gold
    assert METRICS["pearson"].higher_is_better and not METRICS["pearson"].needs_binary_gold


def test_evaluate_methods_rows() -> None:
    rng = np.random.default_rng(0)
    q = rng.uniform(size=200)
    y = (rng.uniform(size=200) < q).astype(float)
    scores = {
        "good": q,
        "noisy": np.clip(q + rng.normal(scale=0.4, size=200), 0, 1),
        "logp": np.log(q),
    }
    rows = evaluate_methods(scores, y, n_boot=100)
    assert [r["method"] for r in rows] == ["good", "noisy", "logp"]
    good = rows[0]
    assert good["pearson"] == pytest.approx(pearson(q, y))
    assert good["bce_low"] <= good["bce"] <= good["bce_high"]
    assert "bce" not in rows[2] and any("'logp'" in n for n in rows[2]["notes"])
    assert "roc_auc" in rows[2]
    no_ci = evaluate_methods(scores, y, metrics=["pearson", "bce"], ci=False)
    assert set(no_ci[0]) == {"method", "n", "notes", "pearson", "bce"}


def test_evaluate_methods_skips_binary_metrics_for_real_gold() -> None:
    rng = np.random.default_rng(0)
    g = rng.uniform(size=100)
    rows = evaluate_methods({"a": g + rng.normal(size=100)}, g, n_boot=50)  # default: no warning
    assert "bce" not in rows[0] and "roc_auc" not in rows[0] and "pearson" in rows[0]
    assert rows[0]["notes"] == []
    with pytest.warns(UserWarning, match="gold is not binary"):
        rows = evaluate_methods({"a": g}, g, metrics=["pearson", "roc_auc"], n_boot=50)
    assert "roc_auc" not in rows[0] and rows[0]["notes"] == ["roc_auc skipped: gold is not binary"]


def test_evaluate_methods_errors() -> None:
    g = np.arange(10.0)
    with pytest.raises(ValueError, match="'broken'"):
        evaluate_methods({"ok": g, "broken": np.r_[g[:9], np.inf]}, g)
    with pytest.raises(ValueError, match="'short'"):
        evaluate_methods({"short": g[:5]}, g)
    with pytest.raises(ValueError, match="unknown metrics"):
        evaluate_methods({"a": g}, g, metrics=["bleu"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate_methods({"a": g}, g, metrics=["pearson"], n_boot=20)
