"""A learned segment quality score: ridge regression over one scoring pass's sequence scores.

``sigmoid-head calibrate --quality Q --quality-model`` fits, on the user's dev scores and
dev quality (higher = better: minus HTER, an MQM or DA score, chrF), a linear model over
every sequence score the rows carry: for each method its sum and mean of token
log-probabilities and its weakest token (``<method>_logprob``, ``<method>_mean_log``,
``<method>_min``, the last as a log), the mean entropy, the mean dominant-token count and the
log token count. Features are standardised on dev; the ridge penalty is chosen by 5-fold
cross-validation over dev (folds never split a ``source`` when the rows have one), the
model then fitted on all of dev. It is saved (``quality_model.json``) only when its
out-of-fold Pearson beats the best single feature's in-sample Pearson on the same rows (a
bar in the single feature's favour); ``score`` and ``generate`` then add
``learned_quality`` to every row that has every feature.

Where it helps, and where the head's features add to it: docs/human_labels.md, "Does the
head add to a learned combination?". Numpy only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..head.extras import HeadExtra
from ..head.files import QUALITY_MODEL_NAME
from .metrics import pearson

SUFFIXES = ("_logprob", "_mean_log", "_min")
"""Sequence aggregates used as features, per method."""
EXTRA = ("entropy_mean", "dominant_mean", "n_tokens")
"""Pass-level features used when present."""
NOT_FEATURES = ("combined", "learned_quality")
"""Prefixes of fields made from other fields (never features)."""
ALPHAS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
"""Ridge penalties tried (on standardised features)."""
FOLDS = 5
_TINY = 1e-300


def _value(name: str, v: Any) -> float:
    x = float(v)
    if name.endswith("_min"):
        return math.log(max(x, _TINY))
    if name == "n_tokens":
        return math.log(max(x, 1.0))
    return x


def _finite(name: str, v: Any) -> bool:
    try:
        return math.isfinite(_value(name, v))
    except (TypeError, ValueError):
        return False


def feature_names(rows: Sequence[Mapping]) -> list[str]:
    """The features every row has as a finite number (sorted)."""
    if not rows:
        return []
    names = [k for k in rows[0] if (k.endswith(SUFFIXES) or k in EXTRA)
             and not k.startswith(NOT_FEATURES)]
    keep = []
    for k in sorted(names):
        try:
            if all(math.isfinite(_value(k, r[k])) for r in rows):
                keep.append(k)
        except (KeyError, TypeError, ValueError):
            continue
    return keep


def _matrix(rows: Sequence[Mapping], names: Sequence[str]) -> np.ndarray:
    return np.asarray([[_value(k, r[k]) for k in names] for r in rows], dtype=np.float64)


def _ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of ridge regression on standardised ``x``."""
    ym = float(y.mean())
    a = x.T @ x + alpha * np.eye(x.shape[1])
    return np.linalg.solve(a, x.T @ (y - ym)), ym


def _folds(rows: Sequence[Mapping], k: int) -> np.ndarray:
    """Fold of every row: by ``source`` when the rows have one (a source never splits)."""
    keys = [str(r.get("source", i)) for i, r in enumerate(rows)]
    order = {s: j for j, s in enumerate(dict.fromkeys(keys))}
    return np.asarray([order[s] % k for s in keys])


@dataclass(frozen=True)
class QualityModel(HeadExtra):
    """A ridge model of segment quality over sequence scores (module docstring)."""

    FILE: ClassVar[str] = QUALITY_MODEL_NAME

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    alpha: float
    dev: dict[str, Any] = field(default_factory=dict)
    """Dev figures: n, out-of-fold Pearson, the best single feature and its Pearson."""

    def __post_init__(self) -> None:
        n = len(self.features)
        if not n or any(len(v) != n for v in (self.mean, self.scale, self.coef)):
            raise ValueError("a quality model needs one mean, scale and coefficient per feature")
        if not all(math.isfinite(v) for v in (*self.mean, *self.scale, *self.coef, self.intercept)):
            raise ValueError("a quality model's numbers must be finite")
        if any(s <= 0 for s in self.scale):
            raise ValueError("a quality model's scales must be > 0")

    def predict(self, rows: Sequence[Mapping]) -> np.ndarray:
        """The learned quality of every row (all of which have every feature)."""
        x = (_matrix(rows, self.features) - np.asarray(self.mean)) / np.asarray(self.scale)
        return x @ np.asarray(self.coef) + self.intercept

    def apply(self, rows: Sequence[dict]) -> Counter[str]:
        """Add ``learned_quality`` to every row that has every feature (as a finite number):
        one matrix product for the batch, not one per row.

        Returns:
            The features the rows left without it lacked (missing, or not a finite
            number), each with its count of rows; empty when every row got it.
        """
        ok, lacking = [], Counter()
        for r in rows:
            bad = [k for k in self.features if not _finite(k, r.get(k))]
            if bad:
                lacking.update(bad)
            else:
                ok.append(r)
        if ok:
            for r, v in zip(ok, self.predict(ok), strict=True):
                r["learned_quality"] = float(v)
        return lacking

    def describe(self) -> str:
        return (f"ridge over {len(self.features)} sequence scores (alpha {self.alpha:g}; dev "
                f"out-of-fold Pearson {self.dev.get('cv_pearson', float('nan')):.4f})")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> QualityModel:
        source = source or cls.FILE
        try:
            return cls(tuple(str(f) for f in data["features"]),
                       tuple(float(v) for v in data["mean"]), tuple(float(v) for v in data["scale"]),
                       tuple(float(v) for v in data["coef"]), float(data["intercept"]),
                       float(data["alpha"]), dict(data.get("dev") or {}))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{source}: not a saved quality model ({e})") from None


def fit_quality_model(rows: Sequence[Mapping], quality: Sequence[float]) -> tuple[QualityModel, dict]:
    """Fit the model on dev rows and their quality (module docstring).

    Returns:
        (the model, info: ``beats`` whether it clears the bar, ``cv_pearson``,
        ``best_single`` and ``best_single_pearson``, ``n``).

    Raises:
        ValueError: fewer than 2 x FOLDS rows, rows and quality of different lengths, a
            non-finite quality, or no feature every row has.
    """
    y = np.asarray(quality, dtype=np.float64)
    if len(rows) != len(y):
        raise ValueError(f"{len(rows)} scored items but {len(y)} quality values")
    if len(y) < 2 * FOLDS:
        raise ValueError(f"a quality model needs at least {2 * FOLDS} dev items, got {len(y)}")
    if not np.isfinite(y).all():
        raise ValueError("the dev quality has NaN or inf values")
    names = feature_names(rows)
    if not names:
        raise ValueError("no sequence score is present (and finite) in every dev row")
    raw = _matrix(rows, names)
    keep = raw.std(axis=0) > 0
    names = [n for n, k in zip(names, keep, strict=True) if k]
    if not names:
        raise ValueError("every sequence score is constant over the dev rows")
    raw = raw[:, keep]
    folds = _folds(rows, FOLDS)
    best: tuple[float, float] | None = None
    for alpha in ALPHAS:
        oof = np.empty_like(y)
        for f in range(FOLDS):
            tr, te = folds != f, folds == f
            if not te.any():
                continue
            mu, sd = raw[tr].mean(axis=0), raw[tr].std(axis=0)
            sd[sd == 0] = 1.0
            coef, icept = _ridge((raw[tr] - mu) / sd, y[tr], alpha)
            oof[te] = ((raw[te] - mu) / sd) @ coef + icept
        r = pearson(oof, y)
        if math.isfinite(r) and (best is None or r > best[1]):
            best = (alpha, r)
    if best is None:
        raise ValueError("the out-of-fold predictions have no defined Pearson (constant quality?)")
    alpha, cv = best
    mu, sd = raw.mean(axis=0), raw.std(axis=0)
    coef, icept = _ridge((raw - mu) / sd, y, alpha)
    singles = {n: abs(pearson(raw[:, j], y)) for j, n in enumerate(names)}
    single = max(singles, key=lambda n: singles[n] if math.isfinite(singles[n]) else -1.0)
    info = {"n": int(len(y)), "cv_pearson": float(cv), "best_single": single,
            "best_single_pearson": float(singles[single]), "alpha": float(alpha),
            "features": len(names)}
    info["beats"] = bool(cv > info["best_single_pearson"])
    model = QualityModel(tuple(names), tuple(float(v) for v in mu), tuple(float(v) for v in sd),
                         tuple(float(v) for v in coef), float(icept), float(alpha),
                         {k: info[k] for k in ("n", "cv_pearson", "best_single", "best_single_pearson")})
    return model, info
