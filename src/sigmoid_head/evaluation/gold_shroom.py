"""Mu-SHROOM (SemEval-2025 Task 3) hallucination spans and the task's two metrics.

Format: JSONL, one LLM answer per line, with ``id``, ``lang``, ``model_input`` (the
question), ``model_id``, ``model_output_text``, ``hard_labels`` (a list of ``[start,
end)`` character pairs: the spans most annotators marked) and ``soft_labels`` (a list of
``{start, end, prob}``: the share of annotators who marked each character range).

Metrics, implemented from the task's description (README of the released splits): both
are per answer, on characters, then averaged over answers.

* IoU: |predicted ∩ gold| / |predicted ∪ gold| of the characters inside hard spans;
  an answer where both sets are empty counts 1.
* Spearman: the rank correlation of the predicted per-character probability with the
  gold per-character probability (the soft labels; 0 outside them). Where either vector
  is constant Spearman is undefined; we count 1 when both are constant and equal, else 0
  (our convention for the degenerate case, stated because the description does not fix it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import read_jsonl
from .gold_check import check_shroom_record
from .gold_item import GoldItem


@dataclass
class ShroomItem(GoldItem):
    """A :class:`GoldItem` (spans = hard labels) with the soft labels and the question."""

    soft_labels: list[dict[str, Any]] = field(default_factory=list)
    question: str = ""
    item_id: str = ""
    model_id: str = ""


def read_mushroom(path: str | Path) -> list[ShroomItem]:
    """A Mu-SHROOM labelled split (val or test ``.jsonl``).

    Raises:
        ValueError: a missing field, a field of the wrong type (a text that is not a
            string, a pair of one offset, a fractional or boolean offset, a soft label
            without ``prob``) or a label outside its text, naming the line.
    """
    items = []
    for k, rec in enumerate(read_jsonl(path, objects=True)):
        where = f"{path}:{k + 1}"
        for key in ("model_output_text", "hard_labels", "soft_labels"):
            if key not in rec:
                raise ValueError(f"{where}: no {key!r} (not a labelled Mu-SHROOM split?)")
        check_shroom_record(rec, where)
        text = rec["model_output_text"]
        spans = [{"start": s, "end": e, "severity": None, "category": "hallucination"}
                 for s, e in rec["hard_labels"]]
        soft = [{"start": lab["start"], "end": lab["end"], "prob": float(lab["prob"])}
                for lab in rec["soft_labels"]]
        question = str(rec.get("model_input", ""))
        items.append(
            ShroomItem(
                text,
                sorted(spans, key=lambda s: (s["start"], s["end"])),
                question or str(rec.get("id", k)),
                question or None,
                soft_labels=soft,
                question=question,
                item_id=str(rec.get("id", k)),
                model_id=str(rec.get("model_id", "")),
            )
        )
    return items


def char_probs(length: int, soft: Sequence[dict[str, Any]]) -> np.ndarray:
    """(length,) per-character probability from ``{start, end, prob}`` ranges (0 elsewhere;
    overlapping ranges: the larger)."""
    out = np.zeros(length, dtype=np.float64)
    for lab in soft:
        s, e = int(lab["start"]), int(lab["end"])
        out[s:e] = np.maximum(out[s:e], float(lab["prob"]))
    return out


def _chars(spans: Sequence[Any]) -> set[int]:
    out: set[int] = set()
    for s in spans:
        start, end = (s["start"], s["end"]) if isinstance(s, dict) else (s[0], s[1])
        out.update(range(int(start), int(end)))
    return out


def iou(pred: Sequence[Any], gold: Sequence[Any]) -> float:
    """Character IoU of two span lists (1 when both are empty)."""
    p, g = _chars(pred), _chars(gold)
    union = p | g
    return len(p & g) / len(union) if union else 1.0


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share their mean rank), 1-based."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(x.size, dtype=np.float64)
    sx = x[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sx)) + 1]
    ends = np.r_[starts[1:], x.size]
    for s, e in zip(starts, ends, strict=True):
        ranks[order[s:e]] = (s + e + 1) / 2.0
    return ranks


def spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's rho of two per-character vectors; the degenerate cases as in the module
    docstring (both constant and equal: 1; one constant: 0)."""
    p, g = np.asarray(pred, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    p_const, g_const = np.ptp(p) == 0 if p.size else True, np.ptp(g) == 0 if g.size else True
    if p_const or g_const:
        return float(p_const and g_const and np.array_equal(p, g))
    rp, rg = _ranks(p), _ranks(g)
    rp, rg = rp - rp.mean(), rg - rg.mean()
    return float(np.sum(rp * rg) / np.sqrt(np.sum(rp * rp) * np.sum(rg * rg)))


def shroom_scores(
    items: Sequence[ShroomItem],
    pred_spans: Sequence[Sequence[Any]],
    pred_probs: Sequence[np.ndarray],
) -> np.ndarray:
    """(N, 2) per-answer IoU and Spearman (average the columns for the task's figures)."""
    rows = []
    for it, spans, probs in zip(items, pred_spans, pred_probs, strict=True):
        gold = char_probs(len(it.text), it.soft_labels)
        if len(probs) != len(it.text):
            raise ValueError(
                f"{len(probs)} predicted character probabilities for a "
                f"{len(it.text)}-character answer"
            )
        rows.append([iou(spans, it.spans), spearman(np.asarray(probs), gold)])
    return np.asarray(rows, dtype=np.float64).reshape(-1, 2)


def probs_from_words(text: str, words: Sequence[dict], method: str) -> np.ndarray:
    """(len(text),) hallucination probability of every character: one minus the score of
    the scored word covering it (``start``/``end`` offsets), 0 where no word does."""
    out = np.zeros(len(text), dtype=np.float64)
    for w in words:
        if "start" in w and w.get("start") is not None:
            out[int(w["start"]) : int(w["end"])] = 1.0 - float(w[method])
    return out
