"""Google's MQM TSV layout (google/wmt-mqm-human-evaluation) into :class:`MqmItem`.

One row per rater and error, tab-separated, with a header:
``system  doc  doc_id  seg_id  rater  source  target  category  severity``. The error's
place is marked in the target by ``<v>…</v>`` (several marks per row are allowed); a
row without a mark in the target is an error without a place there (an omission, a
source error, a whole-segment non-translation) and counts in ``omissions``. Omissions and
source errors are marked in the *source* the same way: those marks are removed from the
item's source (every row of a segment must give the same source once they are removed).
A rater who found nothing leaves one row with category ``No-error`` (any letter case).

Marks are read with their nesting: a nested mark is part of the outermost one. A row whose
marks do not balance (an unclosed ``<v>`` or a stray ``</v>``; one row of the TED zh-en
file) is repaired, never read as an omission: an unclosed ``<v>`` marks up to the end of
the text, a stray ``</v>`` from its start (``strict=True`` refuses such a row instead).

One :class:`MqmItem` per translated segment (``system``, ``doc`` and ``seg_id``): the
target with the marks removed, each rater's character spans (``rater_spans``), the merged
spans (``spans``: the union over raters, overlapping spans joined, the highest severity
kept), and the segment's MQM score (``mqm``): minus the mean over its raters of the
rater's weighted error count, with Google's weights (Freitag et al., 2021): Major 5,
Minor 1, Minor Fluency/Punctuation 0.1, Non-translation 25, Neutral 0. ``Source error``
rows weigh as any other error of their severity, as in Google's own per-segment scores
(``mqm_ted_zhen.avg_seg_scores.tsv``, reproduced exactly on the TED zh-en file); they
give no span in the target. The group (for intervals over sources) is ``doc`` and
``seg_id``: every system's translation of one source segment moves together.
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
TAG = re.compile(r"</?v>")
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
    """Google's MQM weight of one error (0 for No-error and Neutral).

    Raises:
        ValueError: an unknown severity.
    """
    cat, sev = (category or "").strip().lower(), (severity or "").strip().lower()
    if sev in ("no-error", "neutral") or cat == "no-error":
        return 0.0
    if cat.startswith("non-translation"):
        return 25.0
    if sev == "major" or sev == "critical":
        return 5.0 if sev == "major" else 10.0
    if sev == "minor":
        return 0.1 if cat == "fluency/punctuation" else 1.0
    raise ValueError(f"unknown MQM severity {severity!r}")


def marks_balance(text: str) -> bool:
    """Whether every ``<v>`` of ``text`` is closed and every ``</v>`` opened."""
    depth = 0
    for m in TAG.finditer(text):
        depth += 1 if m.group() == "<v>" else -1
        if depth < 0:
            return False
    return depth == 0


def strip_marks(text: str, strict: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The text without ``<v>``/``</v>`` and the (start, end) of every outermost mark.

    Nested marks are part of the outermost one. An unclosed ``<v>`` marks up to the end
    of the text, a stray ``</v>`` from its start (see the module docstring).

    Raises:
        ValueError: ``strict`` and the marks do not balance.
    """
    if strict and not marks_balance(text):
        raise ValueError(f"unbalanced <v> marks in {text[:80]!r}")
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos, depth, start, clean = 0, 0, 0, 0
    for m in TAG.finditer(text):
        out.append(text[pos : m.start()])
        clean += m.start() - pos
        pos = m.end()
        if m.group() == "<v>":
            if depth == 0:
                start = clean
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, clean))
        else:  # a stray </v>: the mark began where the text begins
            spans = [(0, clean)]
    out.append(text[pos:])
    clean += len(text) - pos
    if depth > 0:
        spans.append((start, clean))
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


def tsv_rows(path: str | Path) -> Iterable[tuple[int, dict[str, str]]]:
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


def read_google_mqm(path: str | Path, strict: bool = False) -> list[MqmItem]:
    """Every translated segment of a Google MQM TSV (see the module docstring), in the
    file's order of first appearance.

    Args:
        path: the TSV file.
        strict: refuse a row whose ``<v>`` marks do not balance (default: repair it).

    Raises:
        ValueError: a wrong header, a short row, rows of one segment whose target or
            source differ once the marks are removed, unbalanced marks with ``strict``,
            or an unknown severity, naming the line.
    """
    segs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for k, r in tsv_rows(path):
        try:
            text, marks = strip_marks(r["target"], strict)
            source = strip_marks(r["source"], strict)[0]
            w = mqm_weight(r["category"], r["severity"])
        except ValueError as e:
            raise ValueError(f"{path}:{k}: {e}") from None
        key = (r["system"], r["doc"], r["seg_id"])
        seg = segs.setdefault(
            key, {"text": text, "source": source, "row": r, "raters": {}, "omissions": []}
        )
        if seg["text"] != text or seg["source"] != source:
            which = "target" if seg["text"] != text else "source"
            raise ValueError(f"{path}:{k}: {which} differs from the segment's earlier rows")
        rater = seg["raters"].setdefault(r["rater"], {"spans": [], "penalty": 0.0})
        rater["penalty"] += w
        if r["category"].strip().lower() == "no-error":
            continue
        err = {"severity": r["severity"].lower(), "category": r["category"]}
        if not marks:
            seg["omissions"].append({**err, "rater": r["rater"]})
        if r["category"].strip().lower() == "source error":
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
        seg["source"],
        omissions=seg["omissions"],
        mqm=mqm,
        rater_spans=per,
        system=r["system"],
        seg_id=r["seg_id"],
        doc=r["doc"],
    )
