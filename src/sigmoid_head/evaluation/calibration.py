"""Calibrated probabilities from sequence scores: Platt scaling and isotonic regression.

A sequence score (the product of token probabilities) ranks outputs but is not a
probability a person can put a threshold on: it shrinks with length and sits near 0 for
good outputs. Fitted on a small labelled dev set (1 = good, 0 = bad), per method:

* Platt scaling: ``p = sigmoid(a * x + b)`` with ``x = <method>_logprob`` (the log of the
  product score); ``a`` is an inverse temperature, ``b`` a shift. Fitted by Newton's
  method on the binary cross-entropy.
* isotonic regression: the non-decreasing step function of ``x`` closest to the labels
  in squared error (pool-adjacent-violators), interpolated linearly between the dev
  points and clipped at both ends, like scikit-learn's ``IsotonicRegression`` with
  ``out_of_bounds="clip"`` (tested equal). Its outputs are kept inside
  ``[1/(2n), 1 - 1/(2n)]`` (n dev items), so one surprising item cannot cost an
  infinite cross-entropy.

The calibrator is saved as JSON beside the head (``calibration.json``; no pickle) and
``sigmoid-head score`` adds ``<method>_platt`` and ``<method>_isotonic`` to every record.
Pure numpy, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ..head.extras import HeadExtra
from ..head.files import CALIBRATION_NAME
from ..registry import methods as registry
from .metrics import bce, ece

KINDS = ("platt", "isotonic")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def fit_platt(x: ArrayLike, y: ArrayLike, ridge: float = 1e-6, iters: int = 100) -> tuple[float, float]:
    """(a, b) minimising the BCE of ``sigmoid(a x + b)`` against labels ``y`` (Newton steps).

    ``x`` is standardised for the fit; a tiny ridge keeps separable data finite.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mu, sd = float(x.mean()), float(x.std()) or 1.0
    X = np.column_stack([(x - mu) / sd, np.ones_like(x)])  # (n, 2)
    w = np.zeros(2)
    for _ in range(iters):
        p = _sigmoid(X @ w)
        grad = X.T @ (p - y) + ridge * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(w[0] / sd), float(w[1] - w[0] * mu / sd)


def fit_isotonic(x: ArrayLike, y: ArrayLike) -> tuple[list[float], list[float]]:
    """Non-decreasing least-squares fit of ``y`` on ``x``: (the distinct x, the fitted values)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    xs, inverse = np.unique(x, return_inverse=True)
    weight = np.bincount(inverse).astype(np.float64)
    mean = np.bincount(inverse, weights=y) / weight
    blocks: list[list[float]] = []  # [value, weight, number of distinct x]
    for v, wt in zip(mean, weight, strict=True):
        blocks.append([v, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks[-1]
            blocks[-1] = [(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, n1 + n2]
    fitted = np.repeat([b[0] for b in blocks], [b[2] for b in blocks])
    return xs.tolist(), fitted.tolist()


def feature(rows: Sequence[Mapping[str, Any]], method: str) -> np.ndarray:
    """(N,) the calibrated feature: ``<method>_logprob``, else the log of ``<method>``."""
    key = registry.AGGREGATIONS["logprob"].key(method)
    if all(key in r for r in rows):
        return np.array([float(r[key]) for r in rows])
    return np.log(np.maximum(np.array([float(r[method]) for r in rows]), 1e-300))


@dataclass
class Calibrator(HeadExtra):
    """Per method: Platt ``(a, b)`` and the isotonic points, all of the log product score."""

    FILE: ClassVar[str] = CALIBRATION_NAME

    platt: dict[str, tuple[float, float]] = field(default_factory=dict)
    isotonic: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    n: int = 0
    """Dev items the calibrator was fitted on."""
    dev: dict = field(default_factory=dict)
    """ECE and BCE before and after, per method, on the dev items (in-sample)."""

    @classmethod
    def fit(cls, rows: Sequence[Mapping[str, Any]], labels: ArrayLike,
            methods: Sequence[str] | None = None) -> Calibrator:
        """Fit both calibrations for every method present in ``rows`` (default: every
        registered method, :mod:`sigmoid_head.registry.methods`)."""
        methods = registry.names() if methods is None else methods
        y = np.asarray(labels, dtype=np.float64)
        if y.shape != (len(rows),) or not np.isin(y, (0.0, 1.0)).all():
            raise ValueError("calibration needs one 0/1 label per scored item")
        if y.min() == y.max():
            raise ValueError("calibration needs both good (1) and bad (0) items")
        present = [m for m in methods if rows and m in rows[0]]
        if not present:
            raise ValueError(f"none of the methods {list(methods)} is in the scores")
        cal = cls(n=len(rows))
        for m in present:
            x = feature(rows, m)
            cal.platt[m] = fit_platt(x, y)
            cal.isotonic[m] = fit_isotonic(x, y)
        cal.dev = cal.report(rows, y)
        return cal

    def predict(self, rows: Sequence[Mapping[str, Any]], method: str, kind: str) -> np.ndarray:
        """(N,) calibrated probabilities of ``method`` by ``kind`` ("platt" or "isotonic")."""
        x = feature(rows, method)
        if kind == "platt":
            a, b = self.platt[method]
            return _sigmoid(a * x + b)
        if kind == "isotonic":
            xs, ys = self.isotonic[method]
            lo = 1.0 / (2 * max(self.n, 1))
            return np.clip(np.interp(x, xs, ys), lo, 1 - lo)
        raise ValueError(f"unknown calibration {kind!r}; use one of {KINDS}")

    def apply(self, rows: list[dict]) -> None:
        """Add ``<method>_platt`` and ``<method>_isotonic`` to every record (in place)."""
        for m in self.platt:
            if rows and m not in rows[0]:
                continue
            for kind in KINDS:
                for r, p in zip(rows, self.predict(rows, m, kind), strict=True):
                    r[f"{m}_{kind}"] = float(p)

    def report(self, rows: Sequence[Mapping[str, Any]], labels: ArrayLike) -> dict[str, dict]:
        """Per method: ECE and BCE of the raw product score and of both calibrations."""
        y = np.asarray(labels, dtype=np.float64)
        out = {}
        for m in self.platt:
            cols = {"raw": np.array([float(r[m]) for r in rows]),
                    **{k: self.predict(rows, m, k) for k in KINDS}}
            out[m] = {f"{k}_{name}": round(fn(p, y), 6) for k, p in cols.items()
                      for name, fn in (("ece", ece), ("bce", bce))}
        return out

    def to_dict(self) -> dict[str, Any]:
        """The saved JSON object: the format, its version, the feature and the fields."""
        return {"format": "sigmoid-head calibration", "version": 1, "feature": "logprob",
                **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> Calibrator:
        """A calibrator from the JSON object :meth:`save` wrote (``source`` names it in errors).

        Every number is checked, so a calibration that would give NaN or wrong probabilities
        is refused here, naming the file and the field: ``n`` a positive integer; per method
        (a registered one, the same methods in both), Platt's ``[a, b]`` two finite numbers;
        the isotonic points ``[xs, ys]`` of equal, non-zero length, finite, ``xs`` strictly
        increasing and ``ys`` non-decreasing in [0, 1].

        Raises:
            ValueError: ``"<source>: <field>: <problem>"``.
        """
        source = source or cls.FILE
        def bad(field: str, problem: str) -> ValueError:
            return ValueError(f"{source}: {field}: {problem}")

        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: not a saved calibration (expected a JSON object)")
        missing = [k for k in ("platt", "isotonic", "n") if k not in data]
        if missing:
            raise ValueError(f"{source}: not a saved calibration (missing {', '.join(missing)})")
        if data.get("feature", "logprob") != "logprob":
            raise bad("feature", f"{data['feature']!r:.40} is not 'logprob', the only feature")
        n = data["n"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise bad("n", f"must be the number of dev items, a positive integer; got {n!r:.40}")
        platt, isotonic = data["platt"], data["isotonic"]
        for name, value in (("platt", platt), ("isotonic", isotonic)):
            if not isinstance(value, Mapping):
                raise bad(name, "must be an object: method -> parameters")
            unknown = sorted(str(m) for m in value if m not in registry.METHODS)
            if unknown:
                raise bad(name, f"unknown method {unknown[0]!r:.40}; known: "
                          f"{', '.join(sorted(registry.METHODS))}")
        if set(platt) != set(isotonic):
            raise bad("isotonic", f"holds methods {sorted(isotonic)} but platt {sorted(platt)}")
        dev = data.get("dev", {})
        if not isinstance(dev, Mapping):
            raise bad("dev", "must be an object")
        out = cls(n=n, dev=dict(dev))
        for m, ab in platt.items():
            if not (isinstance(ab, list | tuple) and len(ab) == 2 and all(map(_finite, ab))):
                raise bad(f"platt.{m}", f"must be two finite numbers [a, b]; got {ab!r:.60}")
            out.platt[m] = (float(ab[0]), float(ab[1]))
        for m, pts in isotonic.items():
            out.isotonic[m] = _isotonic_points(pts, lambda p, m=m: bad(f"isotonic.{m}", p))
        return out


def _finite(v: Any) -> bool:
    """Whether ``v`` is a finite JSON number (not a bool, not a string)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _isotonic_points(pts: Any, bad: Any) -> tuple[list[float], list[float]]:
    """Checked isotonic points ``[xs, ys]`` (``bad(problem)`` makes the error)."""
    if not (isinstance(pts, list | tuple) and len(pts) == 2
            and all(isinstance(v, list | tuple) for v in pts)):
        raise bad("must be two lists [xs, ys]")
    xs, ys = pts
    if not xs or len(xs) != len(ys):
        raise bad(f"xs and ys must be non-empty and of one length; got {len(xs)} and {len(ys)}")
    if not all(map(_finite, xs)) or not all(map(_finite, ys)):
        raise bad("holds a value that is not a finite number")
    if any(b <= a for a, b in zip(xs, xs[1:], strict=False)):
        raise bad("xs must be strictly increasing")
    if any(b < a for a, b in zip(ys, ys[1:], strict=False)) or not 0 <= ys[0] <= ys[-1] <= 1:
        raise bad("ys must be non-decreasing probabilities in [0, 1]")
    return [float(x) for x in xs], [float(y) for y in ys]


def format_report(report: Mapping[str, Mapping[str, float]], title: str) -> str:
    """A small text table of :meth:`Calibrator.report`."""
    cols = [f"{k}_{n}" for k in ("raw", *KINDS) for n in ("ece", "bce")]
    lines = [title, f"{'method':<13}" + "".join(f"{c:>14}" for c in cols)]
    for m, vals in report.items():
        lines.append(f"{m:<13}" + "".join(
            f"{vals[c]:>14.4f}" if math.isfinite(vals[c]) else f"{'inf':>14}" for c in cols))
    return "\n".join(lines)
