"""The bootstrap's resampling unit (items or sources), two-sided paired tests and Holm."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from sigmoid_head.evaluation.bootstrap import Clusters, bootstrap_ci, paired_bootstrap
from sigmoid_head.evaluation.metrics import pearson, roc_auc, spearman
from sigmoid_head.evaluation.pvalues import add_holm, describe_p, holm


def _duplicated(n_sources: int = 100, copies: int = 5, seed: int = 0):
    """Each source's (pred, gold) pair repeated ``copies`` times: no information beyond
    the ``n_sources`` distinct pairs."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=n_sources)
    p = g + rng.normal(size=n_sources)
    return p, g, np.repeat(p, copies), np.repeat(g, copies), np.repeat(np.arange(n_sources), copies)


def test_clusters_expand_to_every_item_of_each_drawn_source() -> None:
    c = Clusters(["b", "a", "b", "c", "a"])  # a: items 1, 4; b: 0, 2; c: 3
    assert c.n_groups == 3 and c.sizes.tolist() == [2, 2, 1]
    assert c.expand(np.array([0, 0, 2])).tolist() == [1, 4, 1, 4, 3]
    assert c.expand(np.array([1])).tolist() == [0, 2]


def test_duplicated_items_widen_the_interval_only_when_resampled_by_source() -> None:
    p, g, p_dup, g_dup, src = _duplicated()
    _, lo_item, hi_item = bootstrap_ci(pearson, p_dup, g_dup, n=1000)
    _, lo_src, hi_src = bootstrap_ci(pearson, p_dup, g_dup, n=1000, groups=src)
    # five copies of each source look like 5x the data to an item bootstrap: ~sqrt(5) too narrow
    assert hi_src - lo_src > 1.8 * (hi_item - lo_item)
    # by hand: drawing sources of the duplicated data is drawing the 100 distinct items
    # (the same random stream), and a metric of copies equals the metric of the originals
    np.testing.assert_allclose(
        bootstrap_ci(pearson, p_dup, g_dup, n=1000, groups=src), bootstrap_ci(pearson, p, g, n=1000),
        atol=1e-12,
    )


def test_sources_of_unequal_size_keep_the_batched_path_exact() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 6, size=60)  # 1 to 5 candidates per source
    src = np.repeat(np.arange(60), sizes)
    g = rng.normal(size=src.size)
    p = g + rng.normal(size=src.size)
    y = (g > 0).astype(float)
    for fn, gold in ((pearson, g), (spearman, g), (roc_auc, y)):
        fast = bootstrap_ci(fn, p, gold, n=200, seed=1, groups=src)
        slow = bootstrap_ci(lambda a, b, fn=fn: fn(a, b), p, gold, n=200, seed=1, groups=src)
        np.testing.assert_allclose(fast, slow, atol=1e-12)
    a = paired_bootstrap(pearson, p, rng.normal(size=src.size), g, n=200, groups=src)
    assert a["unit"] == "source" and a["n_boot"] == 200


def test_groups_must_match_the_items() -> None:
    with pytest.raises(ValueError, match="groups has 3 entries"):
        bootstrap_ci(pearson, [1.0, 2, 3, 4], [1.0, 3, 2, 4], groups=[0, 0, 1])


def test_two_sided_p_is_twice_the_smaller_one_sided_p_capped_at_one() -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=80)
    a, b = g + rng.normal(scale=1.0, size=80), g + rng.normal(scale=1.3, size=80)
    two = paired_bootstrap(pearson, a, b, g, n=500)
    a_better = paired_bootstrap(pearson, a, b, g, n=500, alternative="better")["p_value"]
    b_better = paired_bootstrap(pearson, b, a, g, n=500, alternative="better")["p_value"]
    assert two["alternative"] == "two-sided"
    assert two["p_value"] == pytest.approx(min(1.0, 2 * min(a_better, b_better)))
    assert (two["p_better"], two["p_worse"]) == (pytest.approx(a_better), pytest.approx(b_better))
    copy = paired_bootstrap(pearson, a, a.copy(), g, n=200)
    assert copy["p_value"] == 1.0 and copy["p_better"] == 1.0 and copy["p_worse"] == 1.0
    clearly = paired_bootstrap(pearson, g, b, g, n=200)  # A is the gold itself
    assert clearly["p_value"] == 0.0 and clearly["p_better"] == 0.0
    with pytest.raises(ValueError, match="alternative"):
        paired_bootstrap(pearson, a, b, g, n=10, alternative="less")


def test_holm_against_a_hand_computed_family() -> None:
    # sorted: 0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # 0.5 * 2 capped; monotone after it
    out = holm([0.02, math.nan, 0.04])  # NaN is not a test: m = 2
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert holm([]) == []


def test_add_holm_and_the_printed_p_state_sidedness_and_family() -> None:
    tests = {"x": {"p_value": 0.01, "alternative": "two-sided", "n_boot": 1000},
             "y": {"p_value": 0.0, "alternative": "two-sided", "n_boot": 1000}}
    add_holm(tests, "heads vs softmax@min")
    assert tests["x"]["p_holm"] == pytest.approx(0.01) and tests["y"]["p_holm"] == 0.0
    assert describe_p(tests["x"]) == ("p = 0.010 (two-sided), Holm p = 0.010 over 2: "
                                      "heads vs softmax@min")
    assert describe_p(tests["y"]).startswith("p < 0.001 (two-sided), Holm p < 0.001")
    assert describe_p({"p_value": 0.2, "alternative": "better"}) == "p = 0.200 (better)"
    assert describe_p(tests["x"], family=False) == "p = 0.010 (two-sided), Holm p = 0.010 over 2"
    assert describe_p(tests["x"], analytic=True) == describe_p(tests["x"])  # no p_normal: nothing added


def test_the_analytic_p_is_printed_holm_corrected_beside_the_bootstrap_one() -> None:
    tests = {"x": {"p_value": 0.0, "p_normal": 2e-6, "alternative": "two-sided", "n_boot": 200},
             "y": {"p_value": 0.3, "p_normal": 0.25, "alternative": "two-sided", "n_boot": 200}}
    add_holm(tests, "two heads vs softmax")
    assert tests["x"]["p_holm_normal"] == pytest.approx(4e-6)  # 2e-6 * 2
    assert describe_p(tests["x"], family=False, analytic=True) == (
        "p < 0.005 (two-sided), Holm p < 0.005 over 2; analytic Holm p = 4e-06")
    assert describe_p({"p_value": 0.3, "p_normal": 0.25, "alternative": "two-sided"},
                      analytic=True) == "p = 0.300 (two-sided); analytic p = 0.25"


def test_evaluate_resamples_the_sources_named_by_a_score_field(tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="needs the plots extra (matplotlib)")  # out_dir draws figures
    from sigmoid_head.evaluation.evaluate import evaluate_scores

    p, g, p_dup, g_dup, src = _duplicated(60, 4, seed=2)
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({"verse": f"v{s}", "sigmoid": float(x)}) + "\n"
                              for s, x in zip(src, p_dup, strict=True)))
    item, _ = evaluate_scores(scores, g_dup, metrics=["pearson"], n_boot=300)
    rows, _ = evaluate_scores(scores, g_dup, metrics=["pearson"], n_boot=300, groups="verse",
                              out_dir=tmp_path / "out")
    assert (item[0]["ci_unit"], rows[0]["ci_unit"]) == ("item", "source")
    width = rows[0]["pearson_high"] - rows[0]["pearson_low"]
    assert width > 1.5 * (item[0]["pearson_high"] - item[0]["pearson_low"])
    assert "interval over sources" in (tmp_path / "out" / "results.md").read_text()


@pytest.mark.parametrize("block_cells", [2**18, 200])
def test_indexed_roc_auc_equals_sorting_every_resample_to_the_last_bit(block_cells, monkeypatch) -> None:
    """Whether the resamples fit one block or go one or two rows at a time (200 cells)."""
    from sigmoid_head.evaluation import metric_inputs
    from sigmoid_head.evaluation.metrics import _roc_auc_indexed, _roc_auc_rows

    monkeypatch.setattr(metric_inputs, "ROW_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(5)
    for decimals in (0, 1, 3):  # heavy ties, some ties, hardly any
        n = 150
        p = np.round(rng.normal(size=n), decimals)
        g = (rng.random(n) < 0.3).astype(float)
        idx = rng.integers(0, n, size=(40, 170))  # rows longer than N, as drawn sources give
        idx[0] = np.flatnonzero(g)[0]  # one row with a single class: NaN in both
        np.testing.assert_array_equal(_roc_auc_indexed(p, g, idx), _roc_auc_rows(p[idx], g[idx]))
    src = rng.integers(0, 30, size=n)
    via_rows = bootstrap_ci(lambda a, b: roc_auc(a, b), p, g, n=300, groups=src)
    assert bootstrap_ci(roc_auc, p, g, n=300, groups=src) == via_rows


def test_the_analytic_p_agrees_with_the_bootstrap_p_and_resolves_below_one_in_n() -> None:
    """p_normal (delta over the bootstrap SE, normal) matches the bootstrap p on a moderate
    effect, keeps resolving where the bootstrap p hits 0, and follows the alternative."""
    from sigmoid_head.evaluation.pvalues import normal_p

    rng = np.random.default_rng(2)
    g = rng.normal(size=300)
    a, b = g + rng.normal(scale=1.0, size=300), g + rng.normal(scale=1.06, size=300)
    moderate = paired_bootstrap(pearson, a, b, g, n=4000, seed=3)
    assert 0.01 < moderate["p_value"] < 0.9
    assert moderate["p_normal"] == pytest.approx(moderate["p_value"], abs=0.03)
    assert moderate["se"] > 0
    strong = paired_bootstrap(pearson, g, b, g, n=200)
    assert strong["p_value"] == 0.0 and 0.0 < strong["p_normal"] < 1e-6
    assert normal_p(0.0, 0.0) == 1.0 and normal_p(0.1, 0.0) == 0.0
    assert normal_p(0.1, 0.05, alternative="better") == pytest.approx(0.02275, abs=1e-4)
    assert normal_p(0.1, 0.05, higher_is_better=False, alternative="better") == pytest.approx(
        0.97725, abs=1e-4)
    assert normal_p(-0.1, 0.05) == pytest.approx(0.0455, abs=1e-3)
    tests = {"m": dict(moderate), "s": dict(strong)}
    add_holm(tests, "two tests")
    assert tests["s"]["p_holm_normal"] == pytest.approx(2 * strong["p_normal"])
    assert tests["m"]["p_holm_normal"] == pytest.approx(min(1.0, moderate["p_normal"]))


def test_k_runs_of_a_are_averaged_on_every_resample() -> None:
    """pred_a of shape (K, N), e.g. K training seeds: one run equals the 1-D call exactly;
    the delta is the mean of the runs' deltas; the resampled deltas average the runs on the
    same draws, so the SE of two runs cannot exceed the larger single-run SE."""
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(60), 4)
    g = (rng.random(240) < 0.4).astype(float)
    base = g + rng.normal(scale=1.5, size=240)
    r1, r2 = g + rng.normal(scale=1.0, size=240), g + rng.normal(scale=1.2, size=240)
    one = paired_bootstrap(roc_auc, r1, base, g, n=300, groups=groups)
    assert paired_bootstrap(roc_auc, r1[None, :], base, g, n=300, groups=groups) == one
    both = paired_bootstrap(roc_auc, np.stack([r1, r2]), base, g, n=300, groups=groups)
    two = paired_bootstrap(roc_auc, r2, base, g, n=300, groups=groups)
    assert both["delta"] == pytest.approx((one["delta"] + two["delta"]) / 2, abs=1e-12)
    assert both["se"] <= max(one["se"], two["se"]) + 1e-12
    assert both["ci_low"] <= both["delta"] <= both["ci_high"]
    with pytest.raises(ValueError, match="no runs"):
        paired_bootstrap(roc_auc, np.empty((0, 240)), base, g)
    with pytest.raises(ValueError, match="same shape"):
        paired_bootstrap(roc_auc, np.stack([r1[:-1], r2[:-1]]), base, g)
    with pytest.raises(ValueError, match="1-D"):
        paired_bootstrap(roc_auc, np.zeros((2, 2, 240)), base, g)


def test_k_runs_of_b_are_averaged_and_can_pair_seeds() -> None:
    """pred_b of shape (K, N) too (issue 60's check: sparse seed k against dense seed k):
    one run equals the 1-D call; the delta is the mean of the per-seed deltas; each
    resample's delta is the mean of the per-seed deltas on that resample (so a copy of A as B
    gives zero on every resample)."""
    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(50), 4)
    g = (rng.random(200) < 0.4).astype(float)
    a = np.stack([g + rng.normal(scale=s, size=200) for s in (1.0, 1.3)])
    b = np.stack([g + rng.normal(scale=s, size=200) for s in (1.1, 0.9)])
    one = paired_bootstrap(roc_auc, a[0], b[0], g, n=200, groups=groups)
    assert paired_bootstrap(roc_auc, a[0], b[:1], g, n=200, groups=groups) == one
    both = paired_bootstrap(roc_auc, a, b, g, n=200, groups=groups)
    per_seed = [roc_auc(a[i], g) - roc_auc(b[i], g) for i in range(2)]
    assert both["delta"] == pytest.approx(np.mean(per_seed), abs=1e-12)
    assert both["ci_low"] <= both["delta"] <= both["ci_high"]
    same = paired_bootstrap(roc_auc, a, a.copy(), g, n=200, groups=groups)
    assert same["delta"] == 0.0 and same["ci_low"] == same["ci_high"] == 0.0 and same["p_value"] == 1.0
    with pytest.raises(ValueError, match="pred_b has no runs"):
        paired_bootstrap(roc_auc, a, np.empty((0, 200)), g)


@pytest.mark.parametrize("metric", [roc_auc, pearson])
@pytest.mark.parametrize("grouped", [False, True])
def test_resampled_values_read_back_equal_a_fresh_computation_and_follow_the_content(metric, grouped) -> None:
    """A prediction resampled before (a baseline tested against several methods, then given
    its own interval) is read back: the figures equal those of a fresh computation to the
    last bit, and an array edited in place in between is computed again, not read back."""
    from sigmoid_head.evaluation import bootstrap

    rng = np.random.default_rng(11)
    groups = np.repeat(np.arange(40), 3) if grouped else None
    g = (rng.random(120) < 0.4).astype(float)
    base, a, b = (g + rng.normal(scale=s, size=120) for s in (1.5, 1.0, 1.2))
    bootstrap._MEMO.clear()
    fresh = [paired_bootstrap(metric, x, base, g, n=200, groups=groups) for x in (a, b)]
    fresh_ci = bootstrap_ci(metric, base, g, n=200, groups=groups)
    assert len(bootstrap._MEMO) == 3  # base, a and b: base resampled once
    again = [paired_bootstrap(metric, x, base, g, n=200, groups=groups) for x in (a, b)]
    assert again == fresh and bootstrap_ci(metric, base, g, n=200, groups=groups) == fresh_ci
    base[:60] = base[60:]  # the same array object, other values
    edited = paired_bootstrap(metric, a, base, g, n=200, groups=groups)
    bootstrap._MEMO.clear()
    assert paired_bootstrap(metric, a, base, g, n=200, groups=groups) == edited != fresh[0]
    # another seed or number of resamples is another set of resamples
    assert paired_bootstrap(metric, a, base, g, n=200, seed=1, groups=groups) != edited
    assert paired_bootstrap(metric, a, base, g, n=150, groups=groups)["n_boot"] == 150


def test_the_resampled_values_kept_are_bounded_in_bytes(monkeypatch) -> None:
    """Older predictions leave once the kept values pass the byte bound; a call's own
    predictions stay, and a dropped one is computed again to the same figures."""
    from sigmoid_head.evaluation import bootstrap

    monkeypatch.setattr(bootstrap, "_MEMO_BYTES", 3 * 200 * 8)  # three predictions of 200
    bootstrap._MEMO.clear()
    rng = np.random.default_rng(3)
    g = rng.normal(size=80)
    preds = [g + rng.normal(size=80) for _ in range(5)]
    first = bootstrap_ci(pearson, preds[0], g, n=200)
    for p in preds[1:]:
        bootstrap_ci(pearson, p, g, n=200)
    assert sum(v.nbytes for v in bootstrap._MEMO.values()) <= 3 * 200 * 8 and len(bootstrap._MEMO) == 3
    assert bootstrap_ci(pearson, preds[0], g, n=200) == first  # dropped, computed again
    bootstrap._MEMO.clear()
