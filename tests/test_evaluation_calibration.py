"""Calibration: Platt scaling and isotonic regression equal scikit-learn's, lower ECE on
held-out data, and round-trip through JSON."""

from __future__ import annotations

import numpy as np
import pytest

from sigmoid_head.evaluation.calibration import Calibrator, fit_isotonic, fit_platt
from sigmoid_head.evaluation.metrics import bce, ece


def _data(n: int, seed: int):
    """Log product scores whose true P(good) is a steep logistic of the score."""
    rng = np.random.default_rng(seed)
    x = -np.abs(rng.normal(30, 12, n))  # sums of token log-probs: raw scores sit near 0
    y = (rng.random(n) < 1 / (1 + np.exp(-(x + 30) / 4))).astype(float)
    rows = [{"sigmoid": float(np.exp(v)), "sigmoid_logprob": float(v)} for v in x]
    return rows, y


def test_platt_equals_sklearn_logistic_regression() -> None:
    from sklearn.linear_model import LogisticRegression

    rows, y = _data(400, 0)
    x = np.array([r["sigmoid_logprob"] for r in rows])
    a, b = fit_platt(x, y)
    ref = LogisticRegression(C=1e10, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    assert a == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    assert b == pytest.approx(ref.intercept_[0], rel=1e-4)


def test_isotonic_equals_sklearn() -> None:
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(1)
    x = np.round(rng.normal(size=300), 1)  # with ties
    y = (rng.random(300) < 1 / (1 + np.exp(-2 * x))).astype(float)
    xs, ys = fit_isotonic(x, y)
    ref = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    probe = np.linspace(-4, 4, 101)
    np.testing.assert_allclose(np.interp(probe, xs, ys), ref.predict(probe), atol=1e-12)
    assert np.all(np.diff(ys) >= 0)


def test_calibration_lowers_ece_and_bce_on_held_out_data(tmp_path) -> None:
    dev, y_dev = _data(300, 2)
    test, y_test = _data(2000, 3)
    cal = Calibrator.fit(dev, y_dev, methods=["sigmoid", "softmax"])  # softmax absent: skipped
    assert list(cal.platt) == ["sigmoid"]
    report = cal.report(test, y_test)["sigmoid"]
    raw = np.array([r["sigmoid"] for r in test])
    assert report["raw_ece"] == pytest.approx(ece(raw, y_test), abs=1e-6)
    for kind in ("platt", "isotonic"):
        assert report[f"{kind}_ece"] < 0.5 * report["raw_ece"]
        assert report[f"{kind}_bce"] < report["raw_bce"]
    cal.save(tmp_path)
    again = Calibrator.load(tmp_path)
    rows = [dict(r) for r in test[:50]]
    again.apply(rows)
    np.testing.assert_allclose([r["sigmoid_platt"] for r in rows],
                               cal.predict(test[:50], "sigmoid", "platt"))
    iso = np.array([r["sigmoid_isotonic"] for r in rows])
    assert iso.min() >= 1 / 600 and iso.max() <= 1 - 1 / 600  # kept off 0 and 1
    assert np.isfinite(bce(iso, y_test[:50]))


def test_calibration_refuses_bad_labels() -> None:
    rows, _ = _data(10, 4)
    with pytest.raises(ValueError, match="both"):
        Calibrator.fit(rows, np.ones(10))
    with pytest.raises(ValueError, match="0/1"):
        Calibrator.fit(rows, np.full(10, 0.5))


def test_save_is_atomic(tmp_path, monkeypatch) -> None:
    from sigmoid_head.safe import files as io_utils

    dev, y_dev = _data(100, 5)
    old = Calibrator.fit(dev, y_dev)
    old.save(tmp_path)
    before = (tmp_path / "calibration.json").read_bytes()

    class Killed(BaseException):
        pass

    def kill(name: str) -> None:
        raise Killed(name)

    monkeypatch.setattr(io_utils, "fault_point", kill)  # killed just before the rename
    with pytest.raises(Killed, match="replace calibration.json"):
        Calibrator.fit(dev[:50], y_dev[:50]).save(tmp_path)
    assert (tmp_path / "calibration.json").read_bytes() == before
    assert Calibrator.load(tmp_path).platt == old.platt


GOOD = {"format": "sigmoid-head calibration", "version": 1, "feature": "logprob",
        "platt": {"sigmoid": [1.0, 0.5]}, "isotonic": {"sigmoid": [[-5.0, -1.0, 0.0], [0.1, 0.5, 0.9]]},
        "n": 10, "dev": {}}
BAD = [  # (field changes, the field and problem the message names)
    ({"platt": {"sigmoid": [float("nan"), 0]}}, "platt.sigmoid: must be two finite numbers"),
    ({"platt": {"sigmoid": [float("inf"), 0]}}, "platt.sigmoid: must be two finite numbers"),
    ({"platt": {"sigmoid": ["1", "0"]}}, "platt.sigmoid: must be two finite numbers"),
    ({"platt": {"sigmoid": [1, 2, 3]}}, "platt.sigmoid: must be two finite numbers"),
    ({"isotonic": {"sigmoid": [[0, -5, -1], [0.1, 0.5, 0.9]]}}, "isotonic.sigmoid: xs must be strictly increasing"),
    ({"isotonic": {"sigmoid": [[-5, float("nan"), 0], [0.1, 0.5, 0.9]]}}, "isotonic.sigmoid: holds a value"),
    ({"isotonic": {"sigmoid": [[-5, 0], [0.1, 0.5, 0.9]]}}, "isotonic.sigmoid: xs and ys"),
    ({"isotonic": {"sigmoid": [[], []]}}, "isotonic.sigmoid: xs and ys"),
    ({"isotonic": {"sigmoid": [[-5, 0], [0.1, 5]]}}, "isotonic.sigmoid: ys must be"),
    ({"isotonic": {"sigmoid": [[-5, 0], [0.9, 0.1]]}}, "isotonic.sigmoid: ys must be"),
    ({"isotonic": {}}, "isotonic: holds methods []"),
    ({"platt": {"zzz": [1, 0]}, "isotonic": {"zzz": [[0], [0.5]]}}, "platt: unknown method 'zzz'"),
    ({"n": 0}, "n: must be the number of dev items"),
    ({"n": "10"}, "n: must be the number of dev items"),
    ({"n": 2.5}, "n: must be the number of dev items"),
    ({"dev": [1]}, "dev: must be an object"),
    ({"feature": "prob"}, "feature:"),
    ({"platt": None}, "missing platt"),
]


@pytest.mark.parametrize(("change", "named"), BAD, ids=[f"{i}-{b[1][:24]}" for i, b in enumerate(BAD)])
def test_a_bad_calibration_file_is_refused_naming_the_field(change, named) -> None:
    data = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(ValueError) as err:
        Calibrator.from_dict(data, "H/calibration.json")
    assert str(err.value).startswith("H/calibration.json: ") and named in str(err.value)
    assert Calibrator.from_dict(GOOD).predict([{"sigmoid_logprob": -1.0}], "sigmoid", "platt")[0] > 0
