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
``learned_quality`` to every row that has every feature. A refit that does not clear the
bar removes the earlier file, so no older model stays active.

A saved model is tied to its head: it records the SHA-256 of the head's weights
(``head_sha256``) and is refused on any other head (:meth:`QualityModel.check_head`). Its
file is read with a strict schema (:func:`parse_fields`: real JSON numbers, known feature
names) and a size bound (:data:`sigmoid_head.head.files.EXTRA_MAX_BYTES`).

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


def refuse_other_head(recorded: str | None, head_sha256: str | None, source: str | Path,
                      column: str, command: str) -> None:
    """Raise when a model fitted for the head whose weights hash to ``recorded`` is offered
    another head (``head_sha256``; None: one written before weights were hashed); a model
    that records no head is let through (its users say so in a notice).

    Raises:
        ValueError: one line naming ``source``, both hashes, the ``column`` that would be
            wrong and the ``command`` that refits it.
    """
    if recorded is None or recorded == head_sha256:
        return
    theirs = (head_sha256 or "none recorded")[:16]
    raise ValueError(
        f"{source}: fitted for another head (weights sha256 {recorded[:16]}, this head's "
        f"{theirs}); its {column} would be wrong: refit it with {command} on this head's dev "
        "scores, or remove the file")


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
    head_sha256: str | None = None
    """The head it was fitted for: the SHA-256 of its weights (``head_config.json``'s
    ``weights_sha256``), which :meth:`check_head` compares; None in files written before
    it was recorded (applied unchecked, with a notice)."""

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

    def check_head(self, head_sha256: str | None, source: str | Path | None = None) -> None:
        """Refuse to serve another head than the one it was fitted for.

        Args:
            head_sha256: the loaded head's ``weights_sha256`` (None: a head written before
                weights were hashed).
            source: the file, named in the error.

        Raises:
            ValueError: the model records a head and it is not this one (one line).
        """
        refuse_other_head(self.head_sha256, head_sha256, source or self.FILE, "learned_quality",
                          "calibrate --quality-model")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> QualityModel:
        """The model of a ``quality_model.json`` object, read with a strict schema
        (:func:`parse_fields`).

        Raises:
            ValueError: ``source: not a saved quality model (why)``, one line.
        """
        source = source or cls.FILE
        try:
            return cls(**parse_fields(data))
        except (ValueError, KeyError, TypeError, OverflowError) as e:
            raise ValueError(f"{source}: not a saved quality model ({e})") from None


MAX_FEATURES = 4096
"""The most features a saved model may name (a few per scoring method)."""
FIELDS = ("features", "mean", "scale", "coef", "intercept", "alpha", "dev", "head_sha256")
"""The keys of a saved model's JSON object (the first six required)."""


def is_feature(name: str) -> bool:
    """Whether ``name`` is a column the model may use (:data:`SUFFIXES`, :data:`EXTRA`,
    not a column made from others)."""
    return (name.endswith(SUFFIXES) or name in EXTRA) and not name.startswith(NOT_FEATURES)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def _number(value: Any, what: str) -> float:
    """A JSON number (not a string, not a boolean), finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, got {_shown(value)}")
    x = float(value)  # an integer past float's range raises OverflowError: refused
    if not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {_shown(value)}")
    return x


def _numbers(value: Any, what: str, n: int) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != n:
        raise ValueError(f"{what} must be a list of {n} numbers, one per feature")
    return tuple(_number(v, f"{what}[{i}]") for i, v in enumerate(value))


def _features(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_FEATURES:
        raise ValueError(f"features must be a list of 1 to {MAX_FEATURES} column names")
    bad = next((f for f in value if not isinstance(f, str) or not is_feature(f)), None)
    if bad is not None or len(set(value)) != len(value):
        why = "repeats a name" if bad is None else f"holds {_shown(bad)}"
        raise ValueError(f"features {why}: each must be a sequence score's column "
                         f"(*{', *'.join(SUFFIXES)}, {', '.join(EXTRA)}), once")
    return tuple(value)


def _dev(value: Any) -> dict[str, Any]:
    """The informative dev figures: numbers (null for NaN), ``best_single`` a string."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("dev must be an object")
    out = dict(value)
    for k, v in value.items():
        if k == "best_single":
            if not isinstance(v, str):
                raise ValueError(f"dev.best_single must be a string, got {_shown(v)}")
        elif k == "n" and (isinstance(v, bool) or not isinstance(v, int)):
            raise ValueError(f"dev.n must be an integer, got {_shown(v)}")
        elif k in ("cv_pearson", "best_single_pearson"):
            out[k] = math.nan if v is None else _number(v, f"dev.{k}")
    return out


def _alpha(value: Any) -> float:
    alpha = _number(value, "alpha")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {_shown(value)}")
    return alpha


def parse_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The checked fields of a saved model's JSON object: ``features`` a list of known
    column names, the numbers real JSON numbers (``"0.5"`` and ``true`` are refused), one
    mean, scale and coefficient per feature, ``head_sha256`` a hex string or null.

    Raises:
        ValueError: the first field that breaks the schema, named (KeyError: a missing one).
    """
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    features = _features(data["features"])
    n = len(features)
    head = data.get("head_sha256")
    if head is not None and not (isinstance(head, str) and len(head) == 64
                                 and all(c in "0123456789abcdef" for c in head)):
        raise ValueError(f"head_sha256 must be 64 hex digits or null, got {_shown(head)}")
    return {"features": features, "mean": _numbers(data["mean"], "mean", n),
            "scale": _numbers(data["scale"], "scale", n), "coef": _numbers(data["coef"], "coef", n),
            "intercept": _number(data["intercept"], "intercept"),
            "alpha": _alpha(data["alpha"]), "dev": _dev(data.get("dev")),
            "head_sha256": head}


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
