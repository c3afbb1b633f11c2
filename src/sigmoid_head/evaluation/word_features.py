"""The features of :mod:`.word_model`: what one scoring pass gives each scored word.

For every per-word method of the rows, the log of the word's score and of its left and
right neighbours' (``word:<m>``, ``left:<m>``, ``right:<m>``); the row's mean log-probability
per method, mean entropy and mean dominant count where every row has them (``row:<column>``);
the word's length, whether it has no letter or digit, its relative position and the log word
count (:data:`SHAPE`). Numpy only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FLOOR = 1e-12
"""Word scores are floored here before their log."""
OUTPUTS = ("learned_word", "learned_word_bad")
"""What :meth:`.word_model.WordModel.apply` adds to each word (never features)."""
ROW_EXTRA = ("entropy_mean", "dominant_mean")
"""Row columns used when every row has them, beside each method's ``<m>_mean_log``."""
SHAPE = ("length", "no_alnum", "position", "log_words")
"""Features of the word's place and form."""
_SKIP = {"word", "start", "end", *OUTPUTS}


_ALNUM = re.compile(r"[^\W_]")  # a word character that is not "_": exactly str.isalnum()


def no_alnum(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` has no letter or digit (no character whose
    ``str.isalnum()`` is true), found by one regular-expression search, without a slice."""
    return _ALNUM.search(text, start, end) is None


def word_methods(rows: Sequence[Mapping]) -> list[str]:
    """The per-word methods every word of every row has as a finite number (sorted)."""
    names: set[str] | None = None
    for r in rows:
        for w in r.get("words") or []:
            have = {k for k, v in w.items() if k not in _SKIP and finite(v)}
            names = have if names is None else names & have
    return sorted(names or ())


def finite(v: Any) -> bool:
    if type(v) is float:  # the common case, first: called for every word of every row
        return math.isfinite(v)
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def row_columns(rows: Sequence[Mapping], methods: Sequence[str]) -> list[str]:
    cols = [f"{m}_mean_log" for m in methods] + list(ROW_EXTRA)
    return [c for c in cols if all(finite(r.get(c)) for r in rows)]


def _log(x: np.ndarray) -> np.ndarray:
    return np.log(np.clip(x, FLOOR, 1.0))


def scored_words(row: Mapping, where: str) -> list[Mapping]:
    words = row.get("words")
    if not isinstance(words, list) or any(not isinstance(w, Mapping) or not finite(w.get("start"))
                                          or not finite(w.get("end")) for w in words):
        raise ValueError(f"{where}: per-word scores with their offsets are needed (score the "
                         "rows with --with-tokens)")
    return words


def row_features(row: Mapping, names: Sequence[str], where: str = "row") -> np.ndarray | None:
    """(W, F) features of one row's scored words, in the order of ``names`` (None when the
    row lacks one: a method missing from a word, or a row column)."""
    words = scored_words(row, where)
    n = len(words)
    cols = []
    cache: dict[str, np.ndarray] = {}
    text = str(row.get("candidate") or "")
    for name in names:
        kind, _, key = name.partition(":")
        if kind in ("word", "left", "right"):
            if key not in cache:
                if not all(finite(w.get(key)) for w in words):
                    return None
                cache[key] = _log(np.asarray([float(w[key]) for w in words], dtype=np.float64))
            own = cache[key]
            if kind == "word" or n == 0:
                cols.append(own)
            else:
                cols.append(np.concatenate((own[:1], own[:-1]) if kind == "left" else (own[1:], own[-1:])))
        elif kind == "row":
            if not finite(row.get(key)):
                return None
            cols.append(np.full(n, float(row[key])))
        elif name == "length":
            cols.append(np.asarray([float(w["end"]) - float(w["start"]) for w in words]))
        elif name == "no_alnum":
            cols.append(np.asarray([no_alnum(text, int(w["start"]), int(w["end"])) for w in words],
                                   dtype=np.float64))
        elif name == "position":
            cols.append(np.arange(n, dtype=np.float64) / max(n - 1, 1))
        elif name == "log_words":
            cols.append(np.full(n, math.log(n + 1)))
        else:
            raise ValueError(f"unknown feature {name!r}")
    return np.stack(cols, axis=1) if n else np.zeros((0, len(names)))


def word_errors(row: Mapping, spans: Sequence[Sequence[int]], where: str = "row") -> np.ndarray:
    """(W,) 1 where a scored word overlaps a gold error span."""
    words = scored_words(row, where)
    return np.asarray([any(int(s) < float(w["end"]) and float(w["start"]) < int(e) for s, e in spans)
                       for w in words], dtype=np.float64)
