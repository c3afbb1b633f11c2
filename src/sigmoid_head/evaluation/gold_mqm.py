"""Google's MQM TSV layout (google/wmt-mqm-human-evaluation) into :class:`MqmItem`.

One row per rater and error, tab-separated, with a header:
``system  doc  doc_id  seg_id  rater  source  target  category  severity``. The error's
place is marked in the target by ``<v>…</v>`` (several marks per row are allowed); a
row without a mark in the target is an error without a place there (an omission, a
source error, a whole-segment non-translation) and counts in ``omissions``. A rater who
found nothing leaves one row with category and severity ``No-error``.

One :class:`MqmItem` per translated segment (``system`` and ``seg_id``): the target with
the marks removed, each rater's character spans (``rater_spans``), the merged spans
(``spans``: the union over raters, overlapping spans joined, the highest severity kept),
and the segment's MQM score (``mqm``): minus the mean over its raters of the rater's
weighted error count, with Google's weights (Freitag et al., 2021): Major 5, Minor 1,
Minor Fluency/Punctuation 0.1, Non-translation 25, Neutral 0. Errors of category
``Source error`` are marked in the source, not the translation, and weigh 0 here.
The group (for intervals over sources) is ``doc`` and ``seg_id``: every system's
translation of one source segment moves together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.records import read_lines
from .gold_item import GoldItem

COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity")
MARK = re.compile(r"<v>(.*?)</v>", re.DOTALL)
SEVERITY_RANK = {"neutral": 0, "minor": 1, "major": 2, "critical": 3}


@dataclass
class MqmItem(GoldItem):
    """A :class:`GoldItem` with the MQM score and the spans of every rater."""

    mqm: float = 0.0
    rater_spans: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    system: str = ""
    seg_id: str = ""
    doc: str = ""


def mqm_weight(category: str, severity: str) -> float:
    """Google's MQM weight of one error (0 for No-error, Neutral and source errors)."""
    cat, sev = (category or "").strip().lower(), (severity or "").strip().lower()
    if sev in ("no-error", "neutral") or cat in ("no-error", "source error"):
        return 0.0
    if cat.startswith("non-translation"):
        return 25.0
    if sev == "major" or sev == "critical":
        return 5.0 if sev == "major" else 10.0
    if sev == "minor":
        return 0.1 if cat == "fluency/punctuation" else 1.0
    raise ValueError(f"unknown MQM severity {severity!r}")


def strip_marks(target: str) -> tuple[str, list[tuple[int, int]]]:
    """The target without ``<v>``/``</v>`` and the (start, end) of every marked span."""
    out, spans, pos = [], [], 0
    for m in MARK.finditer(target):
        out.append(target[pos : m.start()])
        start = sum(map(len, out))
        out.append(m.group(1))
        spans.append((start, start + len(m.group(1))))
        pos = m.end()
    out.append(target[pos:])
    return "".join(out), spans


def merge_spans(spans: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Overlapping spans joined (the highest severity and its category kept), sorted."""
    out: list[dict[str, Any]] = []
    for s in sorted(spans, key=lambda s: (s["start"], s["end"])):
        if out and s["start"] < out[-1]["end"]:
            last = out[-1]
            last["end"] = max(last["end"], s["end"])
            rank = SEVERITY_RANK.get(str(s["severity"]).lower(), 0)
            if rank > SEVERITY_RANK.get(str(last["severity"]).lower(), 0):
                last["severity"], last["category"] = s["severity"], s["category"]
        else:
            out.append(dict(s))
    return out


def _rows(path: str | Path) -> Iterable[tuple[int, dict[str, str]]]:
    lines = [ln for ln in read_lines(path) if ln != ""]
    header = lines[0].split("\t") if lines else []
    if tuple(header[: len(COLUMNS)]) != COLUMNS:
        raise ValueError(
            f"{path}: not Google's MQM TSV (header {header[:9]!r}, expected {'/'.join(COLUMNS)})"
        )
    for k, line in enumerate(lines[1:], start=2):
        cols = line.split("\t")
        if len(cols) < len(COLUMNS):
            raise ValueError(f"{path}:{k}: {len(cols)} columns, expected {len(COLUMNS)}")
        yield k, dict(zip(COLUMNS, cols, strict=False))


def read_google_mqm(path: str | Path) -> list[MqmItem]:
    """Every translated segment of a Google MQM TSV (see the module docstring), in the
    file's order of first appearance.

    Raises:
        ValueError: a wrong header, a short row, a mark that does not reproduce the
            segment's text, or an unknown severity, naming the line.
    """
    segs: dict[tuple[str, str], dict[str, Any]] = {}
    for k, r in _rows(path):
        text, marks = strip_marks(r["target"])
        key = (r["system"], r["seg_id"])
        seg = segs.setdefault(key, {"text": text, "row": r, "raters": {}, "omissions": []})
        if seg["text"] != text:
            raise ValueError(f"{path}:{k}: target differs from the segment's earlier rows")
        rater = seg["raters"].setdefault(r["rater"], {"spans": [], "penalty": 0.0})
        w = mqm_weight(r["category"], r["severity"])
        rater["penalty"] += w
        if r["category"] == "No-error":
            continue
        err = {"severity": r["severity"].lower(), "category": r["category"]}
        if not marks:
            seg["omissions"].append({**err, "rater": r["rater"]})
        if r["category"].lower() == "source error":
            continue
        rater["spans"] += [{"start": s, "end": e, **err} for s, e in marks if e > s]
    return [_item(seg) for seg in segs.values()]


def _item(seg: dict[str, Any]) -> MqmItem:
    r, raters = seg["row"], seg["raters"]
    per = {
        name: sorted(v["spans"], key=lambda s: (s["start"], s["end"])) for name, v in raters.items()
    }
    mqm = -sum(v["penalty"] for v in raters.values()) / len(raters)
    merged = merge_spans(s for spans in per.values() for s in spans)
    return MqmItem(
        seg["text"],
        merged,
        f"{r['doc']}/{r['seg_id']}",
        r["source"],
        omissions=seg["omissions"],
        mqm=mqm,
        rater_spans=per,
        system=r["system"],
        seg_id=r["seg_id"],
        doc=r["doc"],
    )
