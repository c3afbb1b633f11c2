"""A learned word-level error detector: logistic regression over one scoring pass's word scores.

``sigmoid-head calibrate --gold-spans G --word-model`` fits, on the user's dev rows (``score
--with-tokens``) and their known error spans, a model of each scored word being an error
(it overlaps a gold span) over what the pass already gives: for every per-word method of
the rows (the head's ``sigmoid``, ``softmax``, ``boostedprob``, ...) the log of the word's
score and of its left and right neighbours' (``word:``, ``left:``, ``right:``), the word's
length in characters, whether it has no letter or digit, its relative position, the log
word count, and the row's mean log-probability per method, mean entropy and mean dominant
count where every row has them (``row:``). Features are standardised on dev; the L2
penalty is chosen by 5-fold cross-validation over dev (folds never split a ``source`` when
the rows have one) on the out-of-fold average precision of errors, and the flagging
threshold is the out-of-fold MCC-best; the model is then fitted on all of dev. It is saved
(``word_model.json``) only when its out-of-fold word MCC beats the best single method's
in-sample MCC at that method's own best threshold (a bar in the single score's favour);
``score`` and ``generate`` then add to every word of every row that has every feature
``learned_word`` (the probability the word is right: lower = worse, as every method) and
``learned_word_bad`` (flagged at the dev-chosen threshold), and to the row
``learned_word_errors``, the ``[start, end]`` character offsets of its flagged words (kept
when the per-word scores are not). A refit that does not clear the bar
removes the earlier file.

Measured on the WMT 2021 ro-en word tags (fitted on the 1,000 dev sentences, tested once):
docs/human_labels.md, "The labelled head against what the same tags buy without it".

A saved model is tied to its head (``head_sha256``, refused on any other head) and read
with a strict schema and a size bound, as the segment quality model
(:mod:`.quality_model`). Numpy only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..head.extras import HeadExtra
from ..head.files import WORD_MODEL_NAME
from .quality_model import _folds, _number, _numbers, _shown, refuse_other_head
from .word_features import (
    SHAPE,
    finite,
    row_columns,
    row_features,
    scored_words,
    word_errors,
    word_methods,
)

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
"""Inverse L2 penalties tried (on standardised features; the intercept is not penalised)."""
FOLDS = 5
MAX_FEATURES = 4096
_NAME = re.compile(r"^(?:(?:word|left|right):[A-Za-z0-9_.-]{1,64}|row:[A-Za-z0-9_.-]{1,80})$")


def _fit_lr(x: np.ndarray, y: np.ndarray, c: float, iters: int = 50) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of L2 logistic regression (Newton's method) on standardised
    ``x``: minimises the summed log loss plus ``|w|^2 / (2 C)``."""
    n, f = x.shape
    a = np.c_[x, np.ones(n)]
    theta = np.zeros(f + 1)
    prior = np.clip(y.mean(), 1e-6, 1 - 1e-6)
    theta[-1] = math.log(prior / (1 - prior))
    reg = np.r_[np.full(f, 1.0 / c), 0.0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ theta, -35, 35)))
        grad = a.T @ (p - y) + reg * theta
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def _prob(x: np.ndarray, coef: np.ndarray, icept: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x @ coef + icept, -35, 35)))


def average_precision(bad: np.ndarray, score: np.ndarray) -> float:
    """Average precision of ``bad`` ranked by ``score`` (higher = more likely bad)."""
    order = np.argsort(-score, kind="mergesort")
    hits = bad[order]
    if not hits.sum():
        return math.nan
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float((precision * hits).sum() / hits.sum())


def best_mcc(bad: np.ndarray, score: np.ndarray, n: int = 200) -> tuple[float, float]:
    """(MCC, threshold): the best MCC of flagging ``score >= threshold`` over the quantiles
    of ``score``."""
    best = (-1.0, math.inf)
    pos = bad.sum()
    for t in np.unique(np.quantile(score, np.linspace(0, 1, n + 1), method="lower")):
        flag = score >= t
        tp = float((flag & (bad == 1)).sum())
        fp, fn = float(flag.sum()) - tp, float(pos) - tp
        tn = float(len(bad)) - tp - fp - fn
        den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        m = (tp * tn - fp * fn) / den if den else 0.0
        if m > best[0]:
            best = (m, float(t))
    return best


@dataclass(frozen=True)
class WordModel(HeadExtra):
    """A logistic model of word errors over word scores (module docstring)."""

    FILE: ClassVar[str] = WORD_MODEL_NAME

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    c: float
    threshold: float
    """A word is flagged when its probability of being an error is at least this."""
    dev: dict[str, Any] = field(default_factory=dict)
    head_sha256: str | None = None

    def __post_init__(self) -> None:
        n = len(self.features)
        if not n or any(len(v) != n for v in (self.mean, self.scale, self.coef)):
            raise ValueError("a word model needs one mean, scale and coefficient per feature")
        if not all(math.isfinite(v) for v in (*self.mean, *self.scale, *self.coef, self.intercept,
                                               self.c, self.threshold)):
            raise ValueError("a word model's numbers must be finite")
        if any(s <= 0 for s in self.scale) or self.c <= 0 or not 0 <= self.threshold <= 1:
            raise ValueError("a word model's scales and C must be > 0, its threshold in [0, 1]")

    def error_probability(self, row: Mapping, where: str = "row") -> np.ndarray | None:
        """(W,) probability that each scored word of ``row`` is an error (None: a feature lacks)."""
        x = row_features(row, self.features, where)
        if x is None:
            return None
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return _prob(z, np.asarray(self.coef), self.intercept)

    def apply(self, rows: Sequence[dict]) -> Counter[str]:
        """Add ``learned_word`` and ``learned_word_bad`` to every word of every row that has
        every feature, and ``learned_word_errors`` to the row.

        Returns:
            The features the rows left without them lacked, each with its count of rows.
        """
        lacking: Counter[str] = Counter()
        for k, r in enumerate(rows):
            if not isinstance(r.get("words"), list):
                lacking["words"] += 1
                continue
            p = self.error_probability(r, f"row {k + 1}")
            if p is None:
                lacking.update(self._lacks(r))
                continue
            flagged = []
            for w, pb in zip(r["words"], p, strict=True):
                w["learned_word"] = float(1.0 - pb)
                w["learned_word_bad"] = bool(pb >= self.threshold)
                if w["learned_word_bad"]:
                    flagged.append([int(w["start"]), int(w["end"])])
            r["learned_word_errors"] = flagged
        return lacking

    def _lacks(self, row: Mapping) -> list[str]:
        out = []
        for name in self.features:
            kind, _, key = name.partition(":")
            if kind in ("word", "left", "right") and not all(finite(w.get(key)) for w in row["words"]):
                out.append(f"word score {key}")
            elif kind == "row" and not finite(row.get(key)):
                out.append(key)
        return sorted(set(out))

    def describe(self) -> str:
        return (f"logistic regression over {len(self.features)} word features (C {self.c:g}; dev "
                f"out-of-fold word MCC {self.dev.get('cv_mcc', float('nan')):.4f})")

    def check_head(self, head_sha256: str | None, source: str | Path | None = None) -> None:
        """Refuse to serve another head than the one it was fitted for (one line)."""
        refuse_other_head(self.head_sha256, head_sha256, source or self.FILE, "learned_word",
                          "calibrate --word-model")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> WordModel:
        """The model of a ``word_model.json`` object, read with a strict schema.

        Raises:
            ValueError: ``source: not a saved word model (why)``, one line.
        """
        source = source or cls.FILE
        try:
            return cls(**parse_fields(data))
        except (ValueError, KeyError, TypeError, OverflowError) as e:
            raise ValueError(f"{source}: not a saved word model ({e})") from None


FIELDS = ("features", "mean", "scale", "coef", "intercept", "c", "threshold", "dev", "head_sha256")
"""The keys of a saved model's JSON object (the first seven required)."""


def is_feature(name: str) -> bool:
    """Whether ``name`` is a feature a word model may name."""
    return name in SHAPE or bool(_NAME.match(name))


def parse_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The checked fields of a saved word model's JSON object (real JSON numbers, known
    feature names, one mean, scale and coefficient per feature, ``head_sha256`` 64 hex
    digits or null).

    Raises:
        ValueError: the first field that breaks the schema, named (KeyError: a missing one).
    """
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")
    feats = data["features"]
    if not isinstance(feats, list) or not 1 <= len(feats) <= MAX_FEATURES:
        raise ValueError(f"features must be a list of 1 to {MAX_FEATURES} names")
    bad = next((f for f in feats if not isinstance(f, str) or not is_feature(f)), None)
    if bad is not None or len(set(feats)) != len(feats):
        why = "repeats a name" if bad is None else f"holds {_shown(bad)}"
        raise ValueError(f"features {why}: each must be word:/left:/right:<method>, row:<column> "
                         f"or one of {', '.join(SHAPE)}, once")
    n = len(feats)
    head = data.get("head_sha256")
    if head is not None and not (isinstance(head, str) and len(head) == 64
                                 and all(ch in "0123456789abcdef" for ch in head)):
        raise ValueError(f"head_sha256 must be 64 hex digits or null, got {_shown(head)}")
    dev = data.get("dev") or {}
    if not isinstance(dev, dict) or any(not isinstance(k, str) or not (v is None or finite(v)) for k, v in dev.items()):
        raise ValueError("dev must be an object of numbers")
    return {"features": tuple(feats), "mean": _numbers(data["mean"], "mean", n),
            "scale": _numbers(data["scale"], "scale", n), "coef": _numbers(data["coef"], "coef", n),
            "intercept": _number(data["intercept"], "intercept"), "c": _number(data["c"], "c"),
            "threshold": _number(data["threshold"], "threshold"),
            "dev": {k: (math.nan if v is None else v) for k, v in dev.items()}, "head_sha256": head}


def fit_word_model(rows: Sequence[Mapping], spans: Sequence[Sequence[Sequence[int]]]) -> tuple[WordModel, dict]:
    """Fit the model on dev rows and their gold error spans (module docstring).

    Returns:
        (the model, info: ``beats`` whether it clears the bar, ``cv_mcc``, ``cv_ap``,
        ``best_single`` and ``best_single_mcc``, ``n_rows``, ``n_words``, ``n_errors``).

    Raises:
        ValueError: rows and spans of different lengths, rows without per-word offsets,
            fewer than 2 x FOLDS rows, no word score every word has, or no error / no
            correct word among the dev words.
    """
    if len(rows) != len(spans):
        raise ValueError(f"{len(rows)} scored items but {len(spans)} lists of gold spans")
    if len(rows) < 2 * FOLDS:
        raise ValueError(f"a word model needs at least {2 * FOLDS} dev items, got {len(rows)}")
    for k, r in enumerate(rows):
        scored_words(r, f"item {k + 1}")
    methods = word_methods(rows)
    if not methods:
        raise ValueError("no per-word score is present (and finite) in every dev word")
    names = ([f"{kind}:{m}" for m in methods for kind in ("word", "left", "right")]
             + [f"row:{c}" for c in row_columns(rows, methods)] + list(SHAPE))
    xs = [row_features(r, names, f"item {k + 1}") for k, r in enumerate(rows)]
    y = np.concatenate([word_errors(r, s, f"item {k + 1}") for k, (r, s) in enumerate(zip(rows, spans, strict=True))])
    if not 0 < y.sum() < len(y):
        raise ValueError(f"the dev words need both errors and correct words ({int(y.sum())} of {len(y)} are errors)")
    raw = np.concatenate([x for x in xs if x is not None])
    keep = raw.std(axis=0) > 0
    names = [n for n, k in zip(names, keep, strict=True) if k]
    raw = raw[:, keep]
    word_fold = np.concatenate([np.full(len(x), f) for x, f in zip(xs, _folds(rows, FOLDS), strict=True)])
    best: tuple[float, float, np.ndarray] | None = None
    for c in C_GRID:
        oof = np.empty_like(y)
        for f in range(FOLDS):
            tr, te = word_fold != f, word_fold == f
            if not te.any():
                continue
            mu, sd = raw[tr].mean(axis=0), raw[tr].std(axis=0)
            sd[sd == 0] = 1.0
            coef, icept = _fit_lr((raw[tr] - mu) / sd, y[tr], c)
            oof[te] = _prob((raw[te] - mu) / sd, coef, icept)
        ap = average_precision(y, oof)
        if math.isfinite(ap) and (best is None or ap > best[1]):
            best = (c, ap, oof)
    if best is None:
        raise ValueError("the out-of-fold predictions have no defined average precision")
    c, ap, oof = best
    cv_mcc, threshold = best_mcc(y, oof)
    mu, sd = raw.mean(axis=0), raw.std(axis=0)
    coef, icept = _fit_lr((raw - mu) / sd, y, c)
    singles = {m: best_mcc(y, -raw[:, names.index(f"word:{m}")])[0] for m in methods if f"word:{m}" in names}
    single = max(singles, key=lambda m: singles[m]) if singles else None
    info = {"n_rows": len(rows), "n_words": int(len(y)), "n_errors": int(y.sum()), "cv_mcc": float(cv_mcc),
            "cv_ap": float(ap), "c": float(c), "features": len(names), "best_single": single,
            "best_single_mcc": float(singles[single]) if single else math.nan}
    info["beats"] = bool(single is None or cv_mcc > info["best_single_mcc"])
    dev = {k: info[k] if math.isfinite(info[k]) else None  # null, not NaN, in the saved JSON
           for k in ("n_rows", "n_words", "n_errors", "cv_mcc", "cv_ap", "best_single_mcc")}
    model = WordModel(tuple(names), tuple(float(v) for v in mu), tuple(float(v) for v in sd),
                      tuple(float(v) for v in coef), float(icept), float(c), float(min(max(threshold, 0.0), 1.0)), dev)
    return model, info
