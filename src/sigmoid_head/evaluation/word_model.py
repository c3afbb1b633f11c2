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
from .quality_model import _number, _numbers, _shown

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
"""Inverse L2 penalties tried (on standardised features; the intercept is not penalised)."""
FOLDS = 5
FLOOR = 1e-12
"""Word scores are floored here before their log."""
OUTPUTS = ("learned_word", "learned_word_bad")
"""What :meth:`WordModel.apply` adds to each word (never features)."""
ROW_EXTRA = ("entropy_mean", "dominant_mean")
"""Row columns used when every row has them, beside each method's ``<m>_mean_log``."""
SHAPE = ("length", "no_alnum", "position", "log_words")
"""Features of the word's place and form."""
MAX_FEATURES = 4096
_NAME = re.compile(r"^(?:(?:word|left|right):[A-Za-z0-9_.-]{1,64}|row:[A-Za-z0-9_.-]{1,80})$")
_SKIP = {"word", "start", "end", *OUTPUTS}


def word_methods(rows: Sequence[Mapping]) -> list[str]:
    """The per-word methods every word of every row has as a finite number (sorted)."""
    names: set[str] | None = None
    for r in rows:
        for w in r.get("words") or []:
            have = {k for k, v in w.items() if k not in _SKIP and _finite(v)}
            names = have if names is None else names & have
    return sorted(names or ())


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _row_columns(rows: Sequence[Mapping], methods: Sequence[str]) -> list[str]:
    cols = [f"{m}_mean_log" for m in methods] + list(ROW_EXTRA)
    return [c for c in cols if all(_finite(r.get(c)) for r in rows)]


def _log(x: np.ndarray) -> np.ndarray:
    return np.log(np.clip(x, FLOOR, 1.0))


def _words(row: Mapping, where: str) -> list[Mapping]:
    words = row.get("words")
    if not isinstance(words, list) or any(not isinstance(w, Mapping) or not _finite(w.get("start"))
                                          or not _finite(w.get("end")) for w in words):
        raise ValueError(f"{where}: per-word scores with their offsets are needed (score the "
                         "rows with --with-tokens)")
    return words


def row_features(row: Mapping, names: Sequence[str], where: str = "row") -> np.ndarray | None:
    """(W, F) features of one row's scored words, in the order of ``names`` (None when the
    row lacks one: a method missing from a word, or a row column)."""
    words = _words(row, where)
    n = len(words)
    cols = []
    cache: dict[str, np.ndarray] = {}
    text = str(row.get("candidate") or "")
    for name in names:
        kind, _, key = name.partition(":")
        if kind in ("word", "left", "right"):
            if key not in cache:
                if not all(_finite(w.get(key)) for w in words):
                    return None
                cache[key] = _log(np.asarray([float(w[key]) for w in words], dtype=np.float64))
            own = cache[key]
            if kind == "word" or n == 0:
                cols.append(own)
            else:
                cols.append(np.r_[own[:1], own[:-1]] if kind == "left" else np.r_[own[1:], own[-1:]])
        elif kind == "row":
            if not _finite(row.get(key)):
                return None
            cols.append(np.full(n, float(row[key])))
        elif name == "length":
            cols.append(np.asarray([float(w["end"]) - float(w["start"]) for w in words]))
        elif name == "no_alnum":
            cols.append(np.asarray([not any(c.isalnum() for c in text[int(w["start"]):int(w["end"])])
                                    for w in words], dtype=np.float64))
        elif name == "position":
            cols.append(np.arange(n, dtype=np.float64) / max(n - 1, 1))
        elif name == "log_words":
            cols.append(np.full(n, math.log(n + 1)))
        else:
            raise ValueError(f"unknown feature {name!r}")
    return np.stack(cols, axis=1) if n else np.zeros((0, len(names)))


def word_errors(row: Mapping, spans: Sequence[Sequence[int]], where: str = "row") -> np.ndarray:
    """(W,) 1 where a scored word overlaps a gold error span."""
    words = _words(row, where)
    return np.asarray([any(int(s) < float(w["end"]) and float(w["start"]) < int(e) for s, e in spans)
                       for w in words], dtype=np.float64)


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


def _folds(rows: Sequence[Mapping], k: int) -> np.ndarray:
    keys = [str(r.get("source", i)) for i, r in enumerate(rows)]
    order = {s: j for j, s in enumerate(dict.fromkeys(keys))}
    return np.asarray([order[s] % k for s in keys])


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
            if kind in ("word", "left", "right") and not all(_finite(w.get(key)) for w in row["words"]):
                out.append(f"word score {key}")
            elif kind == "row" and not _finite(row.get(key)):
                out.append(key)
        return sorted(set(out))

    def describe(self) -> str:
        return (f"logistic regression over {len(self.features)} word features (C {self.c:g}; dev "
                f"out-of-fold word MCC {self.dev.get('cv_mcc', float('nan')):.4f})")

    def check_head(self, head_sha256: str | None, source: str | Path | None = None) -> None:
        """Refuse to serve another head than the one it was fitted for (one line)."""
        if self.head_sha256 is None or self.head_sha256 == head_sha256:
            return
        theirs = (head_sha256 or "none recorded")[:16]
        raise ValueError(
            f"{source or self.FILE}: fitted for another head (weights sha256 "
            f"{self.head_sha256[:16]}, this head's {theirs}); its learned_word would be "
            "wrong: refit it with calibrate --word-model on this head's dev scores, or "
            "remove the file")

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
    if not isinstance(dev, dict) or any(not isinstance(k, str) or not (v is None or _finite(v)) for k, v in dev.items()):
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
        _words(r, f"item {k + 1}")
    methods = word_methods(rows)
    if not methods:
        raise ValueError("no per-word score is present (and finite) in every dev word")
    names = ([f"{kind}:{m}" for m in methods for kind in ("word", "left", "right")]
             + [f"row:{c}" for c in _row_columns(rows, methods)] + list(SHAPE))
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
