"""Exact character offsets of scored tokens and words in the text as the user gave it.

:func:`token_offsets` is a pure function of (tokenizer, text, token ids): it decodes the
ids token by token, which gives each token the characters it adds to the decoded text,
then maps the decoded text onto the given one. The decoded text can differ from the
given text: a leading space the tokenizer drops or adds, Unicode normalisation (NFKC
composes combining marks), spaces a SentencePiece model merges. Equal stretches map one
to one; a stretch that differs maps as a whole (every token touching it gets all of it);
characters of the given text that no token spelled (e.g. stripped leading spaces) belong
to no token. So ``text[start:end]`` is always the part of the given text the token
stands for, and spans never run backwards.

Conventions (the same for ``score`` and ``generate`` output):

* offsets count Python ``str`` characters (Unicode code points), ``end`` exclusive;
* a token carries the whitespace it spells (``" world"`` covers the space); a word's
  span has its surrounding whitespace stripped;
* tokens that only together spell one character (byte-level pieces of an emoji or a
  CJK character) each get the span of that whole character;
* special tokens (BOS, EOS, end of turn) spell nothing: an empty span at their place.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..data.tokenize import special_ids

REPLACEMENT = "\ufffd"
"""What a tokenizer decodes an incomplete UTF-8 sequence to."""


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return tokenizer.decode(list(ids), skip_special_tokens=False,
                            clean_up_tokenization_spaces=False)


def decoded_pieces(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """The decoded text of ``ids`` and each token's span in it.

    Each step decodes the previous group of tokens and the new ones together and keeps
    what the new ones add (so a SentencePiece word keeps its leading space, as in the
    whole text). A token whose piece is still an incomplete character waits for the next
    one; the tokens of such a group share the group's span. When the pieces do not add up
    to the decoded whole text, every prefix is decoded instead (slower, always consistent).
    """
    ids = [int(i) for i in ids]
    whole = _decode(tokenizer, ids)
    spans: list[tuple[int, int]] = []
    pos, ctx, read = 0, 0, 0  # ids[ctx:read] = the previous group, decoded for context
    for i in range(len(ids)):
        before = _decode(tokenizer, ids[ctx:read])
        after = _decode(tokenizer, ids[ctx : i + 1])
        if not after.startswith(before) or after.endswith(REPLACEMENT):
            continue  # an incomplete character: wait for the next token
        piece = len(after) - len(before)
        spans += [(pos, pos + piece)] * (i + 1 - read)
        pos, ctx, read = pos + piece, read, i + 1
    if read == len(ids) and pos == len(whole):
        return whole, spans
    return whole, _prefix_spans(tokenizer, ids, whole)


def _prefix_spans(tokenizer: Any, ids: list[int], whole: str) -> list[tuple[int, int]]:
    """Span of token i = growth of the stable prefix of decode(ids[:i+1]) within ``whole``."""
    spans, prev = [], 0
    for i in range(len(ids)):
        d = _decode(tokenizer, ids[: i + 1])
        stable = len(d) if whole.startswith(d) else len(_common_prefix(d, whole))
        end = min(len(whole), stable + (0 if whole.startswith(d) else 1))
        spans.append((min(prev, end), end))
        prev = max(prev, stable)
    return spans


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def normalized(text: str) -> tuple[str, list[int], list[int]]:
    """NFKC form of ``text`` and, per character of it, the span of ``text`` it comes from.

    Each base character is normalised together with the combining marks after it, so a
    decomposed "e" + U+0301 becomes one "é" that stands for both, and a ligature ("ﬁ")
    becomes several characters that each stand for it.
    """
    norm: list[str] = []
    first: list[int] = []
    last: list[int] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        piece = unicodedata.normalize("NFKC", text[i:j])
        norm.append(piece)
        first += [i] * len(piece)
        last += [j] * len(piece)
        i = j
    return "".join(norm), first, last


def char_map(decoded: str, text: str) -> tuple[list[int], list[int], list[int]]:
    """Map positions of ``decoded`` onto ``text`` (through ``text``'s NFKC form when they
    differ, so normalisation alone never blurs a span).

    Returns:
        ``(first, last, at)``: for each decoded character the first and one-past-last
        characters of ``text`` it stands for, and for each boundary ``0..len(decoded)``
        the position in ``text`` where an empty span there goes.
    """
    if decoded == text:
        r = list(range(len(text) + 1))
        return r[:-1], r[1:], r
    norm, n_first, n_last = normalized(text)
    n_at = [*n_first, len(text)]
    first, last, at = [0] * len(decoded), [0] * len(decoded), [0] * (len(decoded) + 1)
    ops = difflib.SequenceMatcher(None, decoded, norm, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        for k in range(i1, i2):
            if tag == "equal":
                first[k], last[k] = n_first[j1 + k - i1], n_last[j1 + k - i1]
            elif j2 > j1:
                first[k], last[k] = n_first[j1], n_last[j2 - 1]
            else:
                first[k] = last[k] = n_at[j1]
            at[k] = first[k]
        at[i2] = n_at[j2]
    return first, last, at


def token_offsets(tokenizer: Any, text: str, ids: Sequence[int],
                  specials: set[int] | frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """Character span in ``text`` of every token of ``ids`` (module docstring).

    Args:
        tokenizer: a Hugging Face tokenizer.
        text: the text the tokens spell, as given by the user (or as generated).
        ids: (T,) token ids, special tokens included.
        specials: ids that spell nothing (get an empty span at their place).

    Returns:
        One ``(start, end)`` per token, ``0 <= start <= end <= len(text)``, never
        decreasing.
    """
    ids = [int(i) for i in ids]
    decoded, spans = decoded_pieces(tokenizer, [t for t in ids if t not in specials])
    first, last, at = char_map(decoded, text)
    out: list[tuple[int, int]] = []
    mapped = iter(spans)
    pos = done = 0  # spans never start before an earlier one; text spelled up to `done`
    for t in ids:
        if t in specials:
            out.append((max(pos, done), max(pos, done)))
            continue
        a, b = next(mapped)
        start, end = (first[a], last[b - 1]) if b > a else (at[a], at[a])
        start = min(max(start, pos), end)
        out.append((start, end))
        pos, done = start, max(done, end)
    return out


def word_offsets(text: str, token_spans: Sequence[tuple[int, int]],
                 words: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """Span of each word (a list of token indices) with surrounding whitespace stripped."""
    out = []
    for toks in words:
        start = min(token_spans[t][0] for t in toks)
        end = max(token_spans[t][1] for t in toks)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        out.append((start, end))
    return out


def add_offsets(rec: dict[str, Any], tokenizer: Any, ids: Sequence[int], text: str | None,
                words: Sequence[Sequence[int]]) -> None:
    """Add ``start``/``end`` to every entry of ``rec["tokens"]`` and ``rec["words"]`` (in place).

    Args:
        rec: a record with ``tokens`` (one per id) and ``words`` (one per token group).
        tokenizer: the tokenizer of ``ids``.
        ids: (T,) the scored token ids.
        text: the text as given; None = the ids decoded without special tokens (what
            ``generate`` reports as the candidate).
        words: each word's token indices.
    """
    if text is None:
        text = tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)
    spans = token_offsets(tokenizer, text, ids, special_ids(tokenizer))
    for tok, (start, end) in zip(rec["tokens"], spans, strict=True):
        tok["start"], tok["end"] = start, end
    for word, (start, end) in zip(rec["words"], word_offsets(text, spans, words), strict=True):
        word["start"], word["end"] = start, end
