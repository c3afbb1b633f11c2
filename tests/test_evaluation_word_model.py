"""The learned word-level error detector (evaluation/word_model.py, ``calibrate --word-model``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.evaluation.word_model import (
    WordModel,
    average_precision,
    best_mcc,
    fit_word_model,
    row_features,
    word_errors,
    word_methods,
)


def _rows(n: int, seed: int = 0) -> tuple[list[dict], list[list[tuple[int, int]]]]:
    """Rows of 6-9 words; a word is an error when the head's and the softmax's scores
    together say so (neither alone), and the BAD-looking ``noise`` column is noise."""
    rng = np.random.default_rng(seed)
    rows, spans = [], []
    for i in range(n):
        k = 6 + i % 4
        words, text, pos, errs = [], [], 0, []
        a, b, c = rng.normal(size=(3, k))
        for j in range(k):
            w = f"w{j}x"
            bad = a[j] + b[j] < -0.8
            words.append({"word": w, "start": pos, "end": pos + len(w),
                          "sigmoid": float(1 / (1 + np.exp(-a[j] - 1))),
                          "softmax": float(1 / (1 + np.exp(-b[j] - 1))), "noise": float(1 / (1 + np.exp(-c[j])))})
            if bad:
                errs.append((pos, pos + len(w)))
            text.append(w)
            pos += len(w) + 1
        rows.append({"id": str(i), "source": f"s{i // 2}", "candidate": " ".join(text), "words": words,
                     "sigmoid_mean_log": float(np.log(np.mean([w["sigmoid"] for w in words]))),
                     "softmax_mean_log": float(np.log(np.mean([w["softmax"] for w in words]))),
                     "entropy_mean": float(rng.uniform(1, 3))})
        spans.append(errs)
    return rows, spans


def test_features_follow_the_rows_own_words_and_neighbours() -> None:
    rows, spans = _rows(4)
    assert word_methods(rows) == ["noise", "sigmoid", "softmax"]
    r = rows[0]
    x = row_features(r, ["word:softmax", "left:softmax", "right:softmax", "row:entropy_mean", "length",
                         "no_alnum", "position", "log_words"])
    own = np.log([w["softmax"] for w in r["words"]])
    np.testing.assert_allclose(x[:, 0], own)
    np.testing.assert_allclose(x[1:, 1], own[:-1])
    np.testing.assert_allclose(x[:-1, 2], own[1:])
    assert x[0, 1] == x[0, 0] and x[-1, 2] == x[-1, 0]  # the word's own at the ends
    assert (x[:, 3] == r["entropy_mean"]).all() and (x[:, 4] == 3).all() and (x[:, 5] == 0).all()
    assert x[0, 6] == 0 and x[-1, 6] == 1 and x[0, 7] == pytest.approx(np.log(len(r["words"]) + 1))
    assert row_features({**r, "words": [{**w, "softmax": float("nan")} for w in r["words"]]},
                        ["word:softmax"]) is None
    bad = word_errors(r, spans[0])
    assert bad.tolist() == [float(any(s < w["end"] and w["start"] < e for s, e in spans[0])) for w in r["words"]]


def test_average_precision_and_mcc_match_hand_figures() -> None:
    bad = np.array([1, 0, 1, 0, 0], dtype=float)
    score = np.array([0.9, 0.8, 0.7, 0.2, 0.1])
    assert average_precision(bad, score) == pytest.approx((1 + 2 / 3) / 2)
    m, t = best_mcc(bad, score)
    # flag the top 3: tp 2, fp 1, fn 0, tn 2 -> (4 - 0) / sqrt(3 * 2 * 3 * 2) = 2 / 3
    assert m == pytest.approx(2 / 3) and t == pytest.approx(0.7)


def test_fit_beats_each_single_score_and_flags_held_out_words() -> None:
    rows, spans = _rows(240)
    model, info = fit_word_model(rows, spans)
    assert info["beats"] and info["cv_mcc"] > info["best_single_mcc"] + 0.1
    assert info["best_single"] in ("sigmoid", "softmax") and info["n_rows"] == 240
    test, gold = _rows(120, seed=1)
    model.apply(test)
    y = np.concatenate([word_errors(r, s) for r, s in zip(test, gold, strict=True)])
    flag = np.concatenate([[w["learned_word_bad"] for w in r["words"]] for r in test])
    p_ok = np.concatenate([[w["learned_word"] for w in r["words"]] for r in test])
    assert ((p_ok >= 0) & (p_ok <= 1)).all()
    assert (flag == (1 - p_ok >= model.threshold)).all()
    tp, fp = float((flag & (y == 1)).sum()), float((flag & (y == 0)).sum())
    assert tp / max(tp + fp, 1) > 0.7 and tp / y.sum() > 0.5
    assert test[0]["learned_word_errors"] == [[w["start"], w["end"]] for w in test[0]["words"] if w["learned_word_bad"]]


def test_no_gain_over_one_score_is_reported_as_such() -> None:
    rows, spans = _rows(60)
    spans = [[(w["start"], w["end"]) for w in r["words"] if w["softmax"] < 0.5] for r in rows]
    _, info = fit_word_model(rows, spans)  # the rule is one score's own threshold
    assert info["best_single"] == "softmax" and info["best_single_mcc"] == pytest.approx(1.0)
    assert not info["beats"]


def test_saved_loaded_and_refused_on_another_head(tmp_path: Path) -> None:
    rows, spans = _rows(60)
    model, _ = fit_word_model(rows, spans)
    model.save(tmp_path)
    back = WordModel.load(tmp_path)
    assert back == model
    sha = "ab" * 32
    tied = WordModel.from_dict({**json.loads((tmp_path / "word_model.json").read_text()), "head_sha256": sha})
    tied.check_head(sha)
    with pytest.raises(ValueError, match="fitted for another head"):
        tied.check_head("cd" * 32, "h/word_model.json")


@pytest.mark.parametrize("change, message", [
    ({"colour": 1}, "unknown field 'colour'"),
    ({"features": ["word:softmax", "import os"]}, "holds 'import os'"),
    ({"mean": ["0.5"]}, "mean.0. must be a number"),
    ({"threshold": 1.5}, "threshold in .0, 1."),
    ({"coef": [1.0, 2.0]}, "coef must be a list of 1 numbers"),
    ({"head_sha256": "xyz"}, "head_sha256 must be 64 hex digits"),
])
def test_a_malformed_file_is_refused_naming_the_field(change, message) -> None:
    good = {"features": ["word:softmax"], "mean": [-2.0], "scale": [1.0], "coef": [-1.0], "intercept": 0.1,
            "c": 1.0, "threshold": 0.4}
    WordModel.from_dict(good)
    with pytest.raises(ValueError, match=f"x.json: not a saved word model .*{message}"):
        WordModel.from_dict({**good, **change}, "x.json")


def test_bad_dev_input_is_refused() -> None:
    rows, spans = _rows(20)
    with pytest.raises(ValueError, match="at least 10 dev items"):
        fit_word_model(rows[:5], spans[:5])
    with pytest.raises(ValueError, match="20 scored items but 19 lists"):
        fit_word_model(rows, spans[:19])
    with pytest.raises(ValueError, match="both errors and correct words"):
        fit_word_model(rows, [[] for _ in rows])
    with pytest.raises(ValueError, match="item 3: per-word scores with their offsets"):
        fit_word_model([*rows[:2], {**rows[2], "words": None}, *rows[3:]], spans)


def test_calibrate_saves_it_and_score_applies_it(tmp_path: Path) -> None:
    """End to end: dev rows scored with --with-tokens (the fixture's rows, jittered word
    scores), gold spans from a rule over two methods, calibrate --word-model, then score
    adds learned_word to every word and learned_word_errors to every row."""
    from test_cli import FIXTURE, _pairs, run

    from sigmoid_head.cli import main

    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp_path)
    model = ["--head", str(head), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]
    real = tmp_path / "real.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--with-tokens", "--to-json", str(real)]) == 0
    base = [json.loads(x) for x in real.read_text().splitlines() if x]
    rng = np.random.default_rng(0)
    dev, gold = [], []
    for i in range(80):
        r = json.loads(json.dumps(base[i % len(base)]))
        r["source"] = f"s{i}"
        spans = []
        for w in r["words"]:
            w["sigmoid"], w["softmax"] = (float(rng.uniform(0.01, 1)) for _ in range(2))
            if np.log(w["sigmoid"]) + np.log(w["softmax"]) < -2.5:
                spans.append([w["start"], w["end"]])
        dev.append(r)
        gold.append(spans)
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev))
    (tmp_path / "spans.jsonl").write_text("".join(json.dumps(s) + "\n" for s in gold))
    calibrate = ["calibrate", "--head", str(head), "--scores", str(tmp_path / "dev.jsonl"),
                 "--gold-spans", str(tmp_path / "spans.jsonl")]
    res = run(*calibrate, "--word-model")
    assert res.returncode == 0, res.stderr
    assert "learned word model saved" in res.stdout and (head / "word_model.json").is_file()
    out = tmp_path / "scored.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--to-json", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines() if x]
    saved = WordModel.load(head)
    assert all("words" not in r for r in rows)  # not asked for: the flagged offsets stay
    with_words = tmp_path / "words.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--with-tokens", "--to-json", str(with_words)]) == 0
    full = [json.loads(x) for x in with_words.read_text().splitlines() if x]
    for r, plain in zip(full, rows, strict=True):
        p = saved.error_probability(r)
        assert [w["learned_word"] for w in r["words"]] == pytest.approx(list(1 - p))
        assert plain["learned_word_errors"] == r["learned_word_errors"] == [
            [w["start"], w["end"]] for w, pb in zip(r["words"], p, strict=True) if pb >= saved.threshold]
    # a refit that does not clear its bar removes the saved model (it would stay active)
    one = [[[w["start"], w["end"]] for w in r["words"] if w["softmax"] < 0.3] for r in dev]
    (tmp_path / "spans.jsonl").write_text("".join(json.dumps(s) + "\n" for s in one))
    res = run(*calibrate, "--word-model")
    assert res.returncode == 0, res.stderr
    assert "learned word model not saved" in res.stdout and "is removed" in res.stdout
    assert not (head / "word_model.json").exists()
    # without --gold-spans it is refused before anything is written
    res = run("calibrate", "--head", str(head), "--scores", str(tmp_path / "dev.jsonl"),
              "--quality", str(tmp_path / "spans.jsonl"), "--word-model")
    assert res.returncode == 2 and "--word-model needs --gold-spans" in res.stderr


def test_rows_without_a_feature_get_nothing_and_are_counted() -> None:
    rows, spans = _rows(60)
    model, _ = fit_word_model(rows, spans)
    test, _ = _rows(6, seed=2)
    for r in test[:2]:  # scored without the head
        r["words"] = [{k: v for k, v in w.items() if k != "sigmoid"} for w in r["words"]]
    test[2].pop("words")
    test[3]["entropy_mean"] = float("nan")
    lacking = model.apply(test)
    assert lacking["word score sigmoid"] == 2 and lacking["words"] == 1
    assert "row:entropy_mean" in model.features and lacking["entropy_mean"] == 1
    assert not any("learned_word_errors" in r for r in test[:4])
    assert all("learned_word_errors" in r and all("learned_word" in w for w in r["words"]) for r in test[4:])


def test_a_dev_figure_without_a_value_is_saved_as_null(tmp_path: Path) -> None:
    rows, spans = _rows(60)
    model, _ = fit_word_model(rows, spans)
    odd = WordModel(**{**model.__dict__, "dev": {**model.dev, "best_single_mcc": None}})
    odd.save(tmp_path)
    text = (tmp_path / "word_model.json").read_text()
    assert '"best_single_mcc": null' in text and "NaN" not in text
    assert np.isnan(WordModel.load(tmp_path).dev["best_single_mcc"])


def test_finite_accepts_real_numbers_only() -> None:
    from sigmoid_head.evaluation.word_features import finite

    for v in (0.5, -3.0, 0, 7, np.float64(0.25)):
        assert finite(v), v
    for v in (float("nan"), float("inf"), -float("inf"), np.float64("nan"), True, False, None, "1", [1.0]):
        assert not finite(v), v


def test_no_alnum_is_str_isalnum_on_every_character_and_span() -> None:
    """The feature's regular expression agrees with ``str.isalnum`` on every code point
    (underscore, superscript digits, vulgar fractions, combining marks included) and on
    every span of a mixed text."""
    import sys

    from sigmoid_head.evaluation.word_features import no_alnum

    text = "ab_ c\u00b2 \u00bd \u2013 ,.; x\u0301 _ \u0e01\u0e34 9"
    differ = [c for c in map(chr, range(sys.maxunicode + 1)) if no_alnum(c, 0, 1) == c.isalnum()]
    assert differ == []
    for s in range(len(text) + 1):
        for e in range(s, len(text) + 1):
            assert no_alnum(text, s, e) == (not any(c.isalnum() for c in text[s:e])), (s, e)
