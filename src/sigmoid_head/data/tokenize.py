"""Training data: records (:mod:`.records`) -> tokenized examples with label masks.

Examples are dicts ``{"input_ids": list[int], "labels": list[int], "is_seq2seq": bool}``.
Causal examples follow the Hugging Face convention: ``labels`` is aligned with
``input_ids`` (same length) and the model shifts internally (position ``t`` predicts
token ``t + 1``); every untrained position is :data:`IGNORE_INDEX`, never the pad id.
Position 0 of a causal example is always untrained, as nothing predicts it. Seq2seq
examples hold the encoder ids in ``input_ids`` and the decoder targets in ``labels``.

Chat masks: each assistant turn trains the tokens the template adds after the
generation prompt, up to and including the last special token among them (the
end-of-turn token, e.g. ``<|im_end|>``). Whitespace after that token (ChatML's trailing
newline) is never trained; a template with no special token there trains all of them.

Batching and collation live in :mod:`.batching`, the record readers in :mod:`.records`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .batching import IGNORE_INDEX
from .prompt_format import PromptFormat
from .records import (
    _TASK_KEYS,
    TASKS,
    DataError,
    _check_record,
    detect_task,
    first_lines,
    read_records_with_lines,
)

logger = logging.getLogger(__name__)

TRAINING_MAX_LENGTH = 512
"""``max_length`` of :func:`tokenize_records` and :func:`load_examples` when given as a keyword
and left out (training's default; scoring's is longer)."""


@dataclass
class TruncationStats:
    """How many examples were truncated at ``max_length``.

    Attributes:
        total: Records seen.
        truncated: Examples cut at ``max_length`` (including ones dropped afterwards).
        dropped: Examples dropped because no trained token was left.
    """

    total: int = 0
    truncated: int = 0
    dropped: int = 0
    dropped_where: list[str] = field(default_factory=list, compare=False)
    """Where each dropped example was (``file:line``)."""




@dataclass(frozen=True)
class _Setup:
    """What tokenizing a record needs besides the record."""

    tokenizer: Any
    prompt_format: PromptFormat
    prefix: list[int]  # ids the tokenizer puts before a text: [bos] for Llama, [] for GPT-2


def _ids(tokenizer: Any, text: str, add_special_tokens: bool = False) -> list[int]:
    return list(tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"])


def _special_prefix(tokenizer: Any) -> list[int]:
    """The ids the tokenizer puts before a text (e.g. ``[bos]``), found by probing."""
    plain = _ids(tokenizer, "hello world")
    full = _ids(tokenizer, "hello world", add_special_tokens=True)
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start]
    return []


def _eos_id(tokenizer: Any) -> int:
    if tokenizer.eos_token_id is None:
        raise DataError("the tokenizer has no eos token; cannot end training targets")
    return int(tokenizer.eos_token_id)


def special_ids(tokenizer: Any) -> set[int]:
    """Ids of special tokens, including added ones such as ``<|im_end|>``/``<|eot_id|>``."""
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    return ids | {i for i, tok in added.items() if getattr(tok, "special", False)}


def _render_text(tokenizer: Any, messages: list[dict], gen_prompt: bool, where: str) -> str:
    """Render ``messages`` with the chat template, as text."""
    try:
        return tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=gen_prompt
        )
    except Exception as err:  # template errors come in many types
        raise DataError(f"{where}: the chat template failed: {err}") from err


def _render_ids(tokenizer: Any, messages: list[dict], gen_prompt: bool, where: str) -> list[int]:
    """Render ``messages`` with the chat template; tokenize with no extra special tokens."""
    return _ids(tokenizer, _render_text(tokenizer, messages, gen_prompt, where))


def _trained_end(full: list[int], start: int, specials: set[int]) -> int:
    """End of the trained span ``full[start:end]``: up to the last special token (end of turn)."""
    end = len(full)
    while end > start and full[end - 1] not in specials:
        end -= 1
    return end if end > start else len(full)  # no end-of-turn token: train all


def _chat_example(tokenizer: Any, messages: list[dict], where: str) -> tuple[list[int], list[int]]:
    """Render a chat; train each assistant turn's content and end-of-turn token(s)."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise DataError(
            "the tokenizer has no chat template; set tokenizer.chat_template, or train "
            "pairs with use_chat_template=False and a plain prompt_template"
        )
    input_ids = _render_ids(tokenizer, messages, False, where)
    labels = [IGNORE_INDEX] * len(input_ids)
    specials = special_ids(tokenizer)
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        prefix = _render_ids(tokenizer, messages[:i], True, where)
        full = _render_ids(tokenizer, messages[: i + 1], False, where)
        if full[: len(prefix)] != prefix or input_ids[: len(full)] != full:
            return _chat_example_split(tokenizer, messages, where, specials)
        end = _trained_end(full, len(prefix), specials)
        labels[len(prefix) : end] = full[len(prefix) : end]
    return input_ids, labels


def _chat_example_split(tokenizer: Any, messages: list[dict], where: str, specials: set[int]
                        ) -> tuple[list[int], list[int]]:
    """A chat whose assistant turns do not start on a token boundary (a reply beginning with
    spaces merges with the generation prompt's newline): tokenize the text in pieces cut at
    the start and end of every assistant turn, so each turn's tokens can be located."""
    text = _render_text(tokenizer, messages, False, where)
    cuts, turns = [0], []
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        prefix = _render_text(tokenizer, messages[:i], True, where)
        full = _render_text(tokenizer, messages[: i + 1], False, where)
        if not (full.startswith(prefix) and text.startswith(full) and len(prefix) >= cuts[-1]):
            raise DataError(
                f"{where}: the chat template does not render turn {i} as a prefix of the "
                "conversation, so its assistant tokens cannot be located"
            )
        turns.append(len(cuts))
        cuts += [len(prefix), len(full)]
    cuts.append(len(text))
    input_ids: list[int] = []
    labels: list[int] = []
    for k in range(len(cuts) - 1):
        piece = _ids(tokenizer, text[cuts[k] : cuts[k + 1]])
        if k in turns:  # the piece is an assistant turn
            end = _trained_end(piece, 0, specials)
            labels += piece[:end] + [IGNORE_INDEX] * (len(piece) - end)
        else:
            labels += [IGNORE_INDEX] * len(piece)
        input_ids += piece
    return input_ids, labels


def _build(setup: _Setup, record: dict, task: str, where: str) -> tuple[list[int], list[int]]:
    """Build the untruncated ``(input_ids, labels)`` of one record."""
    if task not in TASKS:
        raise DataError(f"unknown task {task!r}; expected 'auto' or one of {TASKS}")
    problem = _check_record(record)
    missing = [key for key in _TASK_KEYS[task] if key not in record]
    if problem or missing:
        raise DataError(f"{where}: {problem or f'task {task!r} needs key(s) {missing}'}")
    tok, form = setup.tokenizer, setup.prompt_format
    if form.is_encoder_decoder:
        if task == "chat" or form.use_chat_template:
            raise DataError(f"{where}: chat data needs a causal LM, not a seq2seq model")
        if task == "text":
            raise DataError(f"{where}: plain text needs a causal LM; seq2seq models need pairs")
        labels = list(tok(text_target=record["target"])["input_ids"])
        eos = _eos_id(tok)
        return _ids(tok, record["source"], True), labels + ([] if eos in labels else [eos])
    if task == "chat":
        return _chat_example(tok, record["messages"], where)
    if task == "text":
        prompt, body = [], _ids(tok, record["text"])
    else:
        user = form.prompt_template.format(source=record["source"])
        if form.use_chat_template:
            messages = [{"role": "user", "content": user}]
            messages.append({"role": "assistant", "content": record["target"]})
            return _chat_example(tok, messages, where)
        prompt, body = _ids(tok, user), _ids(tok, record["target"])
    # [bos] prompt body eos: body and eos trained
    context, body = setup.prefix + prompt, body + [_eos_id(tok)]
    return context + body, [IGNORE_INDEX] * len(context) + body


def tokenize_records(
    records: list[dict],
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    *,
    is_encoder_decoder: bool | None = None,
    task: str = "auto",
    max_length: int | None = None,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    source_name: str = "<records>",
    line_numbers: Sequence[int] | None = None,
) -> tuple[list[dict], TruncationStats]:
    """Turn records into examples ``{"input_ids", "labels", "is_seq2seq"}``.

    Args:
        records: Dicts as returned by :func:`read_records`.
        tokenizer: A Hugging Face tokenizer.
        prompt_format: How records are rendered (:class:`~.prompt_format.PromptFormat`), or
            its fields as keywords: ``is_encoder_decoder`` (True for seq2seq models, pairs
            only), ``max_length`` (default 512; causal: keep the first ``max_length`` tokens,
            seq2seq: cut source and target to ``max_length`` each), ``prompt_template``
            (causal pairs: ``prompt_template.format(source=...)`` is the prompt) and
            ``use_chat_template`` (causal pairs: render them as a user/assistant chat).
        task: ``"auto"`` (per record, by its keys), ``"pairs"``, ``"chat"`` or ``"text"``.
        source_name: Named in error messages (a file path).
        line_numbers: 1-based line of each record in ``source_name``, for error messages.

    Returns:
        The examples (those left with no trained token are dropped) and the counts.

    Raises:
        DataError: For a malformed record or a task the model kind cannot train on.
    """
    form = PromptFormat.given(prompt_format, default_max_length=TRAINING_MAX_LENGTH,
                              is_encoder_decoder=is_encoder_decoder, max_length=max_length,
                              prompt_template=prompt_template, use_chat_template=use_chat_template)
    max_length, is_encoder_decoder = form.max_length, form.is_encoder_decoder
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2, got {max_length}")
    setup = _Setup(tokenizer, form, _special_prefix(tokenizer))
    stats = TruncationStats()
    examples: list[dict] = []
    for k, record in enumerate(records):
        line = line_numbers[k] if line_numbers is not None else None
        where = f"{source_name}:{line}" if line is not None else f"{source_name} record {k + 1}"
        ids, labels = _build(setup, record, task if task != "auto" else detect_task(record), where)
        stats.total += 1
        stats.truncated += len(ids) > max_length or (
            is_encoder_decoder and len(labels) > max_length
        )
        ids, labels = ids[:max_length], labels[:max_length]
        if not is_encoder_decoder and labels:
            labels[0] = IGNORE_INDEX  # nothing predicts the first token
        if not ids or all(lab == IGNORE_INDEX for lab in labels):
            stats.dropped += 1
            stats.dropped_where.append(where)
            continue
        examples.append({"input_ids": ids, "labels": labels, "is_seq2seq": is_encoder_decoder})
    return examples, stats


def load_examples(
    path: str | Path,
    tokenizer: Any,
    prompt_format: PromptFormat | None = None,
    *,
    is_encoder_decoder: bool | None = None,
    task: str = "auto",
    max_length: int | None = None,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    records_with_lines: tuple[list[dict], list[int]] | None = None,
) -> list[dict]:
    """Read a data file and tokenize it (:func:`read_records` + :func:`tokenize_records`).

    Warns once (``warnings.warn`` and the module logger) with the counts when any
    example was truncated, or dropped for having no trained token (naming the first
    dropped lines).

    Args:
        prompt_format: the rendering, or its fields as keywords (see :func:`tokenize_records`).
        records_with_lines: the file's records as :func:`read_records_with_lines` returned
            them, when already read.
    """
    form = PromptFormat.given(prompt_format, default_max_length=TRAINING_MAX_LENGTH,
                              is_encoder_decoder=is_encoder_decoder, max_length=max_length,
                              prompt_template=prompt_template, use_chat_template=use_chat_template)
    records, lines = records_with_lines or read_records_with_lines(path)
    examples, stats = tokenize_records(records, tokenizer, form, task=task, source_name=str(path),
                                       line_numbers=lines)
    if stats.truncated or stats.dropped:
        msg = (
            f"{path}: {stats.truncated} of {stats.total} examples truncated at "
            f"max_length={form.max_length}; {stats.dropped} dropped with no trained token left"
        )
        if stats.dropped:
            msg += f" (lines {first_lines([w.rsplit(':', 1)[-1] for w in stats.dropped_where])})"
        logger.warning(msg)
        warnings.warn(msg, stacklevel=2)
    return examples
