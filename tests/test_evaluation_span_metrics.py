"""Word and span metrics against scikit-learn, and the source-clustered bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, matthews_corrcoef, roc_auc_score

from sigmoid_head.evaluation.bootstrap import clustered_ci
from sigmoid_head.evaluation.span_metrics import (
    average_precision,
    f1_bad,
    mcc,
    mpp_counts,
    span_counts,
    span_scores,
    word_metrics,
)


@pytest.mark.parametrize("seed", range(8))
def test_word_metrics_match_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    score = np.round(rng.random(n), int(rng.integers(1, 4)))  # rounding makes ties
    bad = (rng.random(n) < rng.uniform(0.05, 0.6)).astype(int)
    bad[0], bad[1] = 0, 1
    out = word_metrics(score, bad, threshold=0.5)
    pred = score < 0.5
    assert out["mcc"] == pytest.approx(matthews_corrcoef(bad, pred), abs=1e-9)
    assert out["f1_bad"] == pytest.approx(f1_score(bad, pred), abs=1e-9)
    assert out["ap"] == pytest.approx(average_precision_score(bad, -score), abs=1e-9)
    assert out["roc_auc"] == pytest.approx(roc_auc_score(bad, -score), abs=1e-9)


def test_degenerate_word_metrics_are_defined() -> None:
    assert mcc([0, 0, 0], [0, 1, 0]) == 0.0 == matthews_corrcoef([0, 1, 0], [0, 0, 0])
    assert f1_bad([0, 0], [0, 0]) == 0.0
    assert np.isnan(average_precision([0.1, 0.2], [0, 0]))
    assert np.isnan(word_metrics([0.1, 0.2], [1, 1], 0.5)["roc_auc"])


def test_mpp_pairs_spans_one_to_one_with_partial_credit() -> None:
    text = "aaaa bbbb cccc"
    # one predicted span over two gold spans: it pairs with the larger overlap only
    pred = [(0, 9)]
    gold = [(0, 4), (5, 7)]
    cp, n_p, cr, n_g = mpp_counts(pred, gold, text)
    assert (cp, n_p) == (4 / 8, 1)  # 8 non-space characters predicted, 4 of them paired
    assert (cr, n_g) == (1.0, 2)  # the second gold span is left unpaired
    assert mpp_counts([], gold, text).tolist() == [0, 0, 0, 2]
    w = {"major": 5.0}
    cp, n_p, cr, n_g = mpp_counts([{"start": 0, "end": 4, "severity": "major"}],
                                  [{"start": 0, "end": 2, "severity": "major"}], text, w)
    assert (cp, n_p, cr, n_g) == (5 * 2 / 4, 5, 5.0, 5)


def test_char_counts_ignore_whitespace_and_sum_over_texts() -> None:
    texts = ["ab cd", "xyz"]
    c = span_counts([[(0, 5)], []], [[(3, 5)], [(0, 1)]], texts)
    assert c[:, :3].tolist() == [[2, 4, 2], [0, 0, 1]]
    s = span_scores(c)
    assert (s["char_p"], s["char_r"]) == (0.5, 2 / 3)


def test_clustered_bootstrap_draws_whole_sources() -> None:
    groups = ["a"] * 9 + ["b"]
    res = clustered_ci(lambda idx: {"n": float(idx.size)}, groups, n_boot=200)
    assert res["n"][0] == 10
    sizes = set()
    for seed in range(5):
        lo_hi = clustered_ci(lambda idx: {"n": float(idx.size)}, groups, n_boot=50, seed=seed)["n"]
        sizes |= {lo_hi[1], lo_hi[2]}
    assert sizes <= {2.0, 10.0, 18.0}  # two draws of whole sources, never single items
    one = clustered_ci(lambda idx: {"n": float(idx.size)}, list("abcdefghij"), n_boot=50)
    assert one["n"][1:] == (10.0, 10.0)


def test_clustered_interval_is_wider_when_sources_are_correlated() -> None:
    rng = np.random.default_rng(0)
    src = np.repeat(np.arange(20), 10)
    x = rng.normal(size=20)[src] + 0.1 * rng.normal(size=200)  # items of a source agree

    def mean(idx):
        return {"m": float(x[idx].mean())}

    by_source = clustered_ci(mean, src, n_boot=300)["m"]
    by_item = clustered_ci(mean, np.arange(200), n_boot=300)["m"]
    assert by_source[2] - by_source[1] > 2 * (by_item[2] - by_item[1])


def _perfect_rows(items):
    """Score records whose word scores are 0 on gold BAD words and 1 elsewhere."""
    from sigmoid_head.evaluation.gold_formats import whitespace_words

    rows = []
    for it in items:
        words = [{"word": it.text[s:e], "start": s, "end": e, "sigmoid": 1.0 - float(b)}
                 for (s, e), b in zip(whitespace_words(it.text), it.word_bad, strict=True)]
        rows.append({"candidate": it.text, "words": words})
    return rows


@pytest.mark.parametrize("reader", ["wmt-tags", "gold_wmt"])
def test_perfect_prediction_on_word_tags_scores_partial_credit_one(reader: str) -> None:
    """Issue 38: each BAD word was its own gold span while predictions merge runs of BAD
    words, so a perfect prediction scored MPP F1 below 1 on WMT tags (0.578 on the file
    the issue used). Gold runs of BAD words now count as one span, as predicted runs do."""
    from pathlib import Path

    from sigmoid_head.evaluation.gold_eval import evaluate_gold
    from sigmoid_head.evaluation.gold_formats import read_wmt_tags
    from sigmoid_head.evaluation.gold_wmt import read_wmt_word_level

    d = Path(__file__).parent / "data" / "human_qe" / "mlqe_roen"
    if reader == "wmt-tags":  # MLQE-PE test20: MT tags with gaps interleaved
        items = read_wmt_tags(d / "test20.tags", d / "test20.mt")
    else:  # WMT 2021 long layout
        items = read_wmt_word_level(d / "test21.tok.mt", d / "task2_wordlevel_mt.tags")
    assert sum(sum(it.word_bad) for it in items) > 0
    res = evaluate_gold(_perfect_rows(items), items, methods=["sigmoid"], n_boot=1)
    m = res["methods"]["sigmoid"]
    assert m["mcc"][0] == pytest.approx(1.0)
    assert m["char_f1"][0] == pytest.approx(1.0)
    assert m["mpp_f1"][0] == pytest.approx(1.0)


def test_merge_touching_joins_spans_separated_only_by_whitespace() -> None:
    from sigmoid_head.evaluation.span_metrics import merge_touching

    text = "a bb  cc, x d"
    spans = [{"start": 2, "end": 4}, {"start": 6, "end": 9}, {"start": 12, "end": 13}]
    assert [(s["start"], s["end"]) for s in merge_touching(spans, text)] == [(2, 9), (12, 13)]
    assert merge_touching([], text) == []
