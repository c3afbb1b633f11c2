"""The harness on a user's own gold files (issue 49, item 7): any format ``evaluate`` reads.

``run.py --test-gold FILE --dev-gold FILE`` (or ``--test-gold FILE --dev-share 0.3``) reads
the files with :func:`sigmoid_head.evaluation.gold_formats.read_gold_items` (WMT word tags,
ESA/MQM span JSONL, RAGTruth, Google's MQM TSV, Mu-SHROOM; the format detected, or named
with ``--gold-format``) and turns each item into the record ``build_data.py`` writes for the
named sets, so that the same evaluation (:func:`evaluate_sets.evaluate_set`) runs on it:

* word tags (``word_bad`` present): the ``wmt`` kind (word MCC, gaps when the tags have
  them; the segment score is minus the share of BAD words, HTER not being in the files);
  the source is read from the file beside the tags with suffix ``.src`` when there (it
  fills the translation prompt and groups the items by source; else line numbers);
* Mu-SHROOM (soft labels): the ``shroom`` kind (IoU, Spearman);
* every other span format: the ``mqm`` kind (word MCC of words touching a span, span F1);
  its segment score is the file's MQM score where it has one (Google's TSV), else minus
  the spans weighted as Google's MQM weights them (minor 1, minor punctuation 0.1, major
  5, critical 10, non-translation 25; :func:`sigmoid_head.evaluation.gold_mqm.mqm_weight`),
  omissions included.

With ``--dev-share F`` the file's sources (the item's group: its source text, or document
and segment ids) are shuffled with a fixed seed and the first ``F`` of them form dev: every
item of a source falls on one side.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sigmoid_head.evaluation.gold_formats import GoldItem, read_gold_items
from sigmoid_head.evaluation.gold_mqm import mqm_weight

SOURCE_PROMPT_FORMATS = ("ragtruth", "mushroom")
"""Formats whose texts answer their source (no translation prompt)."""


def kind_of(items: Sequence[GoldItem]) -> str:
    """The evaluation kind of a list of gold items (module docstring)."""
    if not items:
        raise ValueError("the gold file has no items")
    first = items[0]
    if getattr(first, "soft_labels", None) is not None and hasattr(first, "item_id"):
        return "shroom"
    if first.word_bad is not None:
        return "wmt"
    return "mqm"


def _segment_score(it: GoldItem) -> float:
    """Higher = better: the item's MQM score, else minus its MQM-weighted spans."""
    if getattr(it, "mqm", None) is not None:
        return float(it.mqm)
    errors = [*it.spans, *it.omissions]
    return -float(
        sum(mqm_weight(e.get("category") or "", e.get("severity") or "minor") for e in errors)
    )


def record(it: GoldItem, kind: str, key: str) -> dict[str, Any]:
    """The ``build_data.py``-style record of one gold item (``key``: its id)."""
    rec: dict[str, Any] = {
        "id": key,
        "group": it.group,
        "source": it.source or "",
        "candidate": it.text,
        "spans": it.spans,
    }
    if kind == "wmt":
        rec["word_bad"] = list(it.word_bad or [])
        rec["gap_bad"] = it.gap_tags
    elif kind == "shroom":
        rec["soft_labels"] = it.soft_labels  # type: ignore[attr-defined]
        rec["source"] = it.question or it.source or ""  # type: ignore[attr-defined]
        rec["id"] = it.item_id or key  # type: ignore[attr-defined]
    else:
        rec["omissions"] = it.omissions
        rec["mqm"] = _segment_score(it)
    return rec


def split_by_source(
    items: Sequence[GoldItem], share: float, seed: int = 0
) -> tuple[list[int], list[int]]:
    """(dev, test) item indices: a ``share`` of the sources, shuffled with ``seed``, is dev."""
    if not 0 < share < 1:
        raise ValueError(f"--dev-share must lie strictly between 0 and 1, not {share}")
    groups = sorted({it.group for it in items})
    if len(groups) < 2:
        raise ValueError("--dev-share needs at least two sources in the file; give --dev-gold")
    random.Random(seed).shuffle(groups)
    n_dev = min(max(1, round(share * len(groups))), len(groups) - 1)
    dev_groups = set(groups[:n_dev])
    dev = [i for i, it in enumerate(items) if it.group in dev_groups]
    return dev, [i for i, it in enumerate(items) if it.group not in dev_groups]


def _read(path: Path, fmt: str | None) -> list[GoldItem]:
    """The file's items; for word tags, the source file beside it (``.src``) when there."""
    from sigmoid_head.evaluation.gold_formats import _beside, detect_format

    if (fmt or detect_format(path)) == "wmt-tags":
        src = _beside(path, ".src")
        return read_gold_items(path, "wmt-tags", source=src if src.exists() else None)
    return read_gold_items(path, fmt)


def read_user_sets(
    test: Path, dev: Path | None, share: float | None, fmt: str | None = None
) -> tuple[str, list[dict], list[dict]]:
    """(kind, dev records, test records) of a user's gold file(s).

    Raises:
        ValueError: neither or both of ``dev`` and ``share``; files of different kinds; an
            unreadable file (the reader's message).
    """
    if (dev is None) == (share is None):
        raise ValueError(
            "give a dev file (--dev-gold) or a dev share of the test file's "
            "sources (--dev-share), one of them"
        )
    test_items = _read(test, fmt)
    kind = kind_of(test_items)
    if dev is not None:
        dev_items = _read(dev, fmt)
        if kind_of(dev_items) != kind:
            raise ValueError(f"{dev} reads as {kind_of(dev_items)} labels but {test} as {kind}")
        return (
            kind,
            [record(it, kind, f"dev-{k}") for k, it in enumerate(dev_items)],
            [record(it, kind, f"test-{k}") for k, it in enumerate(test_items)],
        )
    d, t = split_by_source(test_items, float(share))  # type: ignore[arg-type]
    return (
        kind,
        [record(test_items[k], kind, f"item-{k}") for k in d],
        [record(test_items[k], kind, f"item-{k}") for k in t],
    )
