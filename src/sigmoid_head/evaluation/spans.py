"""Character-level span precision/recall/F1, and choosing the span settings on a dev set.

Every non-whitespace character of every candidate is one decision: inside a predicted
error span or not, inside a gold error span or not. Counts are summed over the whole
set (micro average), so candidates without any error (where every predicted character
is a false positive) count too:

    precision = |pred ∩ gold| / |pred|,  recall = |pred ∩ gold| / |gold|,  F1 = 2PR / (P + R)

(0 where a denominator is 0). Pure numpy, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..scoring.spans import SpanConfig, find_errors

Span = tuple[int, int]


def _chars(spans: Sequence[Span] | Sequence[dict], text: str | None) -> set[int]:
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
        pc, gc = _chars(p, text), _chars(g, text)
        tp, n_pred, n_gold = tp + len(pc & gc), n_pred + len(pc), n_gold + len(gc)
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
    ``major_below`` is set an order of magnitude below the chosen threshold.

    Args:
        rows: dev records with ``candidate`` and per-word scores (``words``).
        gold: per record, its known error spans ``(start, end)``.
        method: whose word scores to use.
        n_thresholds: size of the threshold grid.
        min_words: minimum span lengths tried.

    Returns:
        The chosen SpanConfig, with the dev figures in ``dev``.
    """
    scores = np.array([float(w[method]) for r in rows for w in r["words"]])
    if scores.size == 0:
        raise ValueError("no word scores to choose a threshold from")
    grid = threshold_grid(scores, n_thresholds)
    texts = [r["candidate"] for r in rows]
    best: tuple[float, SpanConfig, dict] | None = None
    for m in min_words:
        for t in grid:
            t = float(min(max(t, 1e-300), 1.0))
            cfg = SpanConfig(method=method, threshold=t, min_words=m, major_below=t / 10)
            res = span_prf(predict_spans(rows, cfg), gold, texts)
            if best is None or res["f1"] > best[0]:
                best = (res["f1"], cfg, res)
    assert best is not None
    _, cfg, res = best
    cfg.dev = {"n": len(rows), **{k: round(float(v), 6) for k, v in res.items()}}
    return cfg
