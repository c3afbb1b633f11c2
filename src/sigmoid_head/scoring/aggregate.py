"""Aggregate token scores into word and sequence scores.

Sequence level (the paper multiplies token scores): every method of the registry gets
the aggregations it declares (:data:`sigmoid_head.registry.methods.AGGREGATIONS`), computed in log
space so that long outputs keep a meaningful value even when the product underflows to 0:

* ``<name>``: product of token probabilities, ``exp(sum log p)``;
* ``<name>_logprob``: ``sum log p`` (the same ranking, never underflows);
* ``<name>_mean_log``: ``mean log p`` (length-normalised);
* ``<name>_min``: the smallest token probability.

Word level: a word is a maximal run of tokens whose characters are not separated by
whitespace in the candidate text (a token whose text starts with whitespace starts a
new word; a whitespace-only token is glued to the token after it). Character spans
come from the tokenizer's offset mapping of the candidate text; when re-tokenizing the
text does not give back the scored ids (chat-template context, a seq2seq BOS, ...),
spans come from incremental decoding instead. Special tokens (BOS, EOS, end of turn)
belong to no word: they count in sequence scores but not in word scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.tokenize import special_ids
from ..registry import columns
from ..registry.contract import pass_value
from ..registry.methods import sequence_scores
from .offsets import add_offsets
from .token_scores import TokenScores

WORD_REDUCERS: dict[str, Callable[[np.ndarray], float]] = {
    "product": lambda p: float(np.exp(np.sum(np.log(np.maximum(p, 1e-300))))),
    "min": lambda p: float(np.min(p)),
}
"""How a word's token probabilities (T_w,) become one word score."""

@dataclass
class Word:
    """One word of a candidate text.

    Attributes:
        text: the word's characters (surrounding whitespace stripped).
        tokens: indices of its tokens in the scored token sequence.
    """

    text: str
    tokens: list[int]


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return tokenizer.decode(
        list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
    )


def token_spans(
    tokenizer: Any, ids: Sequence[int], text: str | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """Character span of each token in the text the tokens spell.

    Args:
        tokenizer: a Hugging Face tokenizer.
        ids: (T,) token ids, no special tokens.
        text: the candidate text; when it tokenizes (without special tokens) back to
            exactly ``ids`` its offset mapping is used.

    Returns:
        The text the spans index into, and one ``(start, end)`` per token.
    """
    ids = list(ids)
    if text is not None and getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if list(enc["input_ids"]) == ids:
            return text, [tuple(o) for o in enc["offset_mapping"]]
    spans, prev = [], 0
    for i in range(len(ids)):  # incremental decoding: span i = growth of the decoded prefix
        end = len(_decode(tokenizer, ids[: i + 1]))
        spans.append((min(prev, end), end))
        prev = max(prev, end)
    return _decode(tokenizer, ids), spans


def group_words(text: str, spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Group tokens into words (see the module docstring).

    Args:
        text: the text the spans index into.
        spans: (T,) character span per token.

    Returns:
        Lists of token indices (into ``spans``), one per word, in order.
    """
    groups: list[list[int]] = []
    prev_end, glue = 0, False
    for i, (start, end) in enumerate(spans):
        piece = text[start:end]
        gap = text[prev_end:start] if start > prev_end else ""
        new = not groups or any(c.isspace() for c in gap) or piece[:1].isspace()
        if groups and glue:  # the current word holds only whitespace so far
            new = False
        if new:
            groups.append([i])
        else:
            groups[-1].append(i)
        glue = bool(piece) and piece.isspace() and (new or glue)
        prev_end = max(prev_end, end)
    if len(groups) > 1 and not "".join(text[slice(*spans[j])] for j in groups[-1]).strip():
        groups[-2].extend(groups.pop())  # trailing whitespace joins the last word
    return groups


def words_of(tokenizer: Any, ids: Sequence[int], text: str | None = None) -> list[Word]:
    """Split scored tokens into words of the candidate text.

    Args:
        tokenizer: a Hugging Face tokenizer.
        ids: (T,) the scored token ids (may include special tokens, which join no word).
        text: the candidate text, if known.

    Returns:
        Words whose ``tokens`` index into ``ids``.
    """
    specials = special_ids(tokenizer)
    keep = [i for i, t in enumerate(ids) if int(t) not in specials]
    if not keep:
        return []
    spelled, spans = token_spans(tokenizer, [int(ids[i]) for i in keep], text)
    words = []
    for group in group_words(spelled, spans):
        start, end = spans[group[0]][0], spans[group[-1]][1]
        words.append(Word(spelled[start:end].strip(), [keep[j] for j in group]))
    return words


def word_scores(words: Sequence[Word], probs: np.ndarray, how: str = "product") -> list[float]:
    """Score words from token probabilities.

    Args:
        words: as from :func:`words_of`.
        probs: (T,) token probabilities of the scored sequence.
        how: a key of :data:`WORD_REDUCERS` ("product" or "min").

    Returns:
        One score per word.
    """
    if how not in WORD_REDUCERS:
        raise ValueError(f"unknown word aggregation {how!r}; use one of {sorted(WORD_REDUCERS)}")
    p = np.asarray(probs, dtype=np.float64)
    return [WORD_REDUCERS[how](p[w.tokens]) for w in words]


def entropy_mean(ts: TokenScores) -> float | None:
    """The pass statistic ``entropy_mean``: mean softmax entropy (None without the softmax)."""
    return None if ts.entropy is None else float(np.mean(ts.entropy))


def dominant_mean(ts: TokenScores) -> float | None:
    """The pass statistic ``dominant_mean``: mean dominant-set size."""
    return None if ts.n_dominant is None else float(np.mean(ts.n_dominant))


def n_tokens(ts: TokenScores) -> int:
    """The pass statistic ``n_tokens``: scored tokens."""
    return int(ts.ids.size)


def sequence_record(
    ts: TokenScores, tokenizer: Any, text: str | None = None, with_tokens: bool = False
) -> dict[str, Any]:
    """Flatten one sequence's token scores into its output record.

    Returns:
        ``sigmoid``, ``sigmoid_logprob``, ``sigmoid_mean_log``, ``sigmoid_min`` (and the
        same for ``softmax`` and ``boostedprob``), ``entropy_mean`` (an uncertainty),
        ``dominant_mean``, ``n_tokens``; with ``with_tokens`` also ``tokens`` (one
        ``{token, sigmoid, softmax, boostedprob, entropy, n_dominant, start, end}`` per
        scored token) and ``words`` (one ``{word, sigmoid, softmax, boostedprob, start,
        end}`` per word, token probabilities multiplied); ``start``/``end`` are character
        offsets into ``text`` (:mod:`.offsets`; without ``text``, the decoded output).
    """
    rec: dict[str, Any] = {}
    logs = ts.log_probs()
    for name, lp in logs.items():
        rec.update(sequence_scores(name, lp))
    for column in columns.pass_statistics():  # entropy_mean, dominant_mean, n_tokens, ...
        value = pass_value(column, column.hook()(ts))  # the plugin contract
        if value is not None:
            rec[column.name] = value
    if with_tokens:
        probs = ts.probabilities()
        pieces = tokenizer.convert_ids_to_tokens([int(t) for t in ts.ids])
        rec["tokens"] = [
            {
                "token": piece,
                **{k: float(v[i]) for k, v in probs.items()},
                **({} if ts.entropy is None else {"entropy": float(ts.entropy[i]),
                                                  "n_dominant": int(ts.n_dominant[i])}),
            }
            for i, piece in enumerate(pieces)
        ]
        words = words_of(tokenizer, ts.ids, text)
        per = {k: word_scores(words, v) for k, v in probs.items()}
        rec["words"] = [
            {"word": w.text, **{k: v[j] for k, v in per.items()}} for j, w in enumerate(words)
        ]
        add_offsets(rec, tokenizer, ts.ids, text, [w.tokens for w in words])
    return rec
