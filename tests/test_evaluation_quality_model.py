"""The learned segment quality score (evaluation/quality_model.py, ``calibrate --quality-model``)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.evaluation.quality_model import (
    QualityModel,
    _folds,
    feature_names,
    fit_quality_model,
)


def _rows(n: int, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    """Rows whose quality is a sum of two sequence scores plus a little noise; a third is noise."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.normal(size=(3, n))
    rows = [{"id": str(i), "source": f"s{i // 2}", "sigmoid_mean_log": float(a[i] - 2),
             "softmax_mean_log": float(b[i] - 2), "softmax_min": float(math.exp(c[i] - 3)),
             "n_tokens": 10 + i % 7, "combined_log": float(a[i] + b[i]), "candidate": "x"}
            for i in range(n)]
    return rows, a + b + 0.1 * rng.normal(size=n)


def test_features_are_the_sequence_scores_every_row_has() -> None:
    rows, _ = _rows(20)
    assert feature_names(rows) == ["n_tokens", "sigmoid_mean_log", "softmax_mean_log", "softmax_min"]
    rows[3]["softmax_min"] = float("nan")  # not finite in one row: left out
    del rows[4]["n_tokens"]  # absent from one row: left out
    assert feature_names(rows) == ["sigmoid_mean_log", "softmax_mean_log"]


def test_fit_beats_a_single_score_and_predicts_held_out_rows() -> None:
    rows, y = _rows(200)
    model, info = fit_quality_model(rows, y)
    assert info["beats"] and info["cv_pearson"] > 0.95 > info["best_single_pearson"]
    test, yt = _rows(100, seed=1)
    assert np.corrcoef(model.predict(test), yt)[0, 1] > 0.95
    # the two informative scores carry the weight; the noise ones almost none
    w = dict(zip(model.features, model.coef, strict=True))
    assert min(w["sigmoid_mean_log"], w["softmax_mean_log"]) > 10 * max(abs(w["softmax_min"]), abs(w["n_tokens"]))


def test_no_gain_over_one_score_is_reported_as_such() -> None:
    rows, _ = _rows(200)
    y = np.asarray([r["softmax_mean_log"] for r in rows])  # one score is the quality itself
    _, info = fit_quality_model(rows, y)
    assert not info["beats"] and info["best_single"] == "softmax_mean_log"


def test_saved_and_loaded_and_applied(tmp_path: Path) -> None:
    rows, y = _rows(60)
    model, _ = fit_quality_model(rows, y)
    model.save(tmp_path)
    again = QualityModel.load(tmp_path)
    assert again == model
    test, _ = _rows(5, seed=2)
    del test[0]["softmax_min"]
    test[1]["softmax_mean_log"] = float("nan")
    lacking = again.apply(test)
    assert "learned_quality" not in test[0] and "learned_quality" not in test[1]
    assert lacking == {"softmax_min": 1, "softmax_mean_log": 1}
    assert again.apply(test[2:]) == {}
    test = test[:1] + test[2:]
    assert [r["learned_quality"] for r in test[1:]] == pytest.approx(list(model.predict(test[1:])))


def test_folds_never_split_a_source() -> None:
    rows, _ = _rows(40)
    folds = _folds(rows, 5)
    by_source: dict[str, set[int]] = {}
    for r, f in zip(rows, folds, strict=True):
        by_source.setdefault(r["source"], set()).add(int(f))
    assert all(len(f) == 1 for f in by_source.values()) and len(set(folds.tolist())) == 5


@pytest.mark.parametrize("change, message", [
    (lambda rows, y: (rows[:5], y[:5]), "at least 10 dev items"),
    (lambda rows, y: (rows, y[:-1]), "quality values"),
    (lambda rows, y: (rows, np.r_[y[:-1], np.nan]), "NaN or inf"),
    (lambda rows, y: ([{"id": r["id"]} for r in rows], y), "no sequence score"),
])
def test_bad_input_is_refused(change, message) -> None:
    rows, y = _rows(30)
    with pytest.raises(ValueError, match=message):
        fit_quality_model(*change(rows, y))


def test_a_malformed_file_is_named() -> None:
    with pytest.raises(ValueError, match="x/quality_model.json: not a saved quality model"):
        QualityModel.from_dict({"features": ["a"], "mean": [0.0], "scale": [0.0], "coef": [1.0],
                                "intercept": 0.0, "alpha": 1.0}, "x/quality_model.json")


def test_calibrate_saves_it_and_score_applies_it(tmp_path: Path) -> None:
    """End to end: dev rows with the real score columns (the fixture's rows, jittered), a
    quality built from two of them, calibrate --quality-model, then score adds learned_quality."""
    from test_cli import FIXTURE, _pairs, run

    from sigmoid_head.cli import main

    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp_path)
    model = ["--head", str(head), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]
    real = tmp_path / "real.jsonl"
    # dev scored with RAUQ: the model may use its columns
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--rauq",
                 "--to-json", str(real)]) == 0
    base = [json.loads(x) for x in real.read_text().splitlines() if x]
    rng = np.random.default_rng(0)
    dev, quality = [], []
    for i in range(60):
        r = dict(base[i % len(base)])
        for k in feature_names(base):
            if k.endswith("_min"):
                r[k] = float(r[k]) * math.exp(rng.normal())
            else:
                r[k] = float(r[k]) + rng.normal()
        dev.append(r)
        quality.append(r["sigmoid_mean_log"] + r["softmax_mean_log"] + 0.1 * rng.normal())
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev))
    (tmp_path / "q.txt").write_text("".join(f"{q}\n" for q in quality))
    res = run("calibrate", "--head", str(head), "--scores", str(tmp_path / "dev.jsonl"),
              "--quality", str(tmp_path / "q.txt"), "--quality-model")
    assert res.returncode == 0, res.stderr
    assert "learned quality score saved" in res.stdout and (head / "quality_model.json").is_file()
    out = tmp_path / "scored.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--rauq",
                 "--to-json", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines() if x]
    saved = QualityModel.load(head)
    assert [r["learned_quality"] for r in rows] == pytest.approx(list(saved.predict(rows)))
    # rows scored without a method the model was fitted on get no learned_quality, and one
    # notice after the run says how many and which features they lacked (it was silent)
    res = run("score", "-s", str(src), "-t", str(cand), *model)  # without --rauq
    assert res.returncode == 0, res.stderr
    lacked = [f for f in saved.features if f.startswith("rauq")]
    assert lacked, saved.features
    n = len(src.read_text().splitlines())
    line = next(x for x in res.stdout.splitlines() if "got no learned_quality" in x)
    assert line.startswith(f"notice: {n} of {n} rows got no learned_quality")
    assert all(f"{f} ({n})" in line for f in lacked)
    # without --quality it is refused before anything is written
    res = run("calibrate", "--head", str(head), "--scores", str(tmp_path / "dev.jsonl"),
              "--gold-spans", str(tmp_path / "q.txt"), "--quality-model")
    assert res.returncode == 2 and "--quality-model needs --quality" in res.stderr
