"""Prompt rendering for scoring and generation: records -> ids, exactly as training data is.

One renderer, :func:`render_record`, turns a ``{source}`` / ``{messages}`` record and a
candidate into a training-style example with :func:`sigmoid_head.data.tokenize.tokenize_records`;
:func:`make_examples` (force-decoding a candidate) and :func:`prompt_ids` (the ids a model
generates from: the same rendering with an empty candidate, cut before the first scored
token) both go through it. Each takes one :class:`~.prompt_format.PromptFormat` (or its
fields as keywords); :meth:`PromptFormat.for_model <.prompt_format.PromptFormat.for_model>`
says which settings apply when the caller gives none: what the head was trained with (its
saved training config).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .batching import IGNORE_INDEX
from .prompt_format import PromptFormat
from .records import Located, record_where
from .tokenize import tokenize_records


class ScoreInputError(ValueError):
    """Scoring inputs are malformed (counts differ, empty candidate, ...)."""


def candidate_text(rec: dict, k: int) -> str:
    cand = rec.get("candidate", rec.get("target"))
    if not isinstance(cand, str):
        raise ScoreInputError(f"{record_where(rec, k)}: needs a string 'candidate', has keys {sorted(rec)}")
    if not cand.strip():
        raise ScoreInputError(f"{record_where(rec, k)}: the candidate is empty")
    return cand


def to_data_record(rec: dict, k: int, candidate: str | None = None) -> dict:
    """A {source, candidate} / {messages, candidate} record as a training-data record.

    ``candidate`` overrides the record's own (generation renders an empty one).
    """
    if not isinstance(rec, dict):
        raise ScoreInputError(f"record {k + 1}: expected a dict, got {type(rec).__name__}")
    where = record_where(rec, k)
    cand = candidate_text(rec, k) if candidate is None else candidate
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise ScoreInputError(f"{where}: 'messages' must be a non-empty list")
        if isinstance(msgs[-1], dict) and msgs[-1].get("role") == "assistant":
            raise ScoreInputError(
                f"{where}: 'messages' must not end with an assistant "
                "turn; the candidate is the assistant's answer"
            )
        return {"messages": [*msgs, {"role": "assistant", "content": cand}]}
    if not isinstance(rec.get("source"), str):
        raise ScoreInputError(f"{where}: needs a string 'source' or a 'messages' list")
    return {"source": rec["source"], "target": cand}


def render_record(
    rec: dict,
    k: int,
    tokenizer: Any,
    prompt_format: PromptFormat,
    *,
    candidate: str | None = None,
) -> tuple[list[dict], Any]:
    """Tokenize record ``k`` (with ``candidate``, default its own) as training data is.

    Returns:
        The examples (zero or one) and the truncation counts of ``tokenize_records``.
    """
    try:
        return tokenize_records(
            [to_data_record(rec, k, candidate)],
            tokenizer,
            prompt_format,
            source_name=rec.file if isinstance(rec, Located) else "<inputs>",
            line_numbers=[rec.line if isinstance(rec, Located) else k + 1],
        )
    except ScoreInputError:
        raise
    except ValueError as err:
        raise ScoreInputError(str(err)) from err


def _last_span_only(labels: list[int]) -> list[int]:
    """Keep only the last contiguous run of labels (the candidate turn of a chat)."""
    end = max(i for i, t in enumerate(labels) if t != IGNORE_INDEX) + 1
    start = end
    while start > 0 and labels[start - 1] != IGNORE_INDEX:
        start -= 1
    return [IGNORE_INDEX] * start + labels[start:end] + [IGNORE_INDEX] * (len(labels) - end)


def _cut_prompt_left(rec: dict, k: int, tokenizer: Any, prompt_format: PromptFormat
                     ) -> tuple[list[dict], Any]:
    """Render record ``k`` with its source cut from the left (halved until the candidate
    fits in ``max_length``), with a warning; the example is flagged ``truncated``.

    Raises:
        ScoreInputError: nothing is left to score even with an empty source.
    """
    src, max_length = rec.get("source"), prompt_format.max_length
    keep, best = (len(src) if isinstance(src, str) else 0), None
    while keep > 0 and (best is None or best[1].truncated):  # until the candidate fits whole
        keep //= 2
        cut = {**rec, "source": src[len(src) - keep:]}
        ex, stats = render_record(Located(cut, rec.file, rec.line) if isinstance(rec, Located)
                                  else cut, k, tokenizer, prompt_format)
        if ex:
            best = ex, stats, keep
    if best is not None:
        warnings.warn(f"{record_where(rec, k)}: the prompt was cut from the left to its last "
                      f"{best[2]} characters to fit max_length={max_length}", stacklevel=3)
        best[1].truncated = max(int(best[1].truncated), 1)
        return best[0], best[1]
    raise ScoreInputError(
        f"{record_where(rec, k)}: nothing left to score after truncation at max_length={max_length}")


def make_examples(
    records: Sequence[dict],
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    *,
    is_encoder_decoder: bool | None = None,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    max_length: int | None = None,
) -> list[dict]:
    """Tokenize scoring records exactly as training data is tokenized.

    Only the candidate is scored: for chats, earlier assistant turns are unmasked.

    Args:
        records: ``{source, candidate}`` / ``{messages, candidate}`` dicts.
        tokenizer: the model's tokenizer.
        prompt_format: how they are rendered, or its fields as keywords
            (``is_encoder_decoder``; ``prompt_template`` default ``"{source}\\n"``,
            ``use_chat_template`` default False, ``max_length`` default 2048).

    Raises:
        ScoreInputError: a malformed record, or one with nothing left to score.
    """
    form = PromptFormat.given(prompt_format, is_encoder_decoder=is_encoder_decoder,
                              prompt_template=prompt_template,
                              use_chat_template=use_chat_template, max_length=max_length)
    examples = []
    for k, rec in enumerate(records):  # one at a time so that a dropped record can be named
        ex, stats = render_record(rec, k, tokenizer, form)
        cut_left = not ex
        if cut_left:  # the prompt alone fills max_length: keep its end, warn, go on
            ex, stats = _cut_prompt_left(rec, k, tokenizer, form)
        if stats.truncated and not cut_left:  # (a cut prompt was warned about already)
            warnings.warn(f"{record_where(rec, k)}: truncated at max_length={form.max_length}",
                          stacklevel=2)
        if stats.truncated:
            ex[0]["truncated"] = True
        if "messages" in rec:
            ex[0]["labels"] = _last_span_only(ex[0]["labels"])
        examples.append(ex[0])
    return examples


def prompt_ids(
    records: Sequence[dict],
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    *,
    is_encoder_decoder: bool | None = None,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    max_length: int | None = None,
    cut: set[int] | None = None,
) -> list[list[int]]:
    """The ids a model generates from, rendered as :func:`make_examples` renders them.

    Args:
        records: ``{"source"}`` or ``{"messages"}`` (ending with a user turn) dicts.
        tokenizer: the model's tokenizer.
        prompt_format: how they are rendered, or its fields as keywords (as for
            :func:`make_examples`); ``max_length`` is the longest prompt.
        cut: when given, receives the index of every record whose prompt was cut to
            ``max_length`` (each also gets a warning naming it: ``file:line`` for a
            :class:`~sigmoid_head.data.records.Located` record).

    Returns:
        One id list per record: the encoder input (seq2seq) or everything before the
        first trained token (causal: BOS + prompt, or the chat up to the assistant's
        generation prompt), keeping the last ``max_length`` ids (the first for seq2seq).
    """
    form = PromptFormat.given(prompt_format, is_encoder_decoder=is_encoder_decoder,
                              prompt_template=prompt_template,
                              use_chat_template=use_chat_template, max_length=max_length)
    seq2seq, max_length = form.is_encoder_decoder, form.max_length
    whole = form.cut_to(10**9)  # the prompt is cut here, from the side that keeps its end
    out = []
    for k, rec in enumerate(records):
        if isinstance(rec, dict) and "messages" not in rec and not isinstance(rec.get("source"), str):
            raise ScoreInputError(f"{record_where(rec, k)}: needs a string 'source' or 'messages'")
        ex, _ = render_record(rec, k, tokenizer, whole, candidate="")
        ids, labels = ex[0]["input_ids"], ex[0]["labels"]
        if not seq2seq:
            ids = ids[: next(i for i, t in enumerate(labels) if t != IGNORE_INDEX)]
        if len(ids) > max_length:
            kept = "first" if seq2seq else "last"
            warnings.warn(f"{record_where(rec, k)}: the prompt ({len(ids)} tokens) was cut to "
                          f"its {kept} {max_length} tokens to fit the model", stacklevel=2)
            if cut is not None:
                cut.add(k)
        out.append(ids[-max_length:] if not seq2seq else ids[:max_length])
    return out

