"""recipes/human_qe analyses of issue 49: the feature combination, error-free labels and the
WMT 2022 submission reader (synthetic inputs; the committed-data tables are checked by
``tables.py --check``)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "human_qe"


def _load(name: str):
    return importlib.import_module(f"recipes.human_qe.{name}")


def _rows(n: int, seed: int):
    """Texts of 6 words; BAD words are the ones the head scores low, the softmax is noise."""
    from sigmoid_head.evaluation.gold_formats import GoldItem

    rng = np.random.default_rng(seed)
    rows, items = [], []
    for k in range(n):
        words = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
        text = " ".join(words)
        bad = rng.random(6) < 0.3
        offs, pos = [], 0
        for w in words:
            offs.append((pos, pos + len(w)))
            pos += len(w) + 1
        head = np.where(bad, rng.uniform(0.01, 0.3, 6), rng.uniform(0.5, 1.0, 6))
        soft = rng.uniform(0.01, 1.0, 6)
        rows.append(
            {
                "candidate": text,
                "softmax_mean_log": -1.0,
                "entropy_mean": 2.0,
                "dominant_mean": 3.0,
                "sigmoid_mean_log": float(np.log(head).mean()),
                "words": [
                    {
                        "word": w,
                        "start": s,
                        "end": e,
                        "softmax": soft[i],
                        "boostedprob": soft[i],
                        "rauq": soft[i],
                        "sigmoid": head[i],
                    }
                    for i, (w, (s, e)) in enumerate(zip(words, offs, strict=True))
                ],
            }
        )
        items.append(GoldItem(text, [], f"src{k}", "s", [int(b) for b in bad]))
    return rows, items


def test_word_combination_uses_the_head_when_it_carries_the_signal() -> None:
    from sklearn.metrics import average_precision_score

    fc = _load("feature_combination")
    (dr, di), (tr, ti) = _rows(200, 0), _rows(200, 1)
    ap = {}
    for head in (False, True):
        x, y, g = fc.word_data(dr, di, head)
        assert x.shape == (1200, 16 if head else 12) and g.shape == y.shape
        model, c, oof = fc.fit_word(x, y, g)
        assert c in fc.C_GRID and oof.shape == y.shape
        tx, ty, _ = fc.word_data(tr, ti, head)
        ap[head] = average_precision_score(ty, model.predict_proba(tx)[:, 1])
    assert ap[True] > 0.9 and ap[False] < 0.5


def test_segment_features_take_logs_of_minima() -> None:
    fc = _load("feature_combination")
    row = {k: 0.5 for k in fc.SEQ_BASE + fc.SEQ_HEAD}
    row.update(entropy_mean=1.0, dominant_mean=2.0, n_tokens=9)
    x = fc.segment_features([row], head=True)
    keys = list(fc.SEQ_BASE + fc.SEQ_HEAD)
    assert x.shape == (1, len(keys) + 3)
    assert x[0, keys.index("softmax_min")] == pytest.approx(np.log(0.5))
    assert x[0, keys.index("softmax_mean_log")] == 0.5 and x[0, -1] == pytest.approx(np.log(10))


def test_error_free_needs_a_zero_score_and_no_span() -> None:
    ef = _load("error_free")
    gold = [
        {"mqm": 0.0, "spans": []},
        {"mqm": -1.0, "spans": []},
        {"mqm": 0.0, "spans": [{"start": 0, "end": 1}]},
        {"mqm": -0.0, "spans": []},
    ]
    assert ef.labels(gold).tolist() == [1.0, 0.0, 0.0, 1.0]


def test_wmt22_submission_reader(tmp_path: Path) -> None:
    b = _load("build_wmt22")
    lines = [
        "123",
        "456",
        "1",
        "km-en\tm\tMT\t0\t0\tA\tOK",
        "km-en\tm\tMT\t0\t1\tb\tBAD",
        "km-en\tm\tMT\t1\t0\tc\tOK",
    ]
    method, tags = b.parse_predictions("\n".join(lines).encode(), [2, 1], "f")
    assert method == "m" and tags == [["OK", "BAD"], ["OK"]]
    with pytest.raises(ValueError, match="no predicted tag"):
        b.parse_predictions("\n".join(lines[:-1]).encode(), [2, 1], "f")
    with pytest.raises(ValueError, match="outside the gold"):
        b.parse_predictions("\n".join(lines).encode(), [2], "f")
    assert b.team_name("x/km-en/Team papago  - 6 submission/predictions.txt") == "Team papago"


def test_wmt22_block_marks_missing_rows() -> None:
    w = _load("wmt22_rows")
    board = {
        "pairs": {
            "km-en": {
                "submissions": {
                    "A": {"method": "a", "mcc": 0.4, "published_mcc": 0.4},
                    "OrganizersBaselines": {"method": "kiwi", "mcc": 0.3, "published_mcc": 0.3},
                }
            }
        }
    }
    text = w.block(board)
    assert "| km-en | A (a) | 0.4000 | 0.4000 | best team |" in text
    assert "baseline" in text and "not scored yet" in text


@pytest.mark.parametrize(("dev", "chosen", "changes", "on_test"), [
    ({"labelled_roen_mix2": 0.30}, "--reference-weight 2", True, "0.5"),  # above every weight-1 seed
    ({"labelled_roen_mix2": 0.215}, "--reference-weight 2", False, "0.5"),  # above seed 0, within the seeds
    ({}, "--reference-weight 1 (the default until issue 58)", False, "2"),
])
def test_reference_weight_chosen_on_seed_0_and_default_kept_within_the_seeds(tmp_path, monkeypatch, dev, chosen,
                                                                             changes, on_test) -> None:
    from recipes.human_qe import committed, dev_choices

    monkeypatch.setattr(committed, "RESULTS", tmp_path)
    heads = [v for vs in (*dev_choices.SETTINGS.values(), *dev_choices.WEIGHTS.values()) for v in vs if v]
    for v in heads:
        (tmp_path / dev_choices.SET / "heads" / v).mkdir(parents=True)
    base = {"labelled_roen_mix1": 0.20, "labelled_roen_mix1_s1": 0.22, "labelled_roen_mix1_s2": 0.18,
            "labelled_roen_mix05": 0.19, "labelled_roen_mix2": 0.10, **dev}
    monkeypatch.setattr(dev_choices, "variant_mcc",
                        lambda v: {"dev_mcc": base.get(v, 0.1), "test_mcc": 0.5 - base.get(v, 0.1)})
    w = dev_choices.results()["reference_weight"]
    assert (w["chosen_on_dev"], w["default_changes"]) == (chosen, changes)
    assert w["chosen_on_test"] == f"--reference-weight {on_test}"  # test MCC here falls as dev MCC rises
    text = dev_choices.block(dev_choices.results())
    assert f"Chosen on dev (seed 0): {chosen};" in text
    assert ("The library's default changes" in text) == changes
    shutil.rmtree(tmp_path / dev_choices.SET / "heads" / "labelled_roen_mix2")
    assert "reference_weight" not in dev_choices.results()  # a weight not scored: no choice made


def test_the_optimizer_check_heads_stay_out_of_the_variant_tables():
    """The heads of issue 60's optimizer check are read by their own analysis only: the
    variant tables (and their whole-table Holm family) list none of them."""
    from recipes.human_qe import sparse_check, tables

    assert set(sparse_check.SPARSE) <= tables.OWN_ANALYSIS and set(sparse_check.DEFERRED) <= tables.OWN_ANALYSIS
    block = tables.DOC.read_text().split("#### mlqe-roen-word: head variants", 1)[1].split("#### ", 1)[0]
    assert "labelled_roen_s1" in block and not any(h in block for h in tables.OWN_ANALYSIS)
