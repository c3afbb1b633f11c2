"""The bootstrap by multiplicities (clustered_ci with by_weight, WeightedWords) gives what
the bootstrap by drawn indices gave: the same draws, the same values (issue 51)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sigmoid_head.evaluation.bootstrap import Clusters, clustered_ci
from sigmoid_head.evaluation.span_metrics import (
    WeightedWords,
    span_scores,
    weighted_span_scores,
    word_metrics,
)


def _items(rng: np.random.Generator, n_items: int) -> tuple[list, list, np.ndarray]:
    """Per item: word scores (rounded, so that ties occur), gold BAD tags; the sources."""
    sizes = rng.integers(0, 12, size=n_items)  # an item may have no word
    scores = [np.round(rng.random(k), int(rng.integers(1, 4))) for k in sizes]
    bad = [(rng.random(k) < rng.uniform(0.05, 0.6)).astype(float) for k in sizes]
    groups = rng.integers(0, max(1, n_items // 3), size=n_items)
    return scores, bad, groups


def _old(scores: list, bad: list, threshold: float):
    """The statistic as it was: concatenate the drawn items' words, then word_metrics."""

    def stat(idx: np.ndarray) -> dict[str, float]:
        s = np.concatenate([scores[i] for i in idx]) if idx.size else np.zeros(0)
        b = np.concatenate([bad[i] for i in idx]) if idx.size else np.zeros(0)
        return word_metrics(s, b, threshold)

    return stat


@pytest.mark.parametrize("seed", range(12))
def test_weighted_words_equal_the_concatenated_resample(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores, bad, groups = _items(rng, int(rng.integers(1, 60)))
    words = WeightedWords(scores, bad, threshold=0.5)
    clusters = Clusters(groups)
    for _ in range(20):
        drawn = rng.integers(0, clusters.n_groups, size=clusters.n_groups)
        old = _old(scores, bad, 0.5)(clusters.expand(drawn))
        new = words.metrics(clusters.multiplicity(drawn))
        assert old.keys() == new.keys()
        for k in old:  # integer counts: equal to the last bit
            assert np.isnan(new[k]) if np.isnan(old[k]) else new[k] == old[k], k


@pytest.mark.parametrize("seed", range(4))
def test_the_intervals_are_the_old_ones(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    scores, bad, groups = _items(rng, 80)
    words = WeightedWords(scores, bad, threshold=0.4)
    old = clustered_ci(_old(scores, bad, 0.4), groups, n_boot=200, seed=seed)
    new = clustered_ci(words.metrics, groups, n_boot=200, seed=seed, by_weight=True)
    assert old.keys() == new.keys()
    for k in old:
        np.testing.assert_array_equal(np.asarray(new[k]), np.asarray(old[k]))


@pytest.mark.parametrize("seed", range(4))
def test_span_counts_by_weight_equal_the_summed_rows(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    counts = rng.integers(0, 9, size=(50, 7)).astype(float)
    counts[:, 3] = counts[:, 3] * rng.random(50)  # MPP credits are fractions
    counts[:, 5] = counts[:, 5] * rng.random(50)
    groups = rng.integers(0, 15, size=50)
    old = clustered_ci(lambda idx: span_scores(counts[idx]), groups, n_boot=100, seed=seed)
    new = clustered_ci(
        lambda w: weighted_span_scores(counts, w), groups, n_boot=100, seed=seed, by_weight=True
    )
    for k in old:  # sums taken in another order: equal up to float rounding
        np.testing.assert_allclose(np.asarray(new[k]), np.asarray(old[k]), rtol=1e-12, atol=0)


def test_an_empty_resample_and_one_class_are_undefined_as_before() -> None:
    words = WeightedWords(
        [np.array([0.2, 0.9]), np.array([0.1])],
        [np.array([1.0, 1.0]), np.array([0.0])],
        threshold=0.5,
    )
    one_class = words.metrics(np.array([2, 0]))
    assert np.isnan(one_class["roc_auc"]) and one_class["ap"] == 1.0
    none = words.metrics(np.array([0, 0]))
    assert none["mcc"] == 0.0 and none["f1_bad"] == 0.0
    assert np.isnan(none["roc_auc"]) and np.isnan(none["ap"])
    assert none.keys() == word_metrics(np.zeros(0), np.zeros(0), 0.5).keys()


@pytest.mark.parametrize("seed", range(10))
def test_weighted_kendall_is_kendall_of_the_drawn_items(seed: int) -> None:
    from sigmoid_head.evaluation.metrics import kendall
    from sigmoid_head.evaluation.weighted_kendall import WeightedKendall

    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(2, 300))
    x = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # ties in x, in y, in both
    y = np.round(x * rng.uniform(-1, 1) + rng.normal(size=n), int(rng.integers(0, 2)))
    tau = WeightedKendall(x, y)
    assert tau(np.ones(n, dtype=int)) == kendall(x, y)
    for _ in range(30):
        idx = rng.integers(0, n, size=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a constant resample: NaN, as before
            old = kendall(x[idx], y[idx])
        new = tau(np.bincount(idx, minlength=n))
        assert (np.isnan(new) and np.isnan(old)) or new == old


@pytest.mark.parametrize("metric", ["ap", "roc_auc"])
@pytest.mark.parametrize("seed", range(4))
def test_average_precision_on_resamples_is_the_sorting_path(seed: int, metric: str) -> None:
    # item resamples gather (indexed path), source resamples weight items (weighted path):
    # both equal the metric called once per expanded resample, to the last bit
    from sigmoid_head.evaluation.bootstrap import bootstrap_ci, paired_bootstrap
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.evaluation.span_metrics import average_precision

    registered = average_precision if metric == "ap" else roc_auc

    rng = np.random.default_rng(400 + seed)
    n = 120
    a, b = np.round(rng.random(n), 2), np.round(rng.random(n), 1)  # ties
    gold = (rng.random(n) < 0.3).astype(float)
    groups = rng.integers(0, 30, size=n)

    def unregistered(p: np.ndarray, g: np.ndarray) -> float:  # called once per resample
        if registered is roc_auc and not 0 < g.sum() < g.size:
            return float("nan")
        return registered(p, g)

    for kw in ({}, {"groups": groups}):
        fast = paired_bootstrap(registered, a, b, gold, n=200, seed=seed, **kw)
        slow = paired_bootstrap(unregistered, a, b, gold, n=200, seed=seed, **kw)
        assert fast == slow
        assert bootstrap_ci(registered, a, gold, n=200, seed=seed, **kw) == bootstrap_ci(
            unregistered, a, gold, n=200, seed=seed, **kw
        )


@pytest.mark.parametrize("seed", range(3))
def test_word_mcc_on_weighted_source_resamples_is_the_expanding_path(seed: int) -> None:
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.span_metrics import mcc

    rng = np.random.default_rng(600 + seed)
    n = 400
    gold = (rng.random(n) < 0.25).astype(float)
    a = ((rng.random(n) < 0.3) | (gold * (rng.random(n) < 0.5) > 0)).astype(float)
    b = (rng.random(n) < 0.3).astype(float)
    groups = rng.integers(0, 40, size=n)

    def unregistered(p: np.ndarray, g: np.ndarray) -> float:
        return mcc(p, g)

    fast = paired_bootstrap(mcc, a, b, gold, n=300, seed=seed, groups=groups)
    assert fast == paired_bootstrap(unregistered, a, b, gold, n=300, seed=seed, groups=groups)
    assert fast["delta"] > 0 and fast["p_value"] < 0.05  # a finds the BAD items, b guesses


def test_source_counts_give_the_weighted_mcc_to_the_last_bit() -> None:
    """Word MCC from per-source confusion counts (one (B, G) x (G, 4) product) equals the
    item-weighted path bit for bit, one-class and empty resamples included."""
    from sigmoid_head.evaluation.bootstrap import Clusters, _source_weights, _weights
    from sigmoid_head.evaluation.span_metrics import _mcc_grouped, _mcc_weighted

    rng = np.random.default_rng(11)
    for trial in range(12):
        n = int(rng.integers(1, 1500))
        groups = rng.integers(0, int(rng.integers(1, 200)), n)
        p = (rng.random(n) < rng.uniform(0.0, 1.0)).astype(float)
        g = (rng.random(n) < rng.uniform(0.0, 1.0)).astype(float)
        clusters = Clusters(groups)
        values_of = _mcc_grouped(p, g, clusters.codes)
        for wg, w in zip(_source_weights(60, trial, clusters), _weights(60, trial, clusters), strict=True):
            assert np.array_equal(values_of(wg), _mcc_weighted(p, g, w))


@pytest.mark.parametrize("row_cells", [2**18, 3000])
def test_source_counts_give_the_weighted_roc_auc_to_the_last_bit(row_cells, monkeypatch) -> None:
    """ROC-AUC from the sources' multiplicities (a quadratic form of the Mann-Whitney counts
    between sources, built in blocks) equals the count over the expanded words, bit for bit,
    with tied values, one-class resamples and every block size (of the pair counts, and of
    the weighted count's rows: 3,000 cells are one to a few rows here)."""
    from sigmoid_head.evaluation import auc_counts as metrics
    from sigmoid_head.evaluation import metric_inputs
    from sigmoid_head.evaluation.bootstrap import Clusters, _source_weights, _weights

    monkeypatch.setattr(metric_inputs, "ROW_BLOCK_CELLS", row_cells)

    rng = np.random.default_rng(7)
    for trial in range(12):
        n = int(rng.integers(5, 1500))
        groups = rng.integers(0, int(rng.integers(1, 200)), n)
        p = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # many ties
        g = (rng.random(n) < rng.uniform(0.02, 0.98)).astype(float)
        clusters = Clusters(groups)
        for cells in (37, metrics._PAIR_CELLS):
            metrics._PAIR_CELLS, before = cells, metrics._PAIR_CELLS
            try:
                values_of = metrics._roc_auc_grouped(p, g, clusters.codes)
            finally:
                metrics._PAIR_CELLS = before
            for wg, w in zip(_source_weights(60, trial, clusters), _weights(60, trial, clusters), strict=True):
                assert np.array_equal(values_of(wg), metrics._roc_auc_weighted(p, g, w), equal_nan=True)


@pytest.mark.parametrize("block_cells", [2**18, 3000])
def test_average_precision_of_many_resamples_at_once_keeps_every_bit(block_cells, monkeypatch) -> None:
    """The weighted AP of all rows at once equals the one-row count, bit for bit, whether
    the rows fit one block or are split into several (a block of 3,000 cells: one to a few
    rows of these sizes)."""
    from sigmoid_head.evaluation import metric_inputs, span_metrics

    monkeypatch.setattr(metric_inputs, "ROW_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(3, 2000))
        p = np.round(rng.normal(size=n), int(rng.integers(0, 3)))
        g = (rng.random(n) < rng.uniform(0, 1)).astype(float)
        w = rng.integers(0, 4, size=(int(rng.integers(1, 30)), n)).astype(float)
        codes = np.unique(-p, return_inverse=True)[1].ravel()
        v = int(codes.max()) + 1
        rows = [span_metrics._ap_counts(np.bincount(codes, weights=w[b] * g, minlength=v),
                                        np.bincount(codes, weights=w[b], minlength=v), float(w[b] @ g))
                for b in range(w.shape[0])]
        assert np.array_equal(span_metrics._ap_weighted(p, g, w), np.array(rows), equal_nan=True)


def test_clustered_ci_draws_the_resamples_of_the_paired_tests() -> None:
    """clustered_ci's resamples are those of bootstrap_ci and paired_bootstrap (same groups,
    count and seed), in the same order: a table may take one metric's interval from either."""
    from sigmoid_head.evaluation.resampling import _weights

    groups = np.repeat(np.arange(37), np.random.default_rng(2).integers(1, 5, size=37))
    clusters = Clusters(groups)
    seen: list[np.ndarray] = []

    def record(w: np.ndarray) -> dict[str, float]:
        seen.append(np.array(w))
        return {"n": float(w.sum())}

    for n_boot in (1, 250):
        seen.clear()
        clustered_ci(record, groups, n_boot, seed=5, by_weight=True)
        expected = np.concatenate(list(_weights(n_boot, 5, clusters)))
        assert np.array_equal(np.stack(seen[1:]), expected)  # seen[0]: the point, all ones


def test_the_row_blocks_benchmark_runs_and_checks_its_values(capsys) -> None:
    """benchmarks/row_blocks.py (the figures of docs/performance.md), on the small Bible
    word table: both ways give the same values, and it prints its table."""
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "row_blocks.py"
    main = runpy.run_path(str(script))["main"]
    main(["--table", "llm_words_test", "--resamples", "20", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "identical values both ways" in out and out.rstrip().splitlines()[-1].startswith("ROC-AUC ")
