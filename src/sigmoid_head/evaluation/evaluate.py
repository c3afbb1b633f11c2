"""Evaluate QE score files against gold quality: load, orient, correlate, report.

Every method's scores are oriented so that higher = better quality before any metric
is computed: uncertainties listed in :data:`UNCERTAINTIES` (mean token entropy) are
negated and shown as ``-<name>``. Probability-valued scores (``sigmoid``,
``softmax``, ``boostedprob`` products, ``self_judge``) stay as they are, so BCE/ECE
apply to them; log-valued ones (``*_logprob``, ``*_mean_log``, ``mc_*``) get the
rank/correlation metrics only. Each ``<x>_mean_log`` column also yields ``<x>_geomean``
(its exponential: the geometric mean of the token probabilities), a length-normalised
probability: docs/results.md shows it is a much stronger softmax baseline than the product.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import read_jsonl
from .readers import read_external_scores, read_gold, read_score_columns

UNCERTAINTIES = {"entropy_mean": -1.0}
"""Columns that measure uncertainty: multiplied by this sign (and renamed ``-name``)."""
DEFAULT_METHODS = (
    "sigmoid",
    "softmax",
    "boostedprob",
    "sigmoid_geomean",
    "softmax_geomean",
    "boostedprob_geomean",
    "entropy_mean",
    "mc_softmax",
    "mc_sigmoid",
    "self_judge",
    *(f"{m}_{k}" for m in ("sigmoid", "softmax", "boostedprob") for k in ("platt", "isotonic")),
)
"""Methods evaluated when none are named (those present), plus every extra column."""


def add_geomeans(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Add ``<x>_geomean = exp(<x>_mean_log)`` for every ``<x>_mean_log`` column (in place).

    The geometric mean of the token probabilities lies in [0, 1] like the product, so BCE
    applies, but it does not fall with length. Existing columns are never overwritten.
    """
    for key in [k for k in columns if k.endswith("_mean_log")]:
        columns.setdefault(f"{key[: -len('_mean_log')]}_geomean", np.exp(columns[key]))
    return columns


def orient(columns: dict[str, np.ndarray], methods: Sequence[str]) -> dict[str, np.ndarray]:
    """Select methods and orient them so that higher = better quality.

    Args:
        columns: column name -> (N,) raw scores.
        methods: names to keep; an uncertainty may be named as ``name`` or ``-name``.

    Returns:
        Display name -> (N,) oriented scores (uncertainties negated, shown as ``-name``).
    """
    out = {}
    for m in methods:
        raw = m[1:] if m.startswith("-") and m[1:] in UNCERTAINTIES else m
        if raw not in columns:
            raise ValueError(f"no scores for method {m!r}; available: {sorted(columns)}")
        sign = UNCERTAINTIES.get(raw, 1.0)
        out[f"-{raw}" if sign < 0 else raw] = sign * columns[raw]
    return out


def _source_ids(scores: object, field: str) -> list[Any]:
    """Each row's ``field`` of a score JSONL: the source id the bootstrap resamples by."""
    if isinstance(scores, dict):
        raise ValueError("groups as a field name needs a score file; pass the ids instead")
    ids = [r.get(field) for r in read_jsonl(scores, objects=True)]
    if any(i is None for i in ids):
        raise ValueError(f"{scores}: field {field!r} is missing in some row")
    return [str(i) for i in ids]


def evaluate_scores(
    scores: str | Path | dict[str, np.ndarray],
    gold: str | Path | np.ndarray,
    *,
    gold_field: str | None = None,
    extra_scores: Sequence[str | Path] = (),
    methods: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    out_dir: str | Path | None = None,
    ci: bool = True,
    n_boot: int = 1000,
    groups: str | Sequence[Any] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """Correlate QE scores with gold quality; optionally write the report files.

    Args:
        scores: a score JSONL path, or column name -> (N,) raw scores.
        gold: a gold file path (see :func:`read_gold`) or an (N,) array.
        gold_field: the gold file's field/column.
        extra_scores: files of externally computed scores (e.g. CometKiwi), merged by row.
        methods: methods to compare (default: :data:`DEFAULT_METHODS` present + extras).
        metrics: metric names of ``sigmoid_head.evaluation.metrics.METRICS`` (default: all that fit).
        out_dir: write results.md, results.csv, scatter.png (+ reliability.png for
            binary gold) here.
        ci: bootstrap confidence intervals.
        n_boot: bootstrap resamples.
        groups: each item's source id (e.g. the verse a candidate translates), or the name
            of a score-file field holding it: the bootstrap then resamples sources, keeping
            a source's candidates together. None: items are resampled.

    Returns:
        The metric rows and the terminal table.
    """
    from .metrics import evaluate_methods
    from .report import format_table, write_report

    cols = add_geomeans(dict(scores) if isinstance(scores, dict) else read_score_columns(scores))
    g = (
        np.asarray(gold, dtype=np.float64)
        if isinstance(gold, np.ndarray | list)
        else read_gold(gold, gold_field)
    )
    extra: list[str] = []
    for path in extra_scores:
        new = read_external_scores(path)
        extra += [k for k in new if k not in extra]
        cols.update(new)
    for name, v in cols.items():
        if v.shape != g.shape:
            raise ValueError(f"{name!r} has {v.size} rows but the gold has {g.size}")
    if methods is None:
        methods = [m for m in DEFAULT_METHODS if m in cols] + [
            e for e in extra if e not in DEFAULT_METHODS
        ]
    if not methods:
        raise ValueError(f"no method to evaluate; columns: {sorted(cols)}")
    oriented = orient(cols, methods)
    if isinstance(groups, str):
        groups = _source_ids(scores, groups)
    rows = evaluate_methods(oriented, g, metrics=list(metrics) if metrics else None, ci=ci,
                            n_boot=n_boot, groups=None if groups is None else np.asarray(groups))
    if out_dir is not None:
        write_report(rows, oriented, g, out_dir, metrics=list(metrics) if metrics else None)
    return rows, format_table(rows, list(metrics) if metrics else None)
