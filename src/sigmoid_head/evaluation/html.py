"""One self-contained HTML page of token scores: ``sigmoid-head score --html page.html``.

Per scored candidate: its source, one line per method with every token coloured by that
method's probability (red 0 -> yellow -> green 1), every number of the token on hover,
the error spans (``errors``) underlined in every line and listed, and the sequence scores
(with the calibrated probabilities when the head has a calibrator). Inline CSS only: no
script, font or image is fetched, so the page opens anywhere and can be mailed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..registry import columns
from ..registry import methods as registry
from ..safe.files import write_atomic
from ..safe.text import html_text
from .calibration import KINDS

PASS_KEYS = ("entropy", "n_dominant")
"""Per-token numbers shown on hover besides each registered method's probability."""

CSS = """
body{font:15px/1.5 system-ui,sans-serif;margin:24px;max-width:1100px;color:#222}
h1{font-size:20px} .legend span{padding:2px 8px;margin-right:2px;border-radius:3px}
.item{border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:14px 0}
.src{color:#666;font-size:13px} .meta{font-size:12px;color:#555}
.line{margin:4px 0;white-space:pre-wrap} .m{display:inline-block;width:96px;font-size:12px;color:#555}
.tok{border-radius:3px;padding:1px 0;position:relative}
.tok.err,.errmark{border-bottom:3px solid #c00}
.tok:hover{box-shadow:0 0 0 2px #333}
.tok:hover::after{content:attr(data-tip);position:absolute;left:0;top:1.7em;z-index:9;
  background:#222;color:#fff;font-size:11px;padding:3px 6px;border-radius:4px;white-space:pre}
.errors{font-size:13px} .errors b{color:#c00}
table.seq{font-size:12px;border-collapse:collapse;margin-top:4px}
table.seq td,table.seq th{padding:1px 8px;text-align:right;border-bottom:1px solid #eee}
"""


def colour(p: float) -> str:
    """Background colour of a probability: hue 0 (red) at 0 to 120 (green) at 1."""
    p = min(max(float(p), 0.0), 1.0)
    return f"hsl({120 * p:.0f},75%,78%)"


def token_texts(tokenizer: Any, pieces: Sequence[str]) -> list[str]:
    """The text each token adds to the decoded candidate ("" for special tokens).

    Incremental decoding (prefix by prefix), so byte-level and SentencePiece pieces both
    come out as the characters a reader sees.
    """
    ids = tokenizer.convert_tokens_to_ids(list(pieces))
    out, prev, kept = [], "", []
    for i in ids:
        kept.append(i)
        text = tokenizer.decode(kept, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        out.append(text[len(prev):] if text.startswith(prev) else text)
        prev = text
    return out


def _in_error(start: int, end: int, errors: Sequence[dict]) -> bool:
    return any(start < e["end"] and e["start"] < end for e in errors)


def _tip(tok: dict) -> str:
    parts = []
    for k in (*registry.names(), *PASS_KEYS):
        if k in tok:
            parts.append(f"{k} {tok[k]:.3g}" if isinstance(tok[k], float) else f"{k} {tok[k]}")
    return "\n".join(parts)


def _token_line(row: dict, texts: Sequence[str], method: str) -> str:
    decoded = "".join(texts)
    shift = max(decoded.find(row.get("candidate", "")), 0) if row.get("candidate") else 0
    errors = row.get("errors", [])
    spans, pos = [], 0
    for tok, text in zip(row["tokens"], texts, strict=True):
        start, end = pos - shift, pos - shift + len(text)
        pos += len(text)
        if not text or not isinstance(tok.get(method), int | float):  # absent, or null (NaN)
            continue
        cls = "tok err" if _in_error(start, end, errors) else "tok"
        spans.append(f'<span class="{cls}" data-method="{method}" data-p="{tok[method]:.6g}" '
                     f'data-tip="{html.escape(_tip(tok))}" '
                     f'style="background:{colour(tok[method])}">{html_text(text)}</span>')
    return f'<div class="line"><span class="m">{method}</span>{"".join(spans)}</div>'


def _sequence_table(row: dict, methods: Sequence[str]) -> str:
    """Every method's sequence scores: its aggregations (as probabilities) and calibrations."""
    cols = [(a.label, a) for a in registry.AGGREGATIONS.values() if a.distinct]
    cols += [(k.capitalize() if k == "platt" else k, f"_{k}") for k in KINDS]
    cols = [(n, c) for n, c in cols if any(_key(m, c) in row for m in methods)]
    head = "".join(f"<th>{n}</th>" for n, _ in cols)
    body = []
    for m in methods:
        cells = []
        for _, c in cols:
            v = row.get(_key(m, c))
            if v is not None and isinstance(c, registry.Aggregation):
                v = c.probability(v)
            cells.append(f"<td>{v:.3g}</td>" if v is not None else "<td>–</td>")
        body.append(f"<tr><th>{m}</th>{''.join(cells)}</tr>")
    if row.get("combined") is not None:  # the recommended score: one number, its own row
        body.append(f'<tr class="combined"><th>combined</th><td colspan="{max(1, len(cols))}">'
                    f'{float(row["combined"]):.3g}</td></tr>')
    for key, direction in sequence_columns():  # every other registered sequence column
        v = row.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool):
            body.append(f'<tr class="column"><th>{html.escape(key)}</th><td colspan="'
                        f'{max(1, len(cols))}">{float(v):.3g} <small>({direction})</small>'
                        "</td></tr>")
    return f'<table class="seq"><tr><th>sequence</th>{head}</tr>{"".join(body)}</table>'


def sequence_columns() -> list[tuple[str, str]]:
    """(key, direction) of every registered sequence or pass column that is one key (not a
    method's ``<m>`` family, not ``combined``, shown first): the baselines, a plugin's
    columns, the pass statistics; in registry order."""
    return [(k, c.direction) for c in columns.columns() if c.level in (columns.SEQUENCE, columns.PASS)
            and "<m>" not in c.name for k in c.expand() if k != "combined"]


def _key(method: str, col: registry.Aggregation | str) -> str:
    return col.key(method) if isinstance(col, registry.Aggregation) else f"{method}{col}"


def _item(i: int, row: dict, texts: Sequence[str], methods: Sequence[str]) -> str:
    meta = " · ".join(f"{k}: {html.escape(str(row[k]))}" for k in ("kind", "label") if k in row)
    src = row.get("source") or ""
    errors = row.get("errors", [])
    err = ("none" if not errors else "; ".join(
        f'<b>{html_text(e["text"])}</b> [{e["start"]}:{e["end"]}] '
        f'{e["severity"]}, confidence {e["confidence"]:.2f}' for e in errors))
    lines = "".join(_token_line(row, texts, m) for m in methods)
    return (f'<div class="item" id="item-{i}"><div class="meta">#{i} {meta}</div>'
            f'<div class="src">{html_text(src)}</div>{lines}'
            f'<div class="errors" data-n="{len(errors)}">error spans: {err}</div>'
            f"{_sequence_table(row, methods)}</div>")


def render_page(rows: Sequence[dict], texts: Sequence[Sequence[str]],
                title: str = "Token scores", spans_from: str | None = None,
                notices: Sequence[str] = ()) -> str:
    """The page for score records with per-token scores.

    Args:
        rows: records from ``score_records(..., with_tokens=True)``, optionally with
            ``errors`` (:mod:`sigmoid_head.evaluation.spans`) and calibrated columns.
        texts: per record, the text of each of its tokens (:func:`token_texts`).
        title: page title.
        spans_from: how the error spans were found (e.g. "sigmoid word score < 0.01"),
            named in the legend.
        notices: lines shown above the legend (saved settings that leave the head out:
            :func:`~sigmoid_head.evaluation.extras.head_notices`).

    Returns:
        The HTML document.
    """
    if any("tokens" not in r for r in rows):
        raise ValueError("the page needs per-token scores (score with --with-tokens)")
    first = rows[0]["tokens"][0] if rows and rows[0]["tokens"] else {}
    methods = [m for m in registry.names() if m in first]
    legend = "".join(f'<span style="background:{colour(p)}">{p:.1f}</span>'
                     for p in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0))
    source = f" ({html.escape(spans_from)})" if spans_from else ""
    items = "".join(_item(i, r, t, methods) for i, (r, t) in enumerate(zip(rows, texts, strict=True)))
    notes = "".join(f"<p class='notice'>{html.escape(n)}</p>" for n in notices)
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{notes}<p class='legend'>token probability: {legend} "
            "· hover a token for its numbers · <span class='errmark'>underlined</span>"
            f" = inside an error span{source}</p>{items}</body></html>\n")


def write_page(path: str | Path, rows: Sequence[dict], tokenizer: Any,
               title: str = "Token scores", spans_from: str | None = None,
               notices: Sequence[str] = ()) -> Path:
    """Write :func:`render_page` for ``rows``, token texts decoded with ``tokenizer``."""
    texts = [token_texts(tokenizer, [t["token"] for t in r["tokens"]]) for r in rows]
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(out, render_page(rows, texts, title, spans_from, notices),  # whole or not at all
                        stream=True)  # --html /dev/stdout: written straight
