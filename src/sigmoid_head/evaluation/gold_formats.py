"""Readers of the gold files QE users already have, into one shape: :class:`GoldItem`.

Formats (``--gold-format``; :func:`detect_format` picks one from the file):

* ``wmt-tags``: WMT word-level QE. A tags file, one line per sentence, OK/BAD tags
  separated by spaces, for the MT words (the MT file split on whitespace) or with gap
  tags interleaved (``2n + 1`` tags: gap, word, gap, ..., gap; the WMT 2018-2020 layout),
  beside the MT text file (same stem, ``.mt``, or named) and optionally the source file
  and source tags; WMT 2021's long layout (one tag a row, seven tab-separated columns:
  pair, system, type, sentence id, word id, word, tag; its ``mt`` rows) is read too. Each
  BAD word becomes one error span; gap tags are kept
  (``gap_tags``) but have no character span.
* ``esa`` / ``mqm``: JSONL, one segment per line, with the translation (``tgt``, ``mt``,
  ``translation``, ``hypothesis`` or ``target``), optionally the source (``src`` or
  ``source``), and a list of error spans (``esa_spans``, ``mqm_spans``, ``error_spans``,
  ``errors`` or ``spans``), each with character ``start``/``end`` (or ``start_i``/``end_i``
  as in the WMT 2024 ESA release; ``"missing"`` marks an omission without a place,
  counted in ``omissions``), ``severity`` and a category (``category``, ``error_type``
  or ``type``). The two names read the same layout.
* ``ragtruth``: hallucination spans as in RAGTruth's ``response.jsonl``: ``response``,
  ``source_id`` and ``labels``, each ``{start, end, text, label_type}``.

Every reader checks that each span lies inside its text. Numpy-free, no torch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.records import iter_jsonl_lines, read_jsonl, read_lines
from .gold_item import (  # noqa: F401 - re-exported: the readers' shared shape and keys
    CATEGORY_KEYS,
    GROUP_KEYS,
    SOURCE_KEYS,
    SPAN_KEYS,
    TEXT_KEYS,
    GoldItem,
)

FORMATS = ("wmt-tags", "esa", "mqm", "ragtruth", "google-mqm", "mushroom")
"""Names accepted by ``--gold-format``."""
def whitespace_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of every whitespace-separated word of ``text`` (``str.isspace``
    whitespace: the regular expression's ``\\s`` on a str is the same class)."""
    return list(_whitespace_words(text))


@functools.lru_cache(maxsize=65536)
def _whitespace_words(text: str) -> tuple[tuple[int, int], ...]:
    # the metrics ask for the words of one text many times (once per method and table)
    return tuple(m.span() for m in _WORD.finditer(text))


_WORD = re.compile(r"\S+")


def _tag(t: str, where: str) -> int:
    u = t.strip().upper()
    if u not in ("OK", "BAD"):
        raise ValueError(f"{where}: unknown tag {t!r}; expected OK or BAD")
    return int(u == "BAD")


def read_wmt_tags(tags: str | Path, mt: str | Path | None = None,
                  source: str | Path | None = None) -> list[GoldItem]:
    """WMT word-level QE tags beside their MT text (see the module docstring).

    Args:
        tags: the MT tags file (word tags, or word and gap tags interleaved; or WMT 2021's
            long layout).
        mt: the MT text file; default the tags file with suffix ``.mt``.
        source: the source text file (optional).
    """
    tags = Path(tags)
    if not mt:
        mt = _beside(tags, ".mt")
        if not mt.exists():
            other = span_format(tags) if _suffix(tags) != ".tags" else None
            hint = f"; {tags} reads as {other} (--gold-format {other})" if other else ""
            raise ValueError(f"{tags}: wmt-tags needs the MT text beside the tags file, and {mt} "
                             f"is not there; name it with --gold-mt{hint}")
    mt = Path(mt)
    texts = _drop_final_empty(read_lines(mt))
    if is_long_tags(tags):  # WMT 2021: one tag a row; sentence k's MT word tags as one line
        table = read_long_tags(tags).get("mt", {})
        if set(table) - set(range(len(texts))):
            raise ValueError(f"{tags}: MT tags for sentence {max(table)} but {mt} has {len(texts)} lines")
        tag_lines = [" ".join("BAD" if b else "OK" for b in table.get(k, [])) for k in range(len(texts))]
    else:
        tag_lines = _drop_final_empty(read_lines(tags))
    sources = _drop_final_empty(read_lines(source)) if source else [None] * len(texts)
    if not len(tag_lines) == len(texts) == len(sources):
        raise ValueError(f"{tags}: {len(tag_lines)} tag lines but {len(texts)} MT lines"
                         + (f" and {len(sources)} source lines" if source else ""))
    items = []
    for k, (line, text) in enumerate(zip(tag_lines, texts, strict=True)):
        where = f"{tags}:{k + 1}"
        t = [_tag(x, where) for x in line.split()]
        words = whitespace_words(text)
        gaps = None
        if len(t) == 2 * len(words) + 1:
            gaps, t = t[0::2], t[1::2]
        elif len(t) != len(words):
            raise ValueError(f"{where}: {len(t)} tags for {len(words)} MT words (expected "
                             f"{len(words)}, or {2 * len(words) + 1} with gaps)")
        spans = [{"start": s, "end": e, "severity": None, "category": None}
                 for (s, e), bad in zip(words, t, strict=True) if bad]
        group = sources[k] if sources[k] is not None else str(k)
        items.append(GoldItem(text, spans, group, sources[k], t, gaps))
    return items


def read_long_tags(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """A WMT 2021 long-layout tags file -> {type: {sentence id: tags in word order}}."""
    out: dict[str, dict[int, dict[int, int]]] = {}
    for k, line in enumerate(_drop_final_empty(read_lines(path))):
        cols = line.split("\t")
        if len(cols) != 7:
            raise ValueError(f"{path}:{k + 1}: expected 7 tab-separated columns, got {len(cols)}")
        if not (cols[3].isdigit() and cols[4].isdigit()):
            raise ValueError(f"{path}:{k + 1}: sentence and word ids must be whole numbers, got "
                             f"{cols[3]!r} and {cols[4]!r}")
        kind, sent, word = cols[2], int(cols[3]), int(cols[4])
        out.setdefault(kind, {}).setdefault(sent, {})[word] = _tag(cols[6], f"{path}:{k + 1}")
    return {
        kind: {s: [w[i] for i in sorted(w)] for s, w in sents.items()}
        for kind, sents in out.items()
    }


def is_long_tags(path: str | Path) -> bool:
    """Whether a tags file is in WMT 2021's long layout (7 tab-separated columns a line)."""
    first = next(iter(_drop_final_empty(read_lines(path))), "")
    return first.count("\t") == 6


def _suffix(path: Path) -> str:
    """The suffix of ``path`` that tells its format, ``.gz`` looked through (read_lines
    gunzips): ``.tags`` for ``x.tags.gz``."""
    path = Path(path)
    if path.suffix.lower() == ".gz":
        path = path.with_suffix("")
    return path.suffix.lower()


def _beside(tags: Path, suffix: str) -> Path:
    """The file beside ``tags`` with ``suffix`` (gzipped too when the tags file is)."""
    base = tags.with_suffix("") if tags.suffix.lower() == ".gz" else tags
    plain = base.with_suffix(suffix)
    gz = plain.with_name(plain.name + ".gz")
    return gz if tags.suffix.lower() == ".gz" and gz.exists() and not plain.exists() else plain


def _drop_final_empty(lines: Sequence[Any]) -> list[Any]:
    lines = list(lines)
    return lines[:-1] if lines and lines[-1] == "" else lines


def _first(rec: dict, keys: Sequence[str], what: str, where: str) -> Any:
    for k in keys:
        if k in rec:
            return rec[k]
    raise ValueError(f"{where}: no {what} field (one of {', '.join(keys)})")


def _span(raw: dict, text: str, where: str) -> dict[str, Any] | None:
    """One span in the common shape, or None for an omission without a place."""
    start, end = raw.get("start", raw.get("start_i")), raw.get("end", raw.get("end_i"))
    category = next((raw[k] for k in CATEGORY_KEYS if raw.get(k) is not None), None)
    out = {"start": start, "end": end, "severity": raw.get("severity"), "category": category}
    if start == "missing" or end == "missing" or start is None:
        return None
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(text)):
        raise ValueError(f"{where}: span [{start}, {end}) is not inside the {len(text)}-character text")
    return out


def read_span_jsonl(path: str | Path) -> list[GoldItem]:
    """ESA / MQM / RAGTruth span annotations (see the module docstring)."""
    from .gold_check import check_span_jsonl

    check_span_jsonl(path)  # every value's type first: file:line and the field
    items = []
    for k, rec in enumerate(read_jsonl(path, objects=True)):
        where = f"{path}:{k + 1}"
        text = _first(rec, TEXT_KEYS, "text", where)
        raw = _first(rec, SPAN_KEYS, "error-span list", where) or []
        spans, omissions = [], []
        for s in raw:
            got = _span(s, text, where)
            (spans.append(got) if got else omissions.append(
                {"severity": s.get("severity"),
                 "category": next((s[c] for c in CATEGORY_KEYS if s.get(c)), None)}))
        src = next((rec[s] for s in SOURCE_KEYS if isinstance(rec.get(s), str)), None)
        group = str(rec["source_id"]) if "source_id" in rec else src
        if group is None:
            group = "/".join(str(rec[g]) for g in GROUP_KEYS if g in rec) or str(k)
        items.append(GoldItem(text, sorted(spans, key=lambda s: (s["start"], s["end"])),
                              group, src, omissions=omissions))
    return items


def span_format(path: str | Path) -> str | None:
    """:func:`detect_format`, or None when the file is not one of these formats."""
    try:
        return detect_format(path)
    except ValueError:
        return None


def detect_format(path: str | Path) -> str:
    """The format of a gold file: ``wmt-tags`` for ``.tags`` files, else from the first
    JSONL record's keys (``labels`` with ``response``: ``ragtruth``; ``mqm_spans``:
    ``mqm``; other span lists: ``esa``).

    Raises:
        ValueError: the file is none of them (name ``--gold-format``).
    """
    path = Path(path)
    if _suffix(path) == ".tags":
        return "wmt-tags"
    if _suffix(path) == ".tsv" and next(iter(read_lines(path)), "").startswith("system\tdoc\t"):
        return "google-mqm"  # registered: .gold_mqm
    if _suffix(path) in (".jsonl", ".json"):
        first = next(iter_jsonl_lines(path, objects=True), (0, {}))[1]  # the first record only
        if "hard_labels" in first and "model_output_text" in first:
            return "mushroom"  # registered: .gold_shroom
        if "response" in first and "labels" in first:
            return "ragtruth"
        if "mqm_spans" in first:
            return "mqm"
        if any(k in first for k in SPAN_KEYS) and any(k in first for k in TEXT_KEYS):
            return "esa"
    raise ValueError(f"{path}: cannot tell its gold format; name one with --gold-format "
                     f"({', '.join(FORMATS)})")


def read_gold_items(path: str | Path, fmt: str | None = None, *, mt: str | Path | None = None,
                    source: str | Path | None = None) -> list[GoldItem]:
    """Read any supported gold file (format detected when ``fmt`` is None)."""
    fmt = fmt or detect_format(path)
    if fmt == "wmt-tags":
        return read_wmt_tags(path, mt, source)
    if fmt in ("esa", "mqm", "ragtruth"):
        if _suffix(Path(path)) == ".tags":
            raise ValueError(f"{path} is a WMT word-tags file, not {fmt} JSONL; use "
                             "--gold-format wmt-tags")
        return read_span_jsonl(path)
    if fmt == "google-mqm":  # registered: Google's MQM TSV (.gold_mqm)
        from .gold_mqm import read_google_mqm

        return list(read_google_mqm(path))
    if fmt == "mushroom":  # registered: Mu-SHROOM hallucination spans (.gold_shroom)
        from .gold_shroom import read_mushroom

        return list(read_mushroom(path))
    raise ValueError(f"unknown gold format {fmt!r}; use one of {', '.join(FORMATS)}")
