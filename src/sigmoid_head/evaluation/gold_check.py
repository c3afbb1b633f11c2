"""The type check of ``--gold`` and ``--scores`` records, before anything is computed.

Every malformed record is refused in one line naming the file, the line and the field:
a span list that is a string or a number, a span given as ``[s, e]`` or as a string, a
span without ``start`` (or ``start: null``: an omission is marked ``"missing"``), offsets
that are booleans, strings or fractions, a text (``tgt``, ``response``, ...) that is null
or a number, RAGTruth ``labels`` that is an object, a RAGTruth label whose ``text`` is not
``response[start:end]`` (how a user learns their offsets count bytes, not characters), a
scores row whose words lack a method's score. ``sigmoid-head evaluate`` and ``calibrate``
then exit with code 2 and write nothing.

:func:`check_span_jsonl` checks a span file (ESA, MQM, RAGTruth JSONL);
:func:`read_score_rows` reads and checks a scores file; :func:`check_threshold_methods`
refuses ``--thresholds`` for a method the scores do not have (a misspelt ``sigmod=0.1``
was silently ignored). Numpy-free, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.records import iter_jsonl_lines
from .gold_item import SPAN_KEYS, TEXT_KEYS

WORD_FIELDS = ("word", "start", "end")
"""Fields of a scored word that are not a method's score."""


class GoldTypeError(ValueError):
    """A gold or scores record with a value of the wrong type (the message names
    ``file:line`` and the field)."""


def _kind(value: Any) -> str:
    """A value as a message shows it: its JSON type and a short form."""
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }
    if isinstance(value, (list, dict)):  # never the text of a large value
        return f"{names[type(value)]} of {len(value)} items"
    shown = "null" if value is None else repr(value[:40] if isinstance(value, str) else value)
    shown = shown if len(shown) <= 30 else shown[:27] + "..."
    return f"{names.get(type(value), type(value).__name__)} {shown}" if value is not None else shown


def _offset_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer character offset, got {_kind(value)}"
    return None


def _first_key(rec: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    return next((k for k in keys if k in rec), None)


def check_span_record(rec: Mapping[str, Any], where: str, fmt: str | None = None) -> None:
    """Check one span record (ESA, MQM or RAGTruth layout).

    Raises:
        GoldTypeError: ``<where>: <field> ...`` naming the first malformed value.
    """
    text_key = _first_key(rec, TEXT_KEYS)
    if text_key is None:
        raise GoldTypeError(f"{where}: no text field (one of {', '.join(TEXT_KEYS)})")
    text = rec[text_key]
    if not isinstance(text, str):
        raise GoldTypeError(
            f"{where}: '{text_key}' must be a string (the annotated text), got {_kind(text)}"
        )
    span_key = _first_key(rec, SPAN_KEYS)
    if span_key is None:
        raise GoldTypeError(f"{where}: no error-span list (one of {', '.join(SPAN_KEYS)})")
    spans = rec[span_key]
    if spans is None:
        return
    if not isinstance(spans, list):
        raise GoldTypeError(
            f"{where}: '{span_key}' must be a list of span objects, got {_kind(spans)}"
        )
    for j, span in enumerate(spans):
        field = f"{span_key}[{j}]"
        if not isinstance(span, dict):
            raise GoldTypeError(
                f"{where}: {field} must be an object with 'start' and 'end', got {_kind(span)}"
            )
        start_key = "start" if "start" in span else "start_i" if "start_i" in span else None
        end_key = "end" if "end" in span else "end_i" if "end_i" in span else None
        start = span.get(start_key) if start_key else None
        end = span.get(end_key) if end_key else None
        if "missing" in (start, end):
            continue  # an omission without a place (the ESA release's marking)
        for name, key, value in (("start", start_key, start), ("end", end_key, end)):
            if key is None:
                raise GoldTypeError(
                    f"{where}: {field} has no '{name}' (an omission without a "
                    'place is marked "missing")'
                )
            problem = _offset_problem(value)
            if problem:
                raise GoldTypeError(f"{where}: {field}.{key} {problem}")
        if not 0 <= start <= end <= len(text):
            raise GoldTypeError(
                f"{where}: {field} [{start}, {end}) is not inside the "
                f"{len(text)}-character '{text_key}'"
            )
        quoted = span.get("text")
        if (
            (fmt == "ragtruth" or span_key == "labels")
            and isinstance(quoted, str)
            and quoted != text[start:end]
        ):
            raise GoldTypeError(
                f"{where}: {field}.text {quoted[:30]!r} differs from {text_key}[{start}:{end}] "
                f"{text[start:end][:30]!r} (offsets must count characters, not bytes)"
            )


def check_shroom_record(rec: Mapping[str, Any], where: str) -> None:
    """Refuse a Mu-SHROOM record whose text is not a string, whose ``hard_labels`` is not a
    list of ``[start, end]`` integer pairs inside the text, or whose ``soft_labels`` is not
    a list of ``{start, end, prob}`` with integer offsets inside the text and ``prob`` a
    number in [0, 1] (the message names ``where`` and the field)."""
    text = rec.get("model_output_text")
    if not isinstance(text, str):
        raise GoldTypeError(f"{where}: model_output_text must be a string, got {_kind(text)}")
    for key in ("hard_labels", "soft_labels"):
        if not isinstance(rec.get(key), list):
            raise GoldTypeError(f"{where}: {key} must be a list, got {_kind(rec.get(key))}")
    for i, pair in enumerate(rec["hard_labels"]):
        if not isinstance(pair, list) or len(pair) != 2:
            raise GoldTypeError(f"{where}: hard_labels[{i}] must be a [start, end] pair, "
                                f"got {_kind(pair)}")
        _check_range(pair[0], pair[1], len(text), f"{where}: hard_labels[{i}]")
    for i, lab in enumerate(rec["soft_labels"]):
        at = f"{where}: soft_labels[{i}]"
        if not isinstance(lab, dict) or not {"start", "end", "prob"} <= set(lab):
            raise GoldTypeError(f"{at} must be an object with start, end and prob, "
                                f"got {_kind(lab)}")
        _check_range(lab["start"], lab["end"], len(text), at)
        p = lab["prob"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise GoldTypeError(f"{at}.prob must be a number in [0, 1], got {_kind(p)}")


def _check_range(start: Any, end: Any, n: int, at: str) -> None:
    for name, value in (("start", start), ("end", end)):
        problem = _offset_problem(value)
        if problem:
            raise GoldTypeError(f"{at}: {name} {problem}")
    if not 0 <= start <= end <= n:
        raise GoldTypeError(f"{at}: [{start}, {end}) is outside the {n}-character text")


def check_span_jsonl(path: str | Path, fmt: str | None = None) -> None:
    """Check every record of a span JSONL file (see :func:`check_span_record`).

    Raises:
        GoldTypeError: naming ``file:line`` and the field.
        DataError: a line that is not a JSON object.
    """
    for line, rec in iter_jsonl_lines(path, objects=True):
        check_span_record(rec, f"{path}:{line}", fmt)


def _score_methods(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Methods with a numeric score in the first word of the first row with words."""
    for rec in rows:
        words = rec.get("words")
        if isinstance(words, list) and words and isinstance(words[0], dict):
            return [
                k
                for k, v in words[0].items()
                if k not in WORD_FIELDS and isinstance(v, int | float) and not isinstance(v, bool)
            ]
    return []


def check_score_row(rec: Mapping[str, Any], where: str, methods: Sequence[str]) -> None:
    """Check one scores row: a string ``candidate``, ``words`` a list of objects, each with
    a finite number for every method in ``methods`` and integer ``start``/``end``.

    Raises:
        GoldTypeError: naming ``where`` and the field.
    """
    if "candidate" in rec and not isinstance(rec["candidate"], str):
        raise GoldTypeError(f"{where}: 'candidate' must be a string, got {_kind(rec['candidate'])}")
    words = rec.get("words")
    if words is None:
        return
    if not isinstance(words, list):
        raise GoldTypeError(f"{where}: 'words' must be a list of scored words, got {_kind(words)}")
    for j, w in enumerate(words):
        if not isinstance(w, dict):
            raise GoldTypeError(f"{where}: words[{j}] must be an object, got {_kind(w)}")
        for m in methods:
            if m not in w:
                raise GoldTypeError(f"{where}: words[{j}] has no '{m}' score")
            v = w[m]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise GoldTypeError(
                    f"{where}: words[{j}].{m} must be a finite number, got {_kind(v)}"
                )
        for key in ("start", "end"):
            if key in w:
                problem = _offset_problem(w[key])
                if problem:
                    raise GoldTypeError(f"{where}: words[{j}].{key} {problem}")


def read_score_rows(path: str | Path, methods: Sequence[str] | None = None) -> list[dict]:
    """The rows of a scores file, each checked (:func:`check_score_row`) for ``methods``
    (default: the methods of the first scored word).

    Raises:
        GoldTypeError: a malformed row (``file:line`` and the field).
    """
    rows = list(iter_jsonl_lines(path, objects=True))
    wanted = list(methods) if methods else _score_methods(r for _, r in rows)
    for line, rec in rows:
        check_score_row(rec, f"{path}:{line}", wanted)
    return [rec for _, rec in rows]


def check_threshold_methods(
    per: Mapping[str, float], available: Sequence[str], option: str = "--thresholds"
) -> None:
    """Refuse thresholds for methods that are not in ``available`` (a misspelling)."""
    unknown = [m for m in per if m not in available]
    if unknown:
        raise GoldTypeError(
            f"{option}: no method {', '.join(map(repr, unknown))} in the scores; "
            f"methods with word scores: {', '.join(available) or 'none'}"
        )
