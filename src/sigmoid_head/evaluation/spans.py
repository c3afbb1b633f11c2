"""Error spans from word scores, COMET-style, and their character-level precision/recall/F1.

Reading spans off word scores: a word whose score (the product of its token
probabilities under one method, as in the ``words`` of a ``--with-tokens`` record) is
below ``threshold`` is an error word; runs of adjacent error words make a span, and spans
of fewer than ``min_words`` words are dropped. Each span is ``{"text", "start", "end",
"confidence", "severity"}``: character offsets into the candidate text (``end``
exclusive), ``confidence`` one minus the lowest word score of the span, and ``severity``
``"major"`` when that lowest score is below ``major_below``, else ``"minor"``.

The threshold and minimum length are chosen on a labelled dev set
(:func:`fit_span_config`, ``sigmoid-head calibrate --gold-spans``) and saved beside the
head as ``error_spans.json``; ``sigmoid-head score --head`` then adds ``errors`` to
every record.

Measuring spans: every non-whitespace character of every candidate is one decision,
inside a predicted error span or not, inside a gold error span or not. Counts are summed
over the whole set (micro average), so candidates without any error (where every
predicted character is a false positive) count too:

    precision = |pred ∩ gold| / |pred|,  recall = |pred ∩ gold| / |gold|,  F1 = 2PR / (P + R)

(0 where a denominator is 0). Pure Python and numpy, no torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..head.extras import HeadExtra
from ..head.files import SPANS_NAME
from ..registry import methods as registry


@dataclass
class SpanConfig(HeadExtra):
    """How error spans are read off word scores."""

    FILE: ClassVar[str] = SPANS_NAME

    method: str = "sigmoid"
    """Which method's word scores are used (a registered method: sigmoid, softmax, boostedprob, ...)."""
    threshold: float = 0.1
    """A word scored below it is an error word."""
    min_words: int = 1
    """The shortest span reported, in words."""
    major_below: float = 0.01
    """A span whose lowest word score is below it has severity "major" (else "minor")."""
    dev: dict | None = None
    """How the values were chosen: the dev set's size and span precision/recall/F1."""

    def __post_init__(self) -> None:
        def number(v: Any) -> bool:
            return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)

        if not isinstance(self.method, str) or self.method not in registry.METHODS:
            raise ValueError(f"method: {self.method!r:.40} is not a registered method "
                             f"({', '.join(sorted(registry.METHODS))})")
        if not number(self.threshold) or not 0 < self.threshold <= 1:
            raise ValueError(f"threshold: must be a number in (0, 1], got {self.threshold!r:.40}")
        if not isinstance(self.min_words, numbers.Integral) or isinstance(self.min_words, bool) \
                or self.min_words < 1:
            raise ValueError(f"min_words: must be an integer >= 1, got {self.min_words!r:.40}")
        if not number(self.major_below) or not 0 <= self.major_below <= 1:
            raise ValueError(f"major_below: must be a number in [0, 1], got {self.major_below!r:.40}")
        if self.dev is not None and not isinstance(self.dev, dict):
            raise ValueError(f"dev: must be an object or null, got {self.dev!r:.40}")

    def describe(self) -> str:
        """The rule in words, e.g. "sigmoid word score < 0.01, spans of >= 1 word"."""
        return (f"{self.method} word score < {self.threshold:.3g}, spans of >= "
                f"{self.min_words} word{'s' if self.min_words > 1 else ''}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> SpanConfig:
        """A config from the JSON object :meth:`save` wrote (``source`` names it in errors)."""
        source = source or cls.FILE
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: not a saved error-span rule (expected a JSON object)")
        try:
            return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        except (TypeError, ValueError) as err:
            raise ValueError(f"{source}: {err}") from None


def word_offsets(text: str, words: Sequence[str]) -> list[tuple[int, int] | None]:
    """Character span of each word in ``text``, searched left to right (None if not found)."""
    out: list[tuple[int, int] | None] = []
    cursor = 0
    for w in words:
        i = text.find(w, cursor) if w else -1
        if i < 0:
            out.append(None)
            continue
        out.append((i, i + len(w)))
        cursor = i + len(w)
    return out


def offsets_of(text: str, words: Sequence[dict]) -> list[tuple[int, int] | None]:
    """Each word's ``(start, end)``: its own offsets when the records carry them (``score``
    and ``generate`` output does), else :func:`word_offsets` (searched in ``text``)."""
    if words and all("start" in w and "end" in w for w in words):
        return [(int(w["start"]), int(w["end"])) for w in words]
    return word_offsets(text, [w["word"] for w in words])


def error_runs(scores: Sequence[float], offsets: Sequence[tuple[int, int] | None],
               threshold: float) -> list[list[int]]:
    """Runs of adjacent words scored below ``threshold`` (word indices; words not found in
    the text take no part and end a run)."""
    runs: list[list[int]] = []
    prev = -2
    for j, (s, off) in enumerate(zip(scores, offsets, strict=True)):
        if off is None or s >= threshold:
            continue
        if j == prev + 1:
            runs[-1].append(j)
        else:
            runs.append([j])
        prev = j
    return runs


def find_errors(text: str, words: Sequence[dict], config: SpanConfig) -> list[dict[str, Any]]:
    """Error spans of one candidate.

    Args:
        text: the candidate text.
        words: ``{"word", <method>: score, ...}`` per word, in order (a record's ``words``;
            their ``start``/``end`` are used when present, so spans carry the same offsets).
        config: threshold, minimum length, method, severity cut.

    Returns:
        ``{"text", "start", "end", "confidence", "severity"}`` per span, in text order.
    """
    offsets = offsets_of(text, words)
    scores = [float(w[config.method]) for w in words]
    errors = []
    for run in error_runs(scores, offsets, config.threshold):
        if len(run) < config.min_words:
            continue
        start, end = offsets[run[0]][0], offsets[run[-1]][1]  # type: ignore[index]
        low = min(scores[j] for j in run)
        errors.append({"text": text[start:end], "start": start, "end": end,
                       "confidence": round(1.0 - low, 6),
                       "severity": "major" if low < config.major_below else "minor"})
    return errors


def add_errors(rows: list[dict], config: SpanConfig) -> None:
    """Add ``errors`` to every record that has per-word scores (in place).

    Raises:
        ValueError: a record has no ``words`` (score with ``--with-tokens``) or lacks the
            config's method.
    """
    for r in rows:
        if "words" not in r:
            raise ValueError("error spans need per-word scores: score with --with-tokens")
        if r["words"] and config.method not in r["words"][0]:
            raise ValueError(f"error spans use {config.method!r} word scores, which the "
                             "records do not have (score with its head)")
        r["errors"] = find_errors(r["candidate"], r["words"], config)


# ----------------------------------------------------------------------------- measuring
Span = tuple[int, int]


def char_set(spans: Sequence[Span] | Sequence[dict], text: str | None) -> set[int]:
    """The characters the spans cover ((start, end) pairs or dicts), whitespace left out
    when ``text`` is given: what :func:`span_prf` counts."""
    out: set[int] = set()
    for s in spans:
        start, end = (s["start"], s["end"]) if isinstance(s, dict) else s
        out.update(i for i in range(start, end) if text is None or not text[i].isspace())
    return out


def span_prf(
    predicted: Sequence[Sequence[Span] | Sequence[dict]],
    gold: Sequence[Sequence[Span]],
    texts: Sequence[str] | None = None,
) -> dict[str, float]:
    """Micro character-level precision, recall and F1 of predicted error spans.

    Args:
        predicted: per candidate, its predicted spans as ``(start, end)`` or ``errors`` dicts.
        gold: per candidate, its gold error spans ``(start, end)`` (end exclusive).
        texts: the candidate texts (whitespace characters are then not counted).

    Returns:
        ``precision``, ``recall``, ``f1``, and the character counts ``tp``, ``n_pred``, ``n_gold``.
    """
    if len(predicted) != len(gold) or (texts is not None and len(texts) != len(gold)):
        raise ValueError("predicted, gold (and texts) must have one entry per candidate")
    tp = n_pred = n_gold = 0
    for i, (p, g) in enumerate(zip(predicted, gold, strict=True)):
        text = None if texts is None else texts[i]
        pc, gc = char_set(p, text), char_set(g, text)
        tp, n_pred, n_gold = tp + len(pc & gc), n_pred + len(pc), n_gold + len(gc)
    return _prf(tp, n_pred, n_gold)


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "tp": tp, "n_pred": n_pred, "n_gold": n_gold}


def predict_spans(rows: Sequence[dict], config: SpanConfig) -> list[list[dict]]:
    """The error spans of every record (records with ``candidate`` and ``words``)."""
    return [find_errors(r["candidate"], r["words"], config) for r in rows]


def threshold_grid(scores: np.ndarray, n: int = 200, max_share: float = 0.6) -> np.ndarray:
    """Candidate thresholds: geometric midpoints between consecutive distinct word scores
    in the lowest ``max_share`` of them (every way of cutting them apart), at most ``n``
    evenly chosen."""
    s = np.unique(np.maximum(np.asarray(scores, dtype=np.float64), 1e-300))
    s = s[: max(2, int(np.ceil(max_share * s.size)) + 1)]
    mids = np.sqrt(s[:-1] * s[1:]) if s.size > 1 else s
    if mids.size > n:
        mids = mids[np.unique(np.linspace(0, mids.size - 1, n).round().astype(int))]
    return mids


def check_span_ranges(spans: Sequence[Any], length: int, where: str) -> None:
    """Refuse gold spans that are not character ranges of a text of ``length`` characters:
    two integers with ``0 <= start < end <= length``.

    Raises:
        ValueError: ``"<where>: ..."`` naming the first bad span.
    """
    for span in spans:
        ok = (isinstance(span, list | tuple) and len(span) == 2
              and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in span))
        if not ok or not 0 <= span[0] < span[1] <= length:
            raise ValueError(f"{where}: gold span {list(span) if ok else span!r:.40} is not a "
                             f"character range of the candidate's {length} characters "
                             "(0 <= start < end <= length)")


def fit_span_config(
    rows: Sequence[dict],
    gold: Sequence[Sequence[Span]],
    method: str = "sigmoid",
    *,
    n_thresholds: int = 200,
    min_words: Sequence[int] = (1, 2, 3),
) -> SpanConfig:
    """Choose the threshold and the minimum span length that maximise span F1 on a dev set.

    Thresholds tried: :func:`threshold_grid` of the dev set's word scores, so the grid
    follows the method's own scale (sigmoid and softmax word scores differ by orders of
    magnitude). Ties go to the shorter minimum and the smaller threshold.
    ``major_below`` is set an order of magnitude below the chosen threshold. Every
    setting is measured as :func:`span_prf` measures :func:`find_errors`' spans (tested
    equal), with each candidate's word offsets and character masks computed once.

    Args:
        rows: dev records with ``candidate`` and per-word scores (``words``).
        gold: per record, its known error spans ``(start, end)``.
        method: whose word scores to use.
        n_thresholds: size of the threshold grid.
        min_words: minimum span lengths tried.

    Returns:
        The chosen SpanConfig, with the dev figures in ``dev``.
    """
    if len(rows) != len(gold):
        raise ValueError(f"{len(rows)} scored items but {len(gold)} lists of gold spans")
    for k, (r, spans) in enumerate(zip(rows, gold, strict=True)):
        check_span_ranges(spans, len(r["candidate"]), f"item {k + 1}")
    items = [_Candidate(r["candidate"], [float(w[method]) for w in r["words"]],
                        r["words"], g) for r, g in zip(rows, gold, strict=True)]
    scores = np.array([s for c in items for s in c.scores])
    if scores.size == 0:
        raise ValueError("no word scores to choose a threshold from")
    n_gold = sum(int(c.gold.sum()) for c in items)
    best: tuple[float, float, int, dict] | None = None
    for t in threshold_grid(scores, n_thresholds):
        t = float(min(max(t, 1e-300), 1.0))
        runs = [error_runs(c.scores, c.offsets, t) for c in items]
        for m in sorted(min_words):
            tp = n_pred = 0
            for c, rs in zip(items, runs, strict=True):
                pred = c.mask([r for r in rs if len(r) >= m])
                tp += int((pred & c.gold).sum())
                n_pred += int(pred.sum())
            res = _prf(tp, n_pred, n_gold)
            if best is None or res["f1"] > best[0] or (res["f1"] == best[0] and
                                                       (m, t) < (best[2], best[1])):
                best = (res["f1"], t, m, res)
    assert best is not None
    _, t, m, res = best
    return SpanConfig(method=method, threshold=t, min_words=m, major_below=t / 10,
                      dev={"n": len(rows), **{k: round(float(v), 6) for k, v in res.items()}})


class _Candidate:
    """One dev candidate prepared for the threshold search: word scores and offsets, and
    (len(text),) masks of its non-whitespace characters and of its gold error characters."""

    def __init__(self, text: str, scores: list[float], words: list[dict],
                 gold: Sequence[Span]) -> None:
        self.scores, self.offsets = scores, offsets_of(text, words)
        self.counted = np.array([not ch.isspace() for ch in text], dtype=bool)
        self.gold = self._span_mask(gold)

    def _span_mask(self, spans: Sequence[Span]) -> np.ndarray:
        out = np.zeros_like(self.counted)
        for start, end in spans:
            out[start:end] = True
        return out & self.counted

    def mask(self, runs: Sequence[Sequence[int]]) -> np.ndarray:
        """The counted characters inside the spans of ``runs``."""
        return self._span_mask([(self.offsets[r[0]][0], self.offsets[r[-1]][1])  # type: ignore[index]
                                for r in runs])


def fit_span_method(rows: Sequence[dict], gold: Sequence[Sequence[Span]],
                    methods: Sequence[str] | None = None, **kw: Any) -> tuple[SpanConfig, dict]:
    """:func:`fit_span_config` for each method whose word scores ``rows`` carry (default:
    every registered method present), and the one with the best dev span F1 (ties: the
    earlier method of the registry).

    Returns:
        (the chosen SpanConfig, method -> its fitted SpanConfig).
    """
    present = next((set(r["words"][0]) for r in rows if r.get("words")), set())
    names = [m for m in (methods or registry.names()) if m in present]
    if not names:
        raise ValueError("no method's word scores in the dev rows: score them with --with-tokens")
    fitted = {m: fit_span_config(rows, gold, m, **kw) for m in names}
    best = max(names, key=lambda m: (fitted[m].dev["f1"], -names.index(m)))
    return fitted[best], fitted
