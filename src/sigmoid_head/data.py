"""Training data: file formats, tokenization with label masks, batching and collation.

Three record kinds, told apart by their keys (:func:`detect_task`):

* ``pairs``: ``{"source": str, "target": str}`` (or a 2-column TSV line);
* ``chat``: ``{"messages": [{"role": ..., "content": ...}, ...]}``;
* ``text``: ``{"text": str}`` (or a ``.txt`` line / 1-column TSV line).

Examples are dicts ``{"input_ids": list[int], "labels": list[int], "is_seq2seq": bool}``.
Causal LM examples follow the Hugging Face convention: ``labels`` is aligned with
``input_ids`` (same length) and the model shifts internally (position ``t`` predicts
token ``t + 1``); every untrained position is :data:`IGNORE_INDEX`, never the pad id.
Position 0 of a causal example is always :data:`IGNORE_INDEX`, as nothing predicts it.
Seq2seq examples carry the encoder ids in ``input_ids`` and the decoder targets in
``labels`` (all trained).

Chat label masks: for each assistant turn the trained tokens are the tokens that the
template adds after the generation prompt, cut after the last special token among
them (the end-of-turn token such as ``<|im_end|>``). Whitespace the template puts
after the end-of-turn token (ChatML's trailing newline) is therefore never trained.
A template that adds no special token after the content gets all its new tokens trained.
"""

from __future__ import annotations

import json
import logging
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100
"""Label value of positions that are not trained (prompt, padding, template)."""

TASKS = ("pairs", "chat", "text")
FORMATS = ("auto", "jsonl", "tsv", "txt")
_TASK_KEYS = {"pairs": ("source", "target"), "chat": ("messages",), "text": ("text",)}
_EXTENSIONS = {".jsonl": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".txt": "txt"}


class DataError(ValueError):
    """A data file or record is malformed or does not fit the model kind."""


@dataclass
class TruncationStats:
    """How many examples were truncated at ``max_length``.

    Attributes:
        total: Records seen.
        truncated: Examples cut at ``max_length`` (including those dropped afterwards).
        dropped: Examples dropped because no trained token was left.
    """

    total: int = 0
    truncated: int = 0
    dropped: int = 0


# --------------------------------------------------------------------------- reading


def _check_record(rec: Any) -> str | None:
    """Return what is wrong with a parsed record, or ``None`` if it is fine."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, got {type(rec).__name__}"
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs:
            return "'messages' must be a non-empty list"
        for j, msg in enumerate(msgs):
            if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
                return f"message {j} must be an object with 'role' and 'content'"
            if not isinstance(msg["role"], str) or not isinstance(msg["content"], str):
                return f"message {j}: 'role' and 'content' must be strings"
        return None
    if "source" in rec or "target" in rec:
        keys = ("source", "target")
    elif "text" in rec:
        keys = ("text",)
    else:
        return "record needs 'source'/'target', 'messages' or 'text' keys"
    for key in keys:
        if key not in rec:
            return f"missing key '{key}'"
        if not isinstance(rec[key], str):
            return f"'{key}' must be a string, got {type(rec[key]).__name__}"
    return None


def _parse_line(line: str, fmt: str, n_cols: int | None) -> tuple[dict, str | None]:
    """Parse one non-blank line; returns the record and an error message (or None)."""
    if fmt == "txt":
        return {"text": line}, None
    if fmt == "tsv":
        cols = line.split("\t")
        if len(cols) not in (1, 2):
            return {}, f"expected 1 or 2 tab-separated columns, got {len(cols)}"
        if n_cols is not None and len(cols) != n_cols:
            return (
                {},
                f"expected {n_cols} tab-separated columns like the first line, got {len(cols)}",
            )
        if len(cols) == 1:
            return {"text": cols[0]}, None
        return {"source": cols[0], "target": cols[1]}, None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as err:
        return {}, f"bad JSON ({err.msg} at column {err.colno})"
    return rec, _check_record(rec)


def read_records_with_lines(path: str | Path, fmt: str = "auto") -> tuple[list[dict], list[int]]:
    """Like :func:`read_records`, also returning each record's 1-based line number."""
    path = Path(path)
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if fmt == "auto":
        fmt = _EXTENSIONS.get(path.suffix.lower(), "")
        if not fmt:
            raise DataError(f"{path}: cannot tell the format from the extension; pass fmt")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not valid UTF-8 ({err})") from err
    records: list[dict] = []
    lines: list[int] = []
    n_cols = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r") if fmt != "txt" else raw.strip()
        if not line.strip():
            continue
        rec, problem = _parse_line(line, fmt, n_cols)
        if problem:
            raise DataError(f"{path}:{lineno}: {problem}")
        if fmt == "tsv":
            n_cols = 2 if "source" in rec else 1
        records.append(rec)
        lines.append(lineno)
    if not records:
        raise DataError(f"{path}: file is empty")
    return records, lines


def read_records(path: str | Path, fmt: str = "auto") -> list[dict]:
    """Read records from a JSONL, TSV or plain text file.

    Args:
        path: The file. ``.jsonl``/``.json`` hold one JSON object per line; ``.tsv``
            holds ``source<TAB>target`` per line (pairs) or one column (text);
            ``.txt`` holds one document per line. Blank lines are skipped.
        fmt: ``"auto"`` (by extension), ``"jsonl"``, ``"tsv"`` or ``"txt"``.

    Returns:
        One dict per non-blank line (see the module docstring for the kinds).

    Raises:
        DataError: For an empty file or any malformed line; the message names the
            file and the 1-based line number (``path:line: what is wrong``).
    """
    return read_records_with_lines(path, fmt)[0]


def detect_task(record: dict) -> str:
    """Tell a record's kind: ``"pairs"``, ``"chat"`` or ``"text"``.

    Raises:
        DataError: If the record has none of the keys that name a kind.
    """
    if "source" in record and "target" in record:
        return "pairs"
    if "messages" in record:
        return "chat"
    if "text" in record:
        return "text"
    raise DataError(f"cannot tell the task of a record with keys {sorted(record)}")


# ---------------------------------------------------------------------- tokenizing


def _ids(tokenizer: Any, text: str, add_special_tokens: bool = False) -> list[int]:
    return list(tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"])


def _special_prefix(tokenizer: Any) -> list[int]:
    """The ids the tokenizer puts before the text (e.g. ``[bos]``), found by probing."""
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


def _render_ids(tokenizer: Any, messages: list[dict], gen_prompt: bool, where: str) -> list[int]:
    """Render ``messages`` with the chat template and tokenize without extra specials."""
    try:
        text = tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=gen_prompt
        )
    except Exception as err:  # template errors come in many types
        raise DataError(f"{where}: the chat template failed: {err}") from err
    return _ids(tokenizer, text)


def _chat_example(tokenizer: Any, messages: list[dict], where: str) -> tuple[list[int], list[int]]:
    """Render a chat; train the assistant turns' content and end-of-turn tokens."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise DataError(
            "the tokenizer has no chat template; set tokenizer.chat_template or use "
            "use_chat_template=False (plain prompt_template) for pairs"
        )
    input_ids = _render_ids(tokenizer, messages, False, where)
    labels = [IGNORE_INDEX] * len(input_ids)
    specials = set(getattr(tokenizer, "all_special_ids", []))
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        prefix = _render_ids(tokenizer, messages[:i], True, where)
        full = _render_ids(tokenizer, messages[: i + 1], False, where)
        if full[: len(prefix)] != prefix or input_ids[: len(full)] != full:
            raise DataError(
                f"{where}: the chat template does not render turn {i} as a prefix of the "
                "conversation, so assistant tokens cannot be located"
            )
        new = range(len(prefix), len(full))
        last_special = max((t for t in new if full[t] in specials), default=None)
        end = len(full) if last_special is None else last_special + 1
        labels[len(prefix) : end] = full[len(prefix) : end]
    return input_ids, labels


def _causal_pair(tokenizer: Any, source: str, target: str, prompt_template: str):
    """Causal pair without chat template: ``[bos] prompt target eos``; train target + eos."""
    prompt = _special_prefix(tokenizer) + _ids(tokenizer, prompt_template.format(source=source))
    tgt = _ids(tokenizer, target) + [_eos_id(tokenizer)]
    return prompt + tgt, [IGNORE_INDEX] * len(prompt) + tgt


def _causal_text(tokenizer: Any, text: str) -> tuple[list[int], list[int]]:
    """Causal text: ``[bos] text eos``, every token after the specials trained."""
    prefix = _special_prefix(tokenizer)
    body = _ids(tokenizer, text) + [_eos_id(tokenizer)]
    return prefix + body, [IGNORE_INDEX] * len(prefix) + body


def _seq2seq_pair(tokenizer: Any, source: str, target: str) -> tuple[list[int], list[int]]:
    """Seq2seq pair: encoder ids with the tokenizer's specials, labels ending in eos."""
    input_ids = list(tokenizer(source)["input_ids"])
    labels = list(tokenizer(text_target=target)["input_ids"])
    eos = _eos_id(tokenizer)
    if eos not in labels:
        labels.append(eos)
    return input_ids, labels


def _build(
    tokenizer: Any,
    record: dict,
    task: str,
    is_encoder_decoder: bool,
    prompt_template: str,
    use_chat_template: bool,
    where: str,
) -> tuple[list[int], list[int]]:
    """Build untruncated ``(input_ids, labels)`` for one record."""
    if task not in TASKS:
        raise DataError(f"unknown task {task!r}; expected 'auto' or one of {TASKS}")
    problem = _check_record(record)
    if problem:
        raise DataError(f"{where}: {problem}")
    missing = [key for key in _TASK_KEYS[task] if key not in record]
    if missing:
        raise DataError(f"{where}: task {task!r} needs key(s) {missing}")
    if is_encoder_decoder:
        if task == "chat" or use_chat_template:
            raise DataError(f"{where}: chat data needs a causal LM, not a seq2seq model")
        if task == "text":
            raise DataError(
                f"{where}: plain text needs a causal LM; a seq2seq model needs source/target pairs"
            )
        return _seq2seq_pair(tokenizer, record["source"], record["target"])
    if task == "text":
        return _causal_text(tokenizer, record["text"])
    if task == "chat":
        return _chat_example(tokenizer, record["messages"], where)
    if use_chat_template:
        messages = [
            {"role": "user", "content": prompt_template.format(source=record["source"])},
            {"role": "assistant", "content": record["target"]},
        ]
        return _chat_example(tokenizer, messages, where)
    return _causal_pair(tokenizer, record["source"], record["target"], prompt_template)


def tokenize_records(
    records: list[dict],
    tokenizer: Any,
    *,
    is_encoder_decoder: bool,
    task: str = "auto",
    max_length: int = 512,
    prompt_template: str = "{source}\n",
    use_chat_template: bool = False,
    source_name: str = "<records>",
    line_numbers: Sequence[int] | None = None,
) -> tuple[list[dict], TruncationStats]:
    """Turn records into examples ``{"input_ids", "labels", "is_seq2seq"}``.

    Args:
        records: Dicts as returned by :func:`read_records`.
        tokenizer: A Hugging Face tokenizer (fast or slow).
        is_encoder_decoder: True for seq2seq models (pairs only).
        task: ``"auto"`` (per record, by its keys) or one of ``"pairs"``, ``"chat"``, ``"text"``.
        max_length: Causal: keep the first ``max_length`` tokens. Seq2seq: source and
            target are each cut to ``max_length``.
        prompt_template: Causal pairs: ``prompt_template.format(source=...)`` precedes the target.
        use_chat_template: Causal pairs: render them as a user/assistant chat instead.
        source_name: Named in error messages (a file path).
        line_numbers: 1-based line of each record in ``source_name``, for error messages.

    Returns:
        The examples (records left with no trained token are dropped) and the counts.

    Raises:
        DataError: For a malformed record or a task the model kind cannot train on.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2, got {max_length}")
    stats = TruncationStats()
    examples: list[dict] = []
    for k, record in enumerate(records):
        line = line_numbers[k] if line_numbers is not None else None
        where = f"{source_name}:{line}" if line is not None else f"{source_name} record {k + 1}"
        rec_task = detect_task(record) if task == "auto" else task
        input_ids, labels = _build(
            tokenizer,
            record,
            rec_task,
            is_encoder_decoder,
            prompt_template,
            use_chat_template,
            where,
        )
        stats.total += 1
        if is_encoder_decoder:
            if len(input_ids) > max_length or len(labels) > max_length:
                stats.truncated += 1
            input_ids, labels = input_ids[:max_length], labels[:max_length]
            n_trained = len(labels)
        else:
            if len(input_ids) > max_length:
                stats.truncated += 1
            input_ids, labels = input_ids[:max_length], labels[:max_length]
            labels[0] = IGNORE_INDEX  # nothing predicts the first token
            n_trained = sum(lab != IGNORE_INDEX for lab in labels)
        if n_trained == 0 or not input_ids:
            stats.dropped += 1
            continue
        examples.append(
            {"input_ids": input_ids, "labels": labels, "is_seq2seq": is_encoder_decoder}
        )
    return examples, stats


def load_examples(
    path: str | Path,
    tokenizer: Any,
    *,
    is_encoder_decoder: bool,
    task: str = "auto",
    max_length: int = 512,
    prompt_template: str = "{source}\n",
    use_chat_template: bool = False,
) -> list[dict]:
    """Read a data file and tokenize it (:func:`read_records` + :func:`tokenize_records`).

    Warns once (``warnings.warn`` and the module logger) with the counts when any
    example was truncated or dropped for having no trained token.
    """
    records, lines = read_records_with_lines(path)
    examples, stats = tokenize_records(
        records,
        tokenizer,
        is_encoder_decoder=is_encoder_decoder,
        task=task,
        max_length=max_length,
        prompt_template=prompt_template,
        use_chat_template=use_chat_template,
        source_name=str(path),
        line_numbers=lines,
    )
    if stats.truncated or stats.dropped:
        msg = (
            f"{path}: {stats.truncated} of {stats.total} examples truncated at "
            f"max_length={max_length}; {stats.dropped} dropped with no trained token left"
        )
        logger.warning(msg)
        warnings.warn(msg, stacklevel=2)
    return examples


# ------------------------------------------------------------------------ batching


def example_length(ex: dict) -> int:
    """Tokens an example costs in a padded batch (encoder + decoder for seq2seq)."""
    if ex.get("is_seq2seq"):
        return len(ex["input_ids"]) + len(ex["labels"])
    return len(ex["input_ids"])


def _greedy_batches(
    order: list[int], lengths: list[int], batch_size: int | None, max_tokens: int | None
) -> list[list[int]]:
    """Cut ``order`` into consecutive batches that respect the size or token budget."""
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        new_longest = max(longest, lengths[i])
        full = (
            len(cur) >= batch_size
            if batch_size is not None
            else (len(cur) + 1) * new_longest > max_tokens  # type: ignore[operator]
        )
        if cur and full:
            batches.append(cur)
            cur, new_longest = [], lengths[i]
        cur.append(i)
        longest = new_longest
    if cur:
        batches.append(cur)
    return batches


def make_batches(
    lengths: list[int],
    *,
    batch_size: int | None = None,
    max_tokens: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    epoch: int = 0,
) -> list[list[int]]:
    """Group example indices into micro-batches.

    Args:
        lengths: :func:`example_length` of each example.
        batch_size: Sequences per batch. Exactly one of this and ``max_tokens``.
        max_tokens: Padded tokens per batch (``n_seqs * longest <= max_tokens``); a
            single longer example forms its own batch.
        shuffle: Shuffle indices, sort by length inside chunks of ~100 batches
            (bucketing, to cut padding), then shuffle the order of the batches. Without
            it the order is kept.
        seed: Seed of the shuffle.
        epoch: Mixed into the seed, so that every epoch has its own order.

    Returns:
        Lists of indices; every index appears exactly once.
    """
    if (batch_size is None) == (max_tokens is None):
        raise ValueError("set exactly one of batch_size and max_tokens")
    if (batch_size or max_tokens or 0) < 1:
        raise ValueError("batch_size / max_tokens must be positive")
    order = list(range(len(lengths)))
    if not shuffle:
        return _greedy_batches(order, lengths, batch_size, max_tokens)
    rng = random.Random(f"sigmoid-head:{seed}:{epoch}")
    rng.shuffle(order)
    if batch_size is not None:
        chunk = 100 * batch_size
    else:
        mean_len = max(1.0, sum(lengths) / max(1, len(lengths)))
        chunk = max(1, int(100 * max_tokens / mean_len))  # type: ignore[operator]
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        batches += _greedy_batches(part, lengths, batch_size, max_tokens)
    rng.shuffle(batches)
    return batches


# ----------------------------------------------------------------------- collating


def _pad(seqs: list[list[int]], value: int, side: str) -> torch.Tensor:
    """Pad ``seqs`` to the longest one; returns ``(B, T)`` long."""
    width = max(len(s) for s in seqs)
    rows = [
        s + [value] * (width - len(s)) if side == "right" else [value] * (width - len(s)) + s
        for s in seqs
    ]
    return torch.tensor(rows, dtype=torch.long)


class Collator:
    """Dynamic padding: pads each batch to its longest example, never to max_length.

    Causal output: ``input_ids`` (B, T) padded with the pad id, ``attention_mask``
    (B, T), ``labels`` (B, T) padded with -100. Seq2seq output: ``input_ids`` (B, S),
    ``attention_mask`` (B, S), ``labels`` (B, L) padded with -100 on the right (the
    model builds ``decoder_input_ids`` from them).

    Args:
        pad_token_id: Id used to pad ``input_ids``.
        is_encoder_decoder: True for seq2seq examples.
        padding_side: ``"right"`` or ``"left"`` for ``input_ids`` (and causal labels).
    """

    def __init__(self, pad_token_id: int, is_encoder_decoder: bool, padding_side: str = "right"):
        if pad_token_id is None:
            raise ValueError("pad_token_id is None; set a pad token on the tokenizer")
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        self.pad_token_id = int(pad_token_id)
        self.is_encoder_decoder = is_encoder_decoder
        self.padding_side = padding_side

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        """Collate examples into padded tensors (see the class docstring for shapes)."""
        if not examples:
            raise ValueError("cannot collate an empty batch")
        ids = [list(ex["input_ids"]) for ex in examples]
        side = self.padding_side
        batch = {
            "input_ids": _pad(ids, self.pad_token_id, side),
            "attention_mask": _pad([[1] * len(s) for s in ids], 0, side),
        }
        labels = [list(ex["labels"]) for ex in examples]
        batch["labels"] = _pad(labels, IGNORE_INDEX, "right" if self.is_encoder_decoder else side)
        return batch
