"""Text from a model or a user made safe for where it is shown.

* :func:`visible`: for a terminal. Control characters (ESC, BEL, C1, ...) and the
  bidirectional formatting characters become visible escapes such as ``\\x1b`` or
  ``\\u202e``, so a model cannot move the cursor, ring the bell or reorder a line.
* :func:`html_text`: for an HTML page. Escaped, and text that holds bidirectional
  formatting characters is wrapped in ``<bdi>`` so it cannot reorder the rest of a line.
* :func:`card_text` / :func:`card_safe`: for a model card (markdown with YAML metadata).
  One line, control characters visible, tags escaped.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import dataclasses
import html
import unicodedata
from typing import Any

#: LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, and the marks LRM, RLM, ALM.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                          "\u200e\u200f\u061c")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(ch: str, keep: str) -> bool:
    if ch in keep:
        return False
    return unicodedata.category(ch) == "Cc" or ch in BIDI_CONTROLS or ch in "\u2028\u2029"


def visible(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control and bidirectional formatting character, except those
    in ``keep``, replaced by a visible escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable() and not (BIDI_CONTROLS & set(text)):
        return text
    return "".join(_escape(ch) if _unsafe(ch, keep) else ch for ch in text)


def html_text(text: str) -> str:
    """``text`` escaped for HTML; isolated in ``<bdi>`` when it holds bidi controls."""
    escaped = html.escape(text)
    return f"<bdi>{escaped}</bdi>" if BIDI_CONTROLS & set(text) else escaped


def card_text(text: str) -> str:
    """``text`` for a model card: one line, controls visible, ``<``/``>``/``&`` escaped."""
    return html.escape(visible(text, keep=""), quote=False)


def _card_value(value: Any) -> Any:
    if isinstance(value, str):
        return card_text(value)
    if isinstance(value, dict):
        return {card_text(str(k)): _card_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_card_value(v) for v in value)
    return value


def card_safe(config: Any) -> Any:
    """A copy of the dataclass ``config`` with every string in it (nested dicts and lists
    included) passed through :func:`card_text`."""
    changes = {f.name: _card_value(getattr(config, f.name)) for f in dataclasses.fields(config)}
    return dataclasses.replace(config, **changes)
