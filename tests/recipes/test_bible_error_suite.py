"""The MQM-style Eval Other suite: each error kind is what it says, at the place it records."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from recipes.bible import error_suite as es

REFS = [
    "And God said, Let there be light: and there was light.",
    "The two men went up into the temple to pray; the one a Pharisee, and the other a publican.",
    "Jesus wept.",
    "For I am not ashamed of the gospel of Christ, for it is the power of God unto salvation.",
    "And he took the seven loaves and the fishes, and gave thanks, and brake them, and gave to his disciples.",
]


def _core(w):
    return re.sub(r"^\W+|\W+$", "", w).lower()


@pytest.fixture(scope="module")
def suite():
    items = [{"source": f"src {i}", "refs": [r, r.upper()]} for i, r in enumerate(REFS)]
    return items, es.make_suite(items, seed=3)


def test_every_kind_is_what_it_says(suite):
    items, cands = suite
    kinds = Counter(c["kind"] for c in cands)
    assert kinds["reference"] == 2 * len(REFS)
    assert set(kinds) - {"reference"} == set(es.KINDS)  # every kind applies somewhere
    for c in cands:
        if c["label"] == 1:
            continue
        ref, new = items[c["item"]]["refs"][0].split(), c["candidate"].split()
        assert new != ref and c["mqm"] == es.KINDS[c["kind"]]
        assert c["bad_words"] and all(0 <= i < len(new) for i in c["bad_words"])
        start, end = c["span"]
        bad = c["bad_words"]
        assert c["candidate"][start:end].split() == new[min(bad): max(bad) + 1]
        k = c["kind"]
        if k == "spelling":
            (i,) = bad
            assert len(new) == len(ref) and sorted(new[i]) == sorted(ref[i]) and new[i] != ref[i]
            assert [w for j, w in enumerate(new) if j != i] == [w for j, w in enumerate(ref) if j != i]
        elif k == "omission":
            assert 1 <= len(ref) - len(new) <= 3 and bad == [bad[0], bad[0] + 1]
            gap = len(ref) - len(new)
            assert new[: bad[1]] == ref[: bad[1]] and new[bad[1]:] == ref[bad[1] + gap:]
        elif k == "addition":
            assert 2 <= len(new) - len(ref) <= 4 and len(bad) == len(new) - len(ref)
            assert new[: bad[0]] + new[bad[-1] + 1:] == ref
        elif k == "repetition":
            n = len(new) - len(ref)
            assert n in (1, 2) and [_core(w) for w in new[bad[0] - n: bad[0]]] == [_core(w) for w in new[bad[0]: bad[0] + n]]
        elif k == "word order":
            assert sorted(map(_core, new)) == sorted(map(_core, ref)) and bad == [bad[0], bad[0] + 1]
        elif k == "polarity":
            assert abs(sum(_core(w) == "not" for w in new) - sum(_core(w) == "not" for w in ref)) == 1
        elif k in ("mistranslation", "number"):
            (i,) = bad
            assert len(new) == len(ref) and _core(new[i]) != _core(ref[i])
            if k == "number":
                assert _core(new[i]) in es.NUMBERS or _core(new[i]).isdigit()
        elif k == "next verse":
            assert bad == list(range(len(new)))


def test_deterministic_under_seed(suite):
    items, cands = suite
    assert es.make_suite(items, seed=3) == cands
    assert es.make_suite(items, seed=4) != cands


def test_pairwise_accuracy_counts_own_pairs_and_ties():
    cands = [{"item": 0, "kind": "reference"}, {"item": 0, "kind": "reference"}, {"item": 0, "kind": "spelling"},
             {"item": 1, "kind": "reference"}, {"item": 1, "kind": "spelling"}]
    # item 0: first reference 0.9 beats 0.2 (the second reference, 0.1, is not its pair); item 1: tie
    assert es.pairwise_accuracy([0.9, 0.1, 0.2, 0.5, 0.5], cands, "spelling") == pytest.approx(0.75)
    assert np.isnan(es.pairwise_accuracy([0.9, 0.1, 0.2, 0.5, 0.5], cands, "omission"))


def test_eval_other_suite_runs_on_a_tiny_model(tmp_path, tiny_seq2seq_path, perturbed_model):
    from recipes.bible import eval_other_suite

    model = perturbed_model(tiny_seq2seq_path)
    model.save_pretrained(tmp_path / "heads" / "h")
    data = tmp_path / "data"
    data.mkdir()
    verses = [{"id": i, "es": f"el perro come el pan {i}", "kjv": r, "web": r} for i, r in enumerate(REFS)]
    (data / "test.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verses))
    args = eval_other_suite.parser().parse_args([
        "--setting", "mt", "--model", str(tiny_seq2seq_path), "--data", str(data), "--heads", str(tmp_path / "heads"),
        "--seed", "3", "--boot", "50", "--out", str(tmp_path / "out")])
    report = eval_other_suite.run(args)
    assert report["counts"]["reference"] == 2 * len(REFS)
    auc = report["roc_auc"]["sigmoid:h@mean"]["all"][0]
    assert 0.0 <= auc <= 1.0
    assert set(report["pairwise"]["softmax@mean"]) == set(report["counts"]) - {"reference"}
    w = report["word_level"]
    assert w["words"] > 0 and 0 < w["bad_words"] < w["words"]
    md = (tmp_path / "out" / "suite.md").read_text()
    assert md.startswith("# Eval Other by error kind") and "| MCC | F1-BAD | ROC-AUC | AP |" in md
    for m, row in report["word_metrics"].items():  # the same words, the same ROC-AUC
        assert row["roc_auc"][0] == pytest.approx(report["word_auc"][m]["all"][0], abs=1e-12)
        assert row["ap"][1] <= row["ap"][0] <= row["ap"][2]


def test_word_level_metrics_match_sklearn_and_resample_verses():
    from sklearn.metrics import average_precision_score, matthews_corrcoef

    from recipes.bible import eval_other_suite

    rng = np.random.default_rng(0)
    owner = np.repeat(np.arange(30), 8)  # 30 candidates of 8 words
    cands = [{"item": i // 3} for i in range(30)]  # 3 candidates per source verse
    bad = (rng.random(owner.size) < 0.2).astype(float)
    logs = {"softmax": np.log(np.clip(0.7 - 0.5 * bad + 0.3 * rng.random(owner.size), 1e-6, 1)),
            "neg_entropy": rng.random(owner.size)}
    out = eval_other_suite.word_level_metrics(logs, bad, owner, cands, threshold=0.5, n_boot=100)
    assert set(out) == {"softmax"}
    p = np.exp(logs["softmax"])
    assert out["softmax"]["mcc"][0] == pytest.approx(matthews_corrcoef(bad, p < 0.5), abs=1e-9)
    assert out["softmax"]["ap"][0] == pytest.approx(average_precision_score(bad, -p), abs=1e-9)
    one = eval_other_suite.word_level_metrics(logs, bad, owner, [{"item": 0}] * 30, 0.5, 20)
    assert one["softmax"]["mcc"][1] == one["softmax"]["mcc"][2]  # one verse: nothing to resample


def test_compare_other_chooses_on_dev(tmp_path):
    """The head and baseline are those best on dev, even where test would pick others."""
    from recipes.bible import compare_other

    rng = np.random.default_rng(0)
    cands = [{"label": int(i % 3 == 0), "kind": "reference" if i % 3 == 0 else ("spelling", "omission")[i % 3 - 1],
              "item": i // 3} for i in range(300)]
    y = np.array([c["label"] for c in cands], dtype=float)

    def write(folder, good_head, good_base):
        folder.mkdir()
        s = {"sigmoid:a@mean": y + rng.normal(0, 0.3 if good_head == "a" else 3, y.size),
             "sigmoid:b@mean": y + rng.normal(0, 0.3 if good_head == "b" else 3, y.size),
             "softmax@mean": y + rng.normal(0, 0.3 if good_base == "softmax" else 3, y.size),
             "boostedprob@prod": y + rng.normal(0, 0.3 if good_base == "boostedprob" else 3, y.size),
             "length": y}
        np.savez(folder / "sequence_scores.npz", **s)
        (folder / "candidates.json").write_text(json.dumps(cands))
        return s

    write(tmp_path / "dev", "a", "softmax")
    test = write(tmp_path / "test", "b", "boostedprob")
    r = compare_other.compare(tmp_path / "dev", tmp_path / "test", n_boot=100)
    assert (r["head"], r["baseline"]) == ("sigmoid:a@mean", "softmax@mean")
    assert set(r["kinds"]) == {"all", "spelling", "omission"}
    from sigmoid_head.evaluation.metrics import roc_auc
    assert r["kinds"]["all"]["delta"] == pytest.approx(roc_auc(test["sigmoid:a@mean"], y) - roc_auc(test["softmax@mean"], y))
    assert r["kinds"]["spelling"]["n"] == 200
    assert {v["family_size"] for v in r["kinds"].values()} == {3}  # Holm over the table's rows
    assert all(v["unit"] == "source" and v["alternative"] == "two-sided" for v in r["kinds"].values())
    assert "(two-sided), Holm p" in compare_other.markdown(r) and "Holm family:" in compare_other.markdown(r)
