"""Readers of score and gold files: numeric columns by name, one row per item.

Every text file is read by :mod:`sigmoid_head.data.records` (UTF-8, a BOM dropped, lines
split at ``"\n"`` only). Needs numpy only: ``sigmoid-head evaluate`` never imports torch.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import read_jsonl, read_lines

GOLD_FIELDS = ("gold", "score", "label", "quality", "human", "da", "mqm")
"""Gold columns looked for, in this order, when a gold file has several numeric ones."""


def read_score_columns(path: str | Path) -> dict[str, np.ndarray]:
    """Numeric columns of a score JSONL (as written by ``sigmoid-head score/generate``).

    Lists (``tokens``, ``words``), strings and booleans are skipped; a column must be
    numeric on every row.
    """
    rows = read_jsonl(path, objects=True)
    if not rows:
        raise ValueError(f"{path}: no rows")
    out: dict[str, np.ndarray] = {}
    for key in rows[0]:
        vals = [r.get(key, _ABSENT) for r in rows]
        numbers = [isinstance(v, int | float) and not isinstance(v, bool) for v in vals]
        if all(n or v is None for n, v in zip(numbers, vals, strict=True)) and any(numbers):
            # null is how a NaN score is written (always-valid JSON): read back as NaN,
            # so that the column is reported ("NaN or inf"), not silently dropped
            out[key] = np.asarray([np.nan if v is None else v for v in vals], dtype=np.float64)
    return out


_ABSENT = object()
"""A field a row does not have (unlike null, a column missing in a row is not numeric)."""


def _numeric(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def read_external_scores(
    path: str | Path, fields: Sequence[str] | None = None, prefix: str = ""
) -> dict[str, np.ndarray]:
    """Score columns computed elsewhere (e.g. CometKiwi), one row per item.

    Args:
        path: ``.jsonl`` (numeric fields of each object), ``.csv``/``.tsv`` (numeric
            columns, with a header) or ``.txt`` (one number per line; the column is named
            after the file's stem).
        fields: keep only these columns (default: every column numeric on every row).
        prefix: prepended to every column name.

    Returns:
        Column name -> (N,) float array.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".gz":  # read_lines gunzips: the suffix before .gz tells the format
        suffix = path.with_suffix("").suffix.lower()
    if suffix == ".tags":
        raise ValueError(f"{path}: a WMT word-tags file holds no scores; as --gold it needs "
                         "word scores (score --with-tokens) and is read with --gold-format "
                         "wmt-tags")
    if suffix not in (".txt", ".csv", ".tsv", ".jsonl", ".json"):
        raise ValueError(f"{path}: use .jsonl, .csv, .tsv or .txt (optionally .gz)")
    lines = [ln for ln in read_lines(path) if ln.strip()]
    if suffix == ".txt":
        rows = [{Path(path.name.removesuffix(".gz")).stem: ln.strip()} for ln in lines]
    elif suffix in (".csv", ".tsv"):
        rows = list(csv.DictReader(lines, delimiter="\t" if suffix == ".tsv" else ","))
    elif suffix in (".jsonl", ".json"):
        rows = read_jsonl(path, objects=True)
    else:
        raise ValueError(f"{path}: use .jsonl, .csv, .tsv or .txt")
    if not rows:
        raise ValueError(f"{path}: no rows")
    names = list(fields) if fields else [k for k in rows[0] if _numeric(rows[0][k]) is not None]
    out = {}
    for name in names:
        vals = [_numeric(r.get(name)) for r in rows]
        if any(v is None for v in vals):
            if fields:
                raise ValueError(f"{path}: column {name!r} is missing or not numeric in some row")
            continue
        out[prefix + name] = np.asarray(vals, dtype=np.float64)
    if not out:
        raise ValueError(f"{path}: no numeric column found")
    return out


def read_gold(path: str | Path, field: str | None = None) -> np.ndarray:
    """(N,) gold quality from ``.txt`` (one number per line), ``.jsonl`` or ``.csv``/``.tsv``.

    Args:
        path: the gold file.
        field: JSONL field / CSV column; default the first of :data:`GOLD_FIELDS`
            present, or the only numeric column.
    """
    cols = read_external_scores(path)
    if field is not None:
        if field not in cols:
            raise ValueError(f"{path}: no numeric gold field {field!r}; have {sorted(cols)}")
        return cols[field]
    if len(cols) == 1:
        return next(iter(cols.values()))
    for name in GOLD_FIELDS:
        if name in cols:
            return cols[name]
    raise ValueError(f"{path}: several numeric columns {sorted(cols)}; name one with --gold-field")
