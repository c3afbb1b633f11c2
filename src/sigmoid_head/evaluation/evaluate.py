"""Evaluate QE score files against gold quality: load, orient, correlate, report.

Every method's scores are oriented so that higher = better quality before any metric
is computed: uncertainties (the sequence columns of :mod:`sigmoid_head.registry.columns` where
higher = worse: the mean token entropy) are negated and shown as ``-<name>``. By default
the sequence scores of the registered methods (:mod:`sigmoid_head.registry.methods`) are evaluated
as numbers in [0, 1], so BCE/ECE apply to them too: the products, the minima and
``<method>_geo_mean``, the length-normalised score as the geometric mean of the token
probabilities (``exp(<method>_mean_log)``, derived here: :func:`derive_columns`);
docs/results.md shows the length-normalised softmax is a much stronger baseline than the
product. Log-valued columns (``<method>_mean_log`` itself, ``*_logprob``, ``mc_*``) get the
rank/correlation metrics only, when named. Score files of earlier releases
(``<method>_geomean`` columns) are read under today's names. Under its table ``evaluate``
names the mix that made ``combined`` when the score file's run recorded it
(:func:`~sigmoid_head.evaluation.combination.read_mix_record`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.records import read_jsonl
from ..registry import columns as column_registry
from ..registry import methods as registry
from .combination import read_mix_record
from .readers import read_external_scores, read_gold, read_score_columns


def __getattr__(name: str) -> object:
    if name == "UNCERTAINTIES":  # the column registry's, read when asked
        return column_registry.uncertainties()
    if name == "OTHER_METHODS":
        return tuple(column_registry.evaluated_keys())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEFAULT_AGGREGATIONS = ("product", "mean_log", "min")
"""The aggregations of every registered method evaluated when none are named, each as a
number in [0, 1] (:meth:`~sigmoid_head.registry.methods.Aggregation.probability_key`: the
length-normalised score as ``<method>_geo_mean``)."""
COMBINED = "combined"
"""The combined score (the head mixed with a softmax-side score; the recommended one),
evaluated first when none are named."""


def default_methods() -> list[str]:
    """Methods evaluated when none are named (those present), plus every extra column:
    ``combined``, each registered method's product, then each one's length-normalised
    score (``<method>_geo_mean``), then each one's minimum, the columns the column
    registry marks ``evaluate`` (:func:`sigmoid_head.registry.columns.evaluated_keys`:
    ``entropy_mean``, ``mc_<method>``, ``self_judge``, a plugin's baseline, ...), then the
    calibrated probabilities."""
    from .calibration import KINDS

    keys = [registry.AGGREGATIONS[a].probability_key(m.name) for a in DEFAULT_AGGREGATIONS
            for m in registry.methods() if a in m.aggregations]
    return [COMBINED, *keys, *column_registry.evaluated_keys(),
            *(f"{m}_{k}" for m in registry.names() for k in KINDS)]


def derive_columns(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Columns of older files under today's names (:func:`sigmoid_head.registry.methods.upgrade_columns`),
    and each registered method's length-normalised score on both scales, in place:
    ``<method>_geo_mean = exp(<method>_mean_log)``, or, for a file holding only the
    former, ``<method>_mean_log`` its log. A column the file holds is kept as it is (never
    converted twice).

    Raises:
        ValueError: a ``<method>_geo_mean`` column outside [0, 1] (a log under the name of
            the probability).
    """
    registry.upgrade_columns(columns)
    for m in registry.methods():
        for agg in (registry.AGGREGATIONS[a] for a in m.aggregations):
            log_key, p_key = agg.key(m.name), agg.probability_key(m.name)
            if p_key == log_key:
                continue
            if p_key in columns:
                v = columns[p_key]
                if np.any((v < 0) | (v > 1)):  # NaN compares false: reported by the metrics
                    raise ValueError(f"{p_key} holds values outside [0, 1]; a mean token "
                                     f"log-probability is named {log_key}")
                columns.setdefault(log_key, np.log(np.maximum(v, 1e-300)))
            elif log_key in columns:
                columns[p_key] = np.exp(columns[log_key])
    return columns


def _shown(key: str) -> str:
    """The default row of a column: a registered method's aggregation as a number in
    [0, 1] (``softmax_mean_log`` -> ``softmax_geo_mean``), any other column as it is."""
    found = registry.aggregation_of(registry.canonical(key))
    return key if found is None else found[1].probability_key(found[0].name)


def orient(columns: dict[str, np.ndarray], methods: Sequence[str]) -> dict[str, np.ndarray]:
    """Select methods and orient them so that higher = better quality.

    Args:
        columns: column name -> (N,) raw scores.
        methods: names to keep; an uncertainty may be named as ``name`` or ``-name``.

    Returns:
        Display name -> (N,) oriented scores (uncertainties negated, shown as ``-name``).
    """
    out = {}
    uncertain = column_registry.uncertainties()
    for m in map(registry.probability_key, methods):
        raw = m[1:] if m.startswith("-") and m[1:] in uncertain else m
        if raw not in columns:
            raise ValueError(f"no scores for method {m!r}; available: {sorted(columns)}")
        sign = uncertain.get(raw, 1.0)
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
    width: int = 100,
) -> tuple[list[dict[str, Any]], str]:
    """Correlate QE scores with gold quality; optionally write the report files.

    Args:
        scores: a score JSONL path, or column name -> (N,) raw scores.
        gold: a gold file path (see :func:`read_gold`) or an (N,) array.
        gold_field: the gold file's field/column.
        extra_scores: files of externally computed scores (e.g. CometKiwi), merged by row.
        methods: methods to compare (default: :func:`default_methods` present + extras).
        metrics: metric names of ``sigmoid_head.evaluation.metrics.METRICS`` (default: all that fit).
        out_dir: write results.md, results.csv, scatter.png (+ reliability.png for
            binary gold) here.
        ci: bootstrap confidence intervals.
        n_boot: bootstrap resamples.
        groups: each item's source id (e.g. the verse a candidate translates), or the name
            of a score-file field holding it: the bootstrap then resamples sources, keeping
            a source's candidates together. None: items are resampled.
        width: the terminal table's width: a wider one is shown in parts (0: one table).

    Returns:
        The metric rows and the terminal table (with, under it, the line naming the mix
        that made ``combined`` when it is evaluated from a score file).
    """
    from .metrics import evaluate_methods
    from .report import format_table, write_report

    cols = dict(scores) if isinstance(scores, dict) else read_score_columns(scores)
    cols = derive_columns(cols)
    g = (
        np.asarray(gold, dtype=np.float64)
        if isinstance(gold, np.ndarray | list)
        else read_gold(gold, gold_field)
    )
    if g.size == 0:
        raise ValueError(f"{gold if isinstance(gold, (str, Path)) else 'the gold'}: no gold "
                         "values (an empty file?): nothing to evaluate")
    extra: list[str] = []
    for path in extra_scores:
        new = read_external_scores(path)
        shown = [_shown(k) for k in new]  # a length-normalised score as its geometric mean
        extra += [k for k in dict.fromkeys(shown) if k not in extra]
        cols.update(derive_columns(new))
    for name, v in cols.items():
        if v.shape != g.shape:
            raise ValueError(f"{name!r} has {v.size} rows but the gold has {g.size}")
    if methods is None:
        defaults = default_methods()
        methods = [m for m in defaults if m in cols] + [e for e in extra if e not in defaults]
    if not methods:
        raise ValueError(f"no method to evaluate; columns: {sorted(cols)}")
    oriented = orient(cols, methods)
    if isinstance(groups, str):
        groups = _source_ids(scores, groups)
    rows = evaluate_methods(oriented, g, metrics=list(metrics) if metrics else None, ci=ci,
                            n_boot=n_boot, groups=None if groups is None else np.asarray(groups))
    under = [] if COMBINED not in oriented or isinstance(scores, dict) else \
        [read_mix_record(scores, g.size)[1]]
    under += small_sample_note(g.size, None if groups is None else len(set(groups)), ci)
    if out_dir is not None:
        write_report(rows, oriented, g, out_dir, metrics=list(metrics) if metrics else None,
                     lines=under)
    return rows, format_table(rows, list(metrics) if metrics else None,
                              max_width=width) + "".join(f"{line}\n" for line in under)


SMALL_SAMPLE = 30
"""Fewer resampled units (items, or sources with ``groups``) than this: the intervals are
flagged as rough."""


def small_sample_note(n_items: int, n_sources: int | None, ci: bool) -> list[str]:
    """The line flagging intervals from fewer than :data:`SMALL_SAMPLE` resampled units
    (empty when there are enough, or no intervals)."""
    n, unit = (n_items, "items") if n_sources is None else (n_sources, "sources")
    if not ci or n >= SMALL_SAMPLE:
        return []
    return [f"note: only {n} {unit} (fewer than {SMALL_SAMPLE}): the bootstrap intervals are "
            "rough and may span the whole range"]
