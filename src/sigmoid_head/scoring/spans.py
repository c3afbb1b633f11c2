"""Error spans from word scores, COMET-style: ``errors: [{text, start, end, confidence, severity}]``.

A word whose score (the product of its token probabilities under one method, as in the
``words`` of a ``--with-tokens`` record) is below ``threshold`` is an error word; runs of
adjacent error words make a span, and spans of fewer than ``min_words`` words are
dropped. ``start``/``end`` are character offsets into the candidate text (``end``
exclusive), ``confidence`` is one minus the lowest word score of the span, and
``severity`` is ``"major"`` when that lowest score is below ``major_below``, else
``"minor"``.

The threshold and minimum length are chosen on a labelled dev set
(:func:`sigmoid_head.evaluation.spans.fit_span_config`) and saved beside the head as
``error_spans.json``; ``sigmoid-head score`` then adds ``errors`` to every record.
Pure Python and numpy (no torch).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SPANS_NAME = "error_spans.json"
"""File name of a saved :class:`SpanConfig` in a head directory."""


@dataclass
class SpanConfig:
    """How error spans are read off word scores."""

    method: str = "sigmoid"
    """Which method's word scores are used (sigmoid, softmax or boostedprob)."""
    threshold: float = 0.1
    """A word scored below it is an error word."""
    min_words: int = 1
    """The shortest span reported, in words."""
    major_below: float = 0.01
    """A span whose lowest word score is below it has severity "major" (else "minor")."""
    dev: dict | None = None
    """How the values were chosen: the dev set's size and span precision/recall/F1."""

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1 or self.min_words < 1:
            raise ValueError("threshold must be in (0, 1] and min_words >= 1")

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / SPANS_NAME
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> SpanConfig | None:
        """The config saved in a head directory, or None when there is none."""
        path = Path(directory) / SPANS_NAME
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


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


def find_errors(text: str, words: Sequence[dict], config: SpanConfig) -> list[dict[str, Any]]:
    """Error spans of one candidate.

    Args:
        text: the candidate text.
        words: ``{"word", <method>: score, ...}`` per word, in order (a record's ``words``).
        config: threshold, minimum length, method, severity cut.

    Returns:
        ``{"text", "start", "end", "confidence", "severity"}`` per span, in text order.
    """
    offsets = word_offsets(text, [w["word"] for w in words])
    runs: list[list[int]] = []
    prev = -2
    for j, (w, off) in enumerate(zip(words, offsets, strict=True)):
        if off is None or float(w[config.method]) >= config.threshold:
            continue
        if j == prev + 1:
            runs[-1].append(j)
        else:
            runs.append([j])
        prev = j
    errors = []
    for run in runs:
        if len(run) < config.min_words:
            continue
        start, end = offsets[run[0]][0], offsets[run[-1]][1]  # type: ignore[index]
        low = min(float(words[j][config.method]) for j in run)
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
