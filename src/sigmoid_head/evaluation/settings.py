"""The settings of ``sigmoid-head evaluate`` and ``sigmoid-head calibrate``, by concern.

:class:`EvaluateConfig` and :class:`CalibrateConfig` are made of small dataclasses, one per
concern, each with the ``TITLE`` of its option group; the docstring under each field is
the option's help (:mod:`sigmoid_head.cli.options`). Numpy-free and torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..safe.finite import bounds, check_fields
from .gold_formats import FORMATS

GOLD_FORMATS = FORMATS
"""The gold layouts ``--gold-format`` names (every one the readers know; without it the
layout is detected from the file)."""


@dataclass
class EvaluateInputs:
    """The score files and the gold quality they are compared with."""

    TITLE: ClassVar[str] = "inputs"
    scores: str
    """Score .jsonl (from score/generate)."""
    gold: str
    """Gold .txt (one per line), .jsonl or .csv."""
    gold_field: str | None = None
    """Gold field/column name (default: the only numeric one, else the first of gold, score,
    label, quality, human, da, mqm present)."""
    extra_scores: list[str] = field(default_factory=list)
    """External score files (.jsonl/.csv/.txt, e.g. CometKiwi), merged by row."""


@dataclass
class EvaluateReport:
    """What is reported, and where."""

    TITLE: ClassVar[str] = "methods, metrics and report"
    methods: str | None = None
    """Comma-separated methods (default: all known present)."""
    metrics: str | None = None
    """Comma-separated metrics, e.g. pearson,spearman,bce (default: all)."""
    out_dir: str | None = None
    """Write results.md, results.csv and plots here (default: none, the table only)."""
    width: int = field(default=100, metadata=bounds(low=0, integer=True))
    """Terminal table width: a wider table is shown in parts of at most this many characters,
    the method column in each (0: one table, however wide; results.md is always one)."""


@dataclass
class EvaluateSpans:
    """Word tags and error spans as the gold."""

    TITLE: ClassVar[str] = "word tags and error spans (need scores from score --with-tokens)"
    gold_format: str | None = field(default=None, metadata={"choices": GOLD_FORMATS})
    """Gold word tags / error spans: WMT word-level .tags, ESA or MQM span JSONL, RAGTruth
    response.jsonl (default: detected from the file)."""
    gold_mt: str | None = None
    """wmt-tags: the MT text file (default: the tags file's .mt)."""
    gold_source: str | None = None
    """wmt-tags: the source file (intervals by source; default: none)."""
    thresholds: str | None = None
    """Word score below which a word is BAD: 0.3, or sigmoid=0.1,softmax=0.05 (default: the
    --head's saved span settings, else 0.5)."""
    head: str | None = None
    """Head folder whose saved error-span settings give the threshold (default: none)."""
    severity_weighted: bool = False
    """Weigh spans by severity in the MPP score (minor 1, major 5, critical 10)."""


@dataclass
class EvaluateBootstrap:
    """Bootstrap confidence intervals."""

    TITLE: ClassVar[str] = "confidence intervals"
    ci: bool = True
    """Bootstrap confidence intervals (--no-ci skips them)."""
    n_boot: int = field(default=1000, metadata=bounds(low=1, integer=True))
    """Bootstrap resamples."""
    groups: str | None = None
    """Score-file field with each row's source id (e.g. the verse): the bootstrap resamples
    sources, keeping their candidates together (default: rows resampled alone)."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class EvaluateConfig:
    """The settings of ``sigmoid-head evaluate``."""

    inputs: EvaluateInputs
    report: EvaluateReport = field(default_factory=EvaluateReport)
    spans: EvaluateSpans = field(default_factory=EvaluateSpans)
    bootstrap: EvaluateBootstrap = field(default_factory=EvaluateBootstrap)


@dataclass
class CalibrateDev:
    """The head and its labelled dev set."""

    TITLE: ClassVar[str] = "head and dev set"
    head: str
    """Head directory to save the calibration in."""
    scores: str
    """Dev score .jsonl (from score --with-tokens)."""
    gold: str | None = None
    """Dev labels: 1 = good, 0 = bad (.txt, .jsonl or .csv; default: none, then give
    --quality and/or --gold-spans)."""
    gold_field: str | None = None
    """Gold field/column name (default: the only numeric one, else the first of gold, score,
    label, quality, human, da, mqm present)."""
    quality: str | None = None
    """Dev quality, higher = better (e.g. chrF, human scores; .txt, .jsonl or .csv): fits the
    combined score only (Pearson); with --gold alone the combined score is fitted on the
    labels (ROC-AUC; default: none)."""
    methods: str | None = None
    """Methods to calibrate (comma-separated; default: every registered method in the
    scores)."""
    quality_model: bool = False
    """With --quality: also fit a learned segment quality score, ridge regression over every
    sequence score of the rows (the head's and the softmax side's), saved as
    quality_model.json when its cross-validated dev Pearson beats the best single score's;
    score and generate then add learned_quality to every row."""


@dataclass
class CalibrateSpans:
    """The error-span settings' gold."""

    TITLE: ClassVar[str] = "error spans"
    gold_spans: str | None = None
    """Dev error locations: .jsonl, one line per scored item, a list of [start, end]
    character spans of the candidate (or an object with 'error_spans'); or a file in one of
    the --gold-format layouts (default: no span settings fitted)."""
    gold_format: str | None = field(default=None, metadata={"choices": GOLD_FORMATS})
    """--gold-spans in a QE format: WMT word-level .tags (BAD words), ESA or MQM span JSONL,
    RAGTruth response.jsonl (default: detected; else the list-of-spans JSONL above)."""
    gold_mt: str | None = None
    """wmt-tags: the MT text file (default: the tags file's .mt)."""
    span_method: str = "auto"
    """Whose word scores give the spans (default: auto, the method with the best dev span F1
    among those in the scores)."""
    word_model: bool = False
    """With --gold-spans: also fit a learned word-level error detector, logistic regression
    over every word score of the rows (the head's and the softmax side's, each word's own and
    its neighbours') and the rows' mean scores, saved as word_model.json when its
    cross-validated dev word MCC beats the best single word score's; score and generate then
    add learned_word (and learned_word_bad) to every word and learned_word_errors to every
    row."""


@dataclass
class CalibrateTest:
    """A held-out check of the calibration."""

    TITLE: ClassVar[str] = "held-out check"
    test_scores: str | None = None
    """Held-out score .jsonl: report before/after on it (default: none)."""
    test_gold: str | None = None
    """Held-out labels for --test-scores (default: none; needed with --test-scores)."""


@dataclass
class CalibrateConfig:
    """The settings of ``sigmoid-head calibrate``."""

    dev: CalibrateDev
    spans: CalibrateSpans = field(default_factory=CalibrateSpans)
    test: CalibrateTest = field(default_factory=CalibrateTest)
