"""Evaluate per-word scores against word tags and error spans (:mod:`.gold_formats`).

Input: score records with ``candidate`` and ``words`` (``score --with-tokens``), one per
gold item, in the same order, the candidate equal to the gold text. For every method
with word scores (``sigmoid``, ``softmax``, ``boostedprob``, ...):

* word level: every whitespace word of the gold text is one decision, BAD when its gold
  tag is BAD (word-tag formats) or when it overlaps a gold error span (span formats).
  Its score is the lowest score of the scored words that overlap it (located by their
  ``start``/``end`` offsets). MCC and F1-BAD use a threshold per method (a word scored
  below it is BAD); ROC-AUC and AP use the scores themselves;
* span level: the method's error spans (:func:`.spans.find_errors` at the same
  threshold, spans of >= 1 word) against the gold spans: character and MPP
  precision/recall/F1 (:mod:`.span_metrics`); the records' own ``errors`` (from
  ``score --head`` with saved span settings) are evaluated as the row ``errors``;
* recall per gold severity and per gold category (character recall and the share of
  gold spans touched by a predicted span), where the gold has them.

Every figure has a 95% interval from resampling sources (:func:`.bootstrap.clustered_ci`).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .bootstrap import clustered_ci
from .gold_formats import GoldItem, whitespace_words
from .span_metrics import (
    SEVERITY_WEIGHTS,
    WeightedWords,
    merge_touching,
    span_counts,
    span_scores,
)
from .spans import SpanConfig, char_set, find_errors, word_offsets

WORD_COLUMNS = ("mcc", "f1_bad", "roc_auc", "ap")
SPAN_COLUMNS = ("char_p", "char_r", "char_f1", "mpp_p", "mpp_r", "mpp_f1")


def _word_boxes(rec: dict) -> list[tuple[int, int] | None]:
    words = rec.get("words") or []
    if words and "start" in words[0]:
        return [(int(w["start"]), int(w["end"])) for w in words]
    return word_offsets(rec["candidate"], [w["word"] for w in words])


def word_runs(rec: dict) -> tuple[tuple[int, ...], ...]:
    """Per whitespace word of the candidate, the indices of the scored words overlapping it.

    Found once per (candidate, offsets): evaluations ask again for every method, and the
    key (cheaper to build than the search) is the record's content, not its identity."""
    words = rec["words"]
    boxes = _word_boxes(rec)
    if len(boxes) != len(words):
        raise ValueError(f"{len(words)} scored words but {len(boxes)} offsets")
    return _runs(rec["candidate"], tuple(boxes))


# an entry held about 4 KiB on the MQM TED rows (17 words a row; tracemalloc), so some 33 MiB
# when full; longer rows hold more
@functools.lru_cache(maxsize=8192)
def _runs(candidate: str, boxes: tuple[tuple[int, int] | None, ...]) -> tuple[tuple[int, ...], ...]:
    placed = [(b[0], b[1], k) for k, b in enumerate(boxes) if b is not None]
    starts, ends = [b[0] for b in placed], [b[1] for b in placed]
    # plain Python: the lists are a sentence long, where numpy's per-call cost dominates
    ordered = (all(a <= b for a, b in zip(starts, starts[1:], strict=False))
               and all(a <= b for a, b in zip(ends, ends[1:], strict=False)))
    out = []
    for start, end in whitespace_words(candidate):
        # ordered: the overlapping boxes are one run, those ending after start and starting before end
        run = placed[bisect.bisect_right(ends, start):bisect.bisect_left(starts, end)] if ordered else placed
        out.append(tuple(k for b0, b1, k in run if b0 < end and start < b1))
    return tuple(out)


def gold_word_scores(rec: dict, method: str) -> np.ndarray:
    """(W,) score of every whitespace word of the candidate: the lowest score of the
    scored words overlapping it (1.0 where none does)."""
    return gold_word_scores_many(rec, (method,))[0]


def gold_word_scores_many(rec: dict, methods: Sequence[str]) -> list[np.ndarray]:
    """:func:`gold_word_scores` of several methods, the words' overlaps found once."""
    runs, words = word_runs(rec), rec["words"]
    # a run is mostly one scored word: taken directly, without min over a generator
    return [np.asarray([float(words[run[0]][m]) if len(run) == 1 else
                        min(float(words[k][m]) for k in run) if run else 1.0 for run in runs],
                       dtype=np.float64) for m in methods]


def gold_word_bad(item: GoldItem) -> np.ndarray:
    """(W,) 1 where a whitespace word of the gold text is BAD."""
    if item.word_bad is not None:
        return np.asarray(item.word_bad, dtype=np.float64)
    return np.asarray([any(s["start"] < e and b < s["end"] for s in item.spans)
                       for b, e in whitespace_words(item.text)], dtype=np.float64)


def check_pairs(rows: Sequence[dict], items: Sequence[GoldItem]) -> None:
    """Raise ValueError unless every record scores its gold item's text with word scores."""
    if len(rows) != len(items):
        raise ValueError(f"{len(rows)} scored items but {len(items)} gold items")
    if not items:
        raise ValueError("no gold items (an empty file?): nothing to evaluate")
    for k, (r, it) in enumerate(zip(rows, items, strict=True)):
        if "words" not in r:
            raise ValueError("word and span metrics need per-word scores: score with --with-tokens")
        if r.get("candidate") != it.text:
            raise ValueError(f"item {k + 1}: the scored candidate differs from the gold text "
                             f"({r.get('candidate')!r} vs {it.text!r})")


def word_methods(rows: Sequence[dict]) -> list[str]:
    """Methods with a numeric score in every word of the first record that has words."""
    first = next((r["words"][0] for r in rows if r.get("words")), {})
    return [k for k, v in first.items() if k not in ("word", "start", "end")
            and isinstance(v, int | float) and not isinstance(v, bool)]


def predicted_spans(rows: Sequence[dict], method: str, threshold: float) -> list[list[dict]]:
    """Every record's error spans from ``method``'s word scores below ``threshold``."""
    cfg = SpanConfig(method=method, threshold=threshold, min_words=1)
    return [find_errors(r["candidate"], r["words"], cfg) for r in rows]


def evaluate_method(rows: Sequence[dict], items: Sequence[GoldItem], preds: list[list[dict]],
                    method: str | None, threshold: float, *, severity_weighted: bool = False,
                    n_boot: int = 1000) -> dict[str, tuple[float, float, float]]:
    """Word metrics (when ``method`` names word scores) and span metrics of one method.

    Returns:
        Metric name -> (value, CI low, CI high).
    """
    weights = SEVERITY_WEIGHTS if severity_weighted else None
    texts = [it.text for it in items]
    gold, preds = [], list(preds)
    for k, it in enumerate(items):  # word tags: a run of BAD words is one span, both sides
        words = it.word_bad is not None
        gold.append(merge_touching(it.spans, it.text) if words else it.spans)
        preds[k] = merge_touching(preds[k], it.text) if words else preds[k]
    counts = span_counts(preds, gold, texts, weights)  # (N, 7)
    groups = np.asarray([it.group for it in items])
    if method is None:
        return clustered_ci(lambda idx: span_scores(counts[idx]), groups, n_boot)
    scores = [gold_word_scores(r, method) for r in rows]
    bad = [gold_word_bad(it) for it in items]
    for k, (s, b) in enumerate(zip(scores, bad, strict=True)):
        if s.shape != b.shape:
            raise ValueError(f"item {k + 1}: {b.size} gold word tags but {s.size} words")
    words = WeightedWords(scores, bad, threshold)  # ranked once, O(W) per resample

    def stat(idx: np.ndarray) -> dict[str, float]:
        drawn = np.bincount(idx, minlength=len(items))  # the words of item i count drawn[i] times
        return {**words.metrics(drawn), **span_scores(counts[idx])}

    return clustered_ci(stat, groups, n_boot)


def recall_by(items: Sequence[GoldItem], preds: Sequence[Sequence[dict]], key: str,
              n_boot: int = 1000) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Per value of the gold spans' ``key`` (severity or category): character recall and
    the share of gold spans touched by a predicted span, with clustered intervals."""
    values = sorted({str(s[key]) for it in items for s in it.spans if s.get(key)})
    groups = np.asarray([it.group for it in items])
    pred_chars = [char_set(p, it.text) for it, p in zip(items, preds, strict=True)]
    out = {}
    for v in values:
        rows = []
        for it, p, pc in zip(items, preds, pred_chars, strict=True):
            mine = [s for s in it.spans if str(s.get(key)) == v]
            gc = char_set(mine, it.text)  # the characters span_prf counts
            hit = sum(any(q["start"] < s["end"] and s["start"] < q["end"] for q in p) for s in mine)
            rows.append([len(pc & gc), len(gc), hit, len(mine)])
        arr = np.asarray(rows, dtype=np.float64)

        def stat(idx: np.ndarray, arr: np.ndarray = arr) -> dict[str, float]:
            tp, n, hit, n_spans = arr[idx].sum(0)
            return {"char_recall": tp / n if n else float("nan"),
                    "spans_hit": hit / n_spans if n_spans else float("nan"),
                    "n_spans": float(n_spans)}

        out[v] = clustered_ci(stat, groups, n_boot)
    return out


def evaluate_gold(rows: Sequence[dict], items: Sequence[GoldItem], *,
                  methods: Sequence[str] | None = None,
                  thresholds: Mapping[str, float] | None = None, default_threshold: float = 0.5,
                  severity_weighted: bool = False, n_boot: int = 1000) -> dict[str, Any]:
    """Word, span and per-severity/category figures of every method (module docstring).

    Returns:
        ``{"methods": {name: {metric: (value, lo, hi)}}, "thresholds", "by_severity",
        "by_category", "n_items", "n_words", "n_bad_words", "n_spans", "omissions"}``
        (per-severity/category figures of the first method).
    """
    check_pairs(rows, items)
    methods = list(methods) if methods else word_methods(rows)
    thr = {m: float((thresholds or {}).get(m, default_threshold)) for m in methods}
    out: dict[str, Any] = {"methods": {}, "thresholds": thr}
    first_preds = None
    for m in methods:
        preds = predicted_spans(rows, m, thr[m])
        first_preds = first_preds or preds
        out["methods"][m] = evaluate_method(rows, items, preds, m, thr[m],
                                            severity_weighted=severity_weighted, n_boot=n_boot)
    if all("errors" in r for r in rows):
        first_preds = [r["errors"] for r in rows]
        out["methods"]["errors"] = evaluate_method(rows, items, first_preds, None, 0.0,
                                                   severity_weighted=severity_weighted, n_boot=n_boot)
    preds = first_preds or [[] for _ in items]
    out["by_severity"] = recall_by(items, preds, "severity", n_boot)
    out["by_category"] = recall_by(items, preds, "category", n_boot)
    bad = [gold_word_bad(it) for it in items]
    out |= {"n_items": len(items), "n_sources": len({it.group for it in items}),
            "severity_weighted": severity_weighted, "n_words": int(sum(b.size for b in bad)),
            "n_bad_words": int(sum(b.sum() for b in bad)),
            "n_spans": sum(len(it.spans) for it in items),
            "omissions": sum(len(it.omissions) for it in items)}
    return out


def _cell(v: tuple[float, float, float], ci: bool) -> str:
    value, lo, hi = v
    if value != value:  # NaN
        return "–"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]" if ci and lo == lo else f"{value:.3f}"


def _count(v: tuple[float, float, float], ci: bool) -> str:
    return f"{v[0]:.0f}"


def _table(title: str, rows: Mapping[str, Mapping[str, tuple]], cols: Sequence[str],
           ci: bool) -> list[str]:
    cols = [c for c in cols if any(c in r for r in rows.values())]
    lines = [title, "", "| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(
            (_count if c.startswith("n_") else _cell)(r[c], ci) if c in r else "–" for c in cols)
            + " |")
    return [*lines, ""]


def format_gold_report(res: Mapping[str, Any], ci: bool = True) -> str:
    """Markdown tables of :func:`evaluate_gold`'s result (word, span, severity, category)."""
    thr = ", ".join(f"{m} < {t:g}" for m, t in res["thresholds"].items())
    weighted = "; MPP weighted by severity (minor 1, major 5, critical 10)" if res.get(
        "severity_weighted") else ""
    lines = [f"{res['n_items']} items ({res['n_sources']} sources), {res['n_words']} words "
             f"({res['n_bad_words']} BAD), {res['n_spans']} gold spans (+ {res['omissions']} "
             f"without a place); BAD / error span where the word score is {thr}{weighted}; "
             f"{'95% intervals over sources' if ci else 'no intervals'}", ""]
    words = {m: r for m, r in res["methods"].items() if "mcc" in r}
    if words:
        lines += _table("Word level (BAD = positive; higher = better)", words, WORD_COLUMNS, ci)
    lines += _table("Span level, characters and MPP (higher = better)", res["methods"],
                    SPAN_COLUMNS, ci)
    which = "errors" if "errors" in res["methods"] else next(iter(res["thresholds"]), "")
    for key in ("by_severity", "by_category"):
        if res.get(key):
            lines += _table(f"Recall {key.replace('_', ' ')} (spans of {which})", res[key],
                            ("char_recall", "spans_hit", "n_spans"), ci)
    return "\n".join(lines)


def parse_thresholds(text: str | None) -> tuple[dict[str, float], float | None]:
    """``"0.3"`` (every method) or ``"sigmoid=0.1,softmax=0.05"`` -> (per method, default)."""
    per: dict[str, float] = {}
    default = None
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        name, _, value = part.rpartition("=")
        try:
            v = float(value)
        except ValueError:
            raise ValueError(f"threshold {part!r}: expected a number or method=number") from None
        if name:
            per[name] = v
        else:
            default = v
    return per, default


def evaluate_gold_files(scores: str, gold: str, fmt: str | None = None, *,
                        mt: str | None = None, source: str | None = None,
                        methods: Sequence[str] | None = None, thresholds: str | None = None,
                        head: str | None = None, severity_weighted: bool = False,
                        ci: bool = True, n_boot: int = 1000) -> tuple[dict[str, Any], str]:
    """What ``sigmoid-head evaluate --gold-format ...`` runs: read, evaluate, format.

    Thresholds: ``thresholds`` (see :func:`parse_thresholds`), else the head folder's saved
    span settings (``calibrate --gold-spans``) for their method, else 0.5.
    """
    from .gold_check import check_threshold_methods, read_score_rows
    from .gold_formats import read_gold_items

    per, default = parse_thresholds(thresholds)
    rows = read_score_rows(scores, methods)  # every row and word checked: file:line, field
    check_threshold_methods(per, [*(methods or word_methods(rows)), "errors"])
    saved = SpanConfig.load(head) if head else None
    if saved is not None:
        per.setdefault(saved.method, saved.threshold)
    items = read_gold_items(gold, fmt, mt=mt, source=source)
    if not items:
        raise ValueError(f"{gold}: no gold items (an empty file?): nothing to evaluate")
    res = evaluate_gold(rows, items, methods=methods, thresholds=per,
                        default_threshold=0.5 if default is None else default,
                        severity_weighted=severity_weighted, n_boot=n_boot if ci else 1)
    return res, format_gold_report(res, ci)


def gold_spans(path: str, fmt: str | None = None, mt: str | None = None
               ) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """(texts, per text its gold ``(start, end)`` spans) of any gold format, for
    ``calibrate --gold-spans``."""
    from .gold_formats import read_gold_items

    items = read_gold_items(path, fmt, mt=mt)
    return [it.text for it in items], [[(s["start"], s["end"]) for s in it.spans] for it in items]
