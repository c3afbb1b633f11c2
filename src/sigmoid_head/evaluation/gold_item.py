"""The one shape every gold reader gives (:class:`GoldItem`) and the field names the JSONL
layouts use: the base the readers (:mod:`.gold_formats`, :mod:`.gold_mqm`,
:mod:`.gold_shroom`) and the type checker (:mod:`.gold_check`) share, so that none of them
imports another to get it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TEXT_KEYS = ("tgt", "mt", "translation", "hypothesis", "target", "response")
SOURCE_KEYS = ("src", "source")
SPAN_KEYS = ("esa_spans", "mqm_spans", "error_spans", "errors", "spans", "labels")
CATEGORY_KEYS = ("category", "error_type", "type", "label_type")
GROUP_KEYS = ("doc_id", "segment_id", "seg_id", "line_id")
"""Joined into the source id when a record has neither ``source_id`` nor a source text."""


@dataclass
class GoldItem:
    """One annotated text.

    Attributes:
        text: the annotated text (translation or response); spans index into it.
        spans: error spans ``{"start", "end", "severity", "category"}`` (end exclusive).
        group: source id for clustered intervals (items of one source move together).
        source: the source text, if known.
        word_bad: per whitespace word of ``text``, 1 = BAD (word-tag formats only).
        gap_tags: per gap, 1 = BAD (when the tags file interleaves gaps).
        omissions: errors without a place in the text (e.g. ESA ``"missing"``).

    The source id is ``source_id`` (RAGTruth), else the source text, else the record's
    document and segment ids, else its line number; word-tag files use the source line
    when a source file is given, else the line number.
    """

    text: str
    spans: list[dict[str, Any]]
    group: str
    source: str | None = None
    word_bad: list[int] | None = None
    gap_tags: list[int] | None = None
    omissions: list[dict[str, Any]] = field(default_factory=list)
