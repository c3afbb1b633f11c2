"""WMT word-level QE gold beyond MT word tags: gap tags and source tags, and their metrics.

Two layouts are read, both into :class:`WmtItem` (a :class:`.gold_formats.GoldItem` with
the source tags beside it):

* plain tags files, one line per sentence, OK/BAD separated by spaces (the MLQE-PE /
  WMT 2020 layout: MT tags with gaps interleaved, ``2n + 1`` tags, or MT word tags only;
  source tags one per source word);
* the WMT 2021 gold "long" layout, one row per tag, tab-separated:
  ``language-pair  system  type  sentence-id  word-id  word  tag`` with ``type`` one of
  ``mt``, ``gap``, ``source`` (files ``task2_wordlevel_{mt,gaps,src}.tags``).

The MT text is the tokenized MT file (one sentence per line, words split on whitespace);
its word count must match the tags. Each *run* of adjacent BAD MT words becomes one gold
error span, as predictions from word scores are runs (:func:`.spans.find_errors`).

Gaps (WMT 2018-2021): gap ``i`` sits before MT word ``i`` (gap ``n`` after the last word)
and is BAD when words are missing there. A causal LM scores tokens, not gaps; the proxy
used here (:func:`gap_scores`) is the score of the word that follows the gap, and of the
end of the text for the last gap when the records carry one (else 1.0, "OK"). Gap MCC is
reported on its own, as WMT did (never pooled with the word tags).

Source tags: the head scores the MT side only. When score records carry no source-word
scores the source tags are counted and :data:`NO_SOURCE_SCORES` says so plainly; when a
caller supplies per-source-word OK scores (:func:`source_metrics`), they are evaluated
like MT words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.records import read_lines
from .gold_formats import GoldItem, is_long_tags, read_long_tags, whitespace_words  # noqa: F401 - read_long_tags re-exported
from .span_metrics import mcc, word_metrics

NO_SOURCE_SCORES = (
    "source tags are counted but not evaluated: the head (and every "
    "softmax-side baseline) scores the MT words given the source, not the "
    "source words, so it gives no source-word scores"
)


@dataclass
class WmtItem(GoldItem):
    """A :class:`GoldItem` with the WMT source-word tags (1 = BAD), when read."""

    source_bad: list[int] | None = None


def _tag(t: str, where: str) -> int:
    u = t.strip().upper()
    if u not in ("OK", "BAD"):
        raise ValueError(f"{where}: unknown tag {t!r}; expected OK or BAD")
    return int(u == "BAD")


def _lines(path: str | Path) -> list[str]:
    lines = list(read_lines(path))
    return lines[:-1] if lines and lines[-1] == "" else lines


def _per_sentence(path: str | Path | None, kind: str, n: int) -> list[list[int] | None]:
    """Tags of one kind for sentences 0..n-1 from either layout (None: no file)."""
    if path is None:
        return [None] * n
    if is_long_tags(path):
        table = read_long_tags(path).get(kind, {})
        return [table.get(k, []) for k in range(n)]
    rows = [
        [_tag(t, f"{path}:{k + 1}") for t in line.split()] for k, line in enumerate(_lines(path))
    ]
    if len(rows) != n:
        raise ValueError(f"{path}: {len(rows)} tag lines for {n} sentences")
    return list(rows)


def run_spans(text: str, bad: Sequence[int]) -> list[dict]:
    """One span per run of adjacent BAD whitespace words of ``text`` (an OK word ends a run)."""
    out: list[dict] = []
    cur: dict | None = None
    for (start, end), b in zip(whitespace_words(text), bad, strict=True):
        if b:
            cur = cur or {"start": start, "end": end, "severity": None, "category": None}
            cur["end"] = end
        elif cur is not None:
            out.append(cur)
            cur = None
    return [*out, cur] if cur is not None else out


def read_wmt_word_level(
    mt: str | Path,
    mt_tags: str | Path,
    *,
    gap_tags: str | Path | None = None,
    source: str | Path | None = None,
    source_tags: str | Path | None = None,
) -> list[WmtItem]:
    """WMT word-level gold (either layout, see the module docstring).

    Args:
        mt: tokenized MT, one sentence per line (the words the tags refer to).
        mt_tags: MT word tags (plain: word tags or ``2n + 1`` interleaved with gaps; long).
        gap_tags: gap tags (long layout, or plain ``n + 1`` per line), when separate.
        source: tokenized source, one sentence per line (group ids; source tags' words).
        source_tags: source word tags (plain or long).

    Raises:
        ValueError: counts that do not match, naming the sentence.
    """
    texts = _lines(mt)
    n = len(texts)
    sources = _lines(source) if source else [None] * n
    if len(sources) != n:
        raise ValueError(f"{source}: {len(sources)} lines for {n} MT lines")
    words_t = _per_sentence(mt_tags, "mt", n)
    gaps_t = _per_sentence(gap_tags, "gap", n)
    src_t = _per_sentence(source_tags, "source", n)
    items = []
    for k, text in enumerate(texts):
        w, g, s = words_t[k], gaps_t[k], src_t[k]
        n_words = len(whitespace_words(text))
        if g is None and len(w) == 2 * n_words + 1:
            g, w = w[0::2], w[1::2]
        if len(w) != n_words:
            raise ValueError(f"{mt_tags}: sentence {k}: {len(w)} MT tags for {n_words} words")
        if g is not None and len(g) != n_words + 1:
            raise ValueError(
                f"sentence {k}: {len(g)} gap tags for {n_words} words (expected {n_words + 1})"
            )
        if s is not None and sources[k] is not None and len(s) != len(sources[k].split()):
            raise ValueError(
                f"{source_tags}: sentence {k}: {len(s)} source tags for "
                f"{len(sources[k].split())} source words"
            )
        group = sources[k] if sources[k] is not None else str(k)
        items.append(
            WmtItem(
                text,
                run_spans(text, w),
                group,
                sources[k],
                list(w),
                None if g is None else list(g),
                source_bad=s,
            )
        )
    return items


# ----------------------------------------------------------------------------- gaps
def gap_scores(word_ok: Sequence[float], end_ok: float | None = None) -> np.ndarray:
    """(W + 1,) proxy OK score of every gap: the score of the word after it; the last gap
    gets ``end_ok`` (the end-of-text score) or 1.0."""
    w = np.asarray(word_ok, dtype=np.float64)
    return np.r_[w, 1.0 if end_ok is None else float(end_ok)]


def gap_metrics(
    scores: Sequence[np.ndarray], gold: Sequence[Sequence[int]], threshold: float
) -> dict[str, float]:
    """Gap MCC, F1-BAD, ROC-AUC, AP over all gaps, plus the all-OK baseline's MCC (0) and
    the counts."""
    s = np.concatenate([np.asarray(x, dtype=np.float64) for x in scores]) if scores else np.zeros(0)
    g = np.concatenate([np.asarray(x, dtype=np.float64) for x in gold]) if gold else np.zeros(0)
    if s.shape != g.shape:
        raise ValueError(f"{s.size} gap scores for {g.size} gap tags")
    out = {f"gap_{k}": v for k, v in word_metrics(s, g, threshold).items()}
    out |= {
        "gap_mcc_all_ok": mcc(np.zeros_like(g), g),
        "n_gaps": float(g.size),
        "n_bad_gaps": float(g.sum()),
    }
    return out


def source_metrics(
    scores: Sequence[Sequence[float]] | None, items: Sequence[WmtItem], threshold: float
) -> dict[str, float] | str:
    """Source-word metrics when source-word OK scores are given, else the plain message
    :data:`NO_SOURCE_SCORES` (with the counts)."""
    gold = [it.source_bad for it in items if it.source_bad is not None]
    n, bad = sum(len(g) for g in gold), sum(sum(g) for g in gold)
    if scores is None:
        return f"{NO_SOURCE_SCORES} ({n} source words, {bad} BAD)"
    s = np.concatenate([np.asarray(x, dtype=np.float64) for x in scores])
    g = np.concatenate([np.asarray(x, dtype=np.float64) for x in gold])
    if s.shape != g.shape:
        raise ValueError(f"{s.size} source-word scores for {g.size} source tags")
    return {f"src_{k}": v for k, v in word_metrics(s, g, threshold).items()}
