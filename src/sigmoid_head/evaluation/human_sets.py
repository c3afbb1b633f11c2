"""The check of a human-labelled set's split files (``recipes/human_qe``), before scoring.

:func:`read_human_split` reads one split (``<set>/{dev,test}.jsonl.gz``, one record per
text) and refuses, in one line naming the file and the line, whatever would otherwise
surface as a traceback or a silently wrong figure: a truncated or non-gzip file, a line
that is not a JSON object, an ``id`` or ``group`` that is not text, a candidate that is
empty or not a string, and per kind of set:

* ``wmt``: ``word_bad`` (and ``gap_bad``, ``source_bad`` when given) a list of 0/1 with one
  value per whitespace word of the candidate (of the source; ``gap_bad``: one more), and
  ``hter`` null or a finite number >= 0;
* ``mqm``: ``mqm`` a finite number, ``spans`` a list of ``{start, end}`` inside the
  candidate (the library's span checker, :func:`.gold_check.check_span_record`);
* ``shroom``: ``spans`` inside the candidate and ``soft_labels`` ``{start, end, prob}``
  inside it with ``prob`` in [0, 1] (:func:`.gold_check.check_shroom_record`).

A split of fewer than :data:`MIN_ITEMS` texts is refused too (no correlation, no interval).
Numpy-free, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..data.records import DataError, iter_jsonl_lines
from .gold_check import GoldTypeError, _kind, check_shroom_record, check_span_record

KINDS = ("wmt", "mqm", "shroom")
MIN_ITEMS = 2
"""The fewest texts a split may have (a correlation needs two)."""


def read_human_split(path: str | Path, kind: str) -> list[dict]:
    """The checked records of one split file of a human-labelled set of ``kind``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: one line naming the file (and the line): see the module docstring.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind of set {kind!r}; one of {', '.join(KINDS)}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing")
    rows = []
    try:
        for k, rec in iter_jsonl_lines(path, objects=True):
            check_human_record(rec, f"{path}:{k}", kind)
            rows.append(rec)
    except DataError as err:
        raise ValueError(str(err)) from None
    if len(rows) < MIN_ITEMS:
        raise ValueError(f"{path}: {len(rows)} texts; a split needs at least {MIN_ITEMS}")
    return rows


def check_human_record(rec: Mapping[str, Any], where: str, kind: str) -> None:
    """Refuse one record of a human-labelled split (see the module docstring).

    Raises:
        GoldTypeError: ``<where>: <field> ...`` naming the first malformed value.
    """
    for key in ("id", "group"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise GoldTypeError(
                f"{where}: {key} must be a non-empty string, got {_kind(rec.get(key))}"
            )
    cand = rec.get("candidate")
    if not isinstance(cand, str) or not cand.strip():
        raise GoldTypeError(f"{where}: candidate must be a non-empty string, got {_kind(cand)}")
    if not isinstance(rec.get("source", ""), str):
        raise GoldTypeError(f"{where}: source must be a string, got {_kind(rec.get('source'))}")
    if kind == "wmt":
        _check_wmt(rec, where)
    elif kind == "mqm":
        _number(rec.get("mqm"), f"{where}: mqm")
        check_span_record({"tgt": cand, "spans": rec.get("spans")}, where)
        if not isinstance(rec.get("spans"), list):
            raise GoldTypeError(f"{where}: spans must be a list, got {_kind(rec.get('spans'))}")
    else:
        check_span_record({"tgt": cand, "spans": rec.get("spans")}, where)
        if not isinstance(rec.get("spans"), list):
            raise GoldTypeError(f"{where}: spans must be a list, got {_kind(rec.get('spans'))}")
        check_shroom_record(
            {"model_output_text": cand, "hard_labels": [], "soft_labels": rec.get("soft_labels")},
            where,
        )


def _check_wmt(rec: Mapping[str, Any], where: str) -> None:
    words = len(rec["candidate"].split())
    _tags(rec.get("word_bad"), words, f"{where}: word_bad", "candidate words")
    if rec.get("gap_bad") is not None:
        _tags(rec["gap_bad"], words + 1, f"{where}: gap_bad", "gaps (candidate words + 1)")
    if rec.get("source_bad") is not None:
        _tags(
            rec["source_bad"],
            len(str(rec.get("source", "")).split()),
            f"{where}: source_bad",
            "source words",
        )
    if rec.get("hter") is not None:
        _number(rec["hter"], f"{where}: hter", low=0.0)


def _tags(value: Any, n: int, at: str, what: str) -> None:
    if not isinstance(value, list):
        raise GoldTypeError(f"{at} must be a list of 0/1 tags, got {_kind(value)}")
    if len(value) != n:
        raise GoldTypeError(f"{at} has {len(value)} tags for {n} {what}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or v not in (0, 1):
            raise GoldTypeError(f"{at}[{i}] must be 0 or 1, got {_kind(v)}")


def _number(value: Any, at: str, low: float = -math.inf) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < low
    ):
        bound = "" if low == -math.inf else f" >= {low:g}"
        raise GoldTypeError(f"{at} must be a finite number{bound}, got {_kind(value)}")
