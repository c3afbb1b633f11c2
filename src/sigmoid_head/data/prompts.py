"""Scoring inputs: records -> tokenized examples, rendered exactly as training data is.

Also where the prompt settings come from when the caller gives none: what the head was
trained with (its saved training config).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .tokenize import IGNORE_INDEX, tokenize_records


class ScoreInputError(ValueError):
    """Scoring inputs are malformed (counts differ, empty candidate, ...)."""


def candidate_text(rec: dict, k: int) -> str:
    cand = rec.get("candidate", rec.get("target"))
    if not isinstance(cand, str):
        raise ScoreInputError(f"record {k + 1}: needs a string 'candidate', has keys {sorted(rec)}")
    if not cand.strip():
        raise ScoreInputError(f"record {k + 1}: the candidate is empty")
    return cand


def to_data_record(rec: dict, k: int) -> dict:
    """A {source, candidate} / {messages, candidate} record as a data.py training record."""
    if not isinstance(rec, dict):
        raise ScoreInputError(f"record {k + 1}: expected a dict, got {type(rec).__name__}")
    cand = candidate_text(rec, k)
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise ScoreInputError(f"record {k + 1}: 'messages' must be a non-empty list")
        if isinstance(msgs[-1], dict) and msgs[-1].get("role") == "assistant":
            raise ScoreInputError(
                f"record {k + 1}: 'messages' must not end with an assistant "
                "turn; the candidate is the assistant's answer"
            )
        return {"messages": [*msgs, {"role": "assistant", "content": cand}]}
    if not isinstance(rec.get("source"), str):
        raise ScoreInputError(f"record {k + 1}: needs a string 'source' or a 'messages' list")
    return {"source": rec["source"], "target": cand}


def _last_span_only(labels: list[int]) -> list[int]:
    """Keep only the last contiguous run of labels (the candidate turn of a chat)."""
    end = max(i for i, t in enumerate(labels) if t != IGNORE_INDEX) + 1
    start = end
    while start > 0 and labels[start - 1] != IGNORE_INDEX:
        start -= 1
    return [IGNORE_INDEX] * start + labels[start:end] + [IGNORE_INDEX] * (len(labels) - end)


def make_examples(
    records: Sequence[dict],
    tokenizer: Any,
    *,
    is_encoder_decoder: bool,
    prompt_template: str = "{source}\n",
    use_chat_template: bool = False,
    max_length: int = 2048,
) -> list[dict]:
    """Tokenize scoring records exactly as training data is tokenized.

    Only the candidate is scored: for chats, earlier assistant turns are unmasked.

    Raises:
        ScoreInputError: a malformed record, or one with nothing left to score.
    """
    data = [to_data_record(r, k) for k, r in enumerate(records)]
    examples = []
    for k, rec in enumerate(data):  # one at a time so that a dropped record can be named
        try:
            ex, stats = tokenize_records(
                [rec],
                tokenizer,
                is_encoder_decoder=is_encoder_decoder,
                prompt_template=prompt_template,
                max_length=max_length,
                use_chat_template=use_chat_template,
                source_name="<inputs>",
                line_numbers=[k + 1],
            )
        except ValueError as err:
            raise ScoreInputError(str(err)) from err
        if not ex:
            raise ScoreInputError(
                f"record {k + 1}: nothing left to score after truncation at max_length={max_length}"
            )
        if stats.truncated:
            warnings.warn(f"record {k + 1} truncated at max_length={max_length}", stacklevel=2)
        if "messages" in rec:
            ex[0]["labels"] = _last_span_only(ex[0]["labels"])
        examples.append(ex[0])
    return examples


def render_settings(
    model: Any, prompt_template: str | None, use_chat_template: bool | None
) -> dict[str, Any]:
    """How causal prompts are rendered: what was asked for, else what the head was trained with."""
    defaults = training_defaults(model)
    return {
        "prompt_template": prompt_template or defaults.get("prompt_template", "{source}\n"),
        "use_chat_template": use_chat_template
        if use_chat_template is not None
        else defaults.get("use_chat_template", False),
    }


def training_defaults(model: Any) -> dict[str, Any]:
    """prompt_template / use_chat_template / max_length the model's head was trained with."""
    training = getattr(getattr(model, "config", None), "training", None) or {}
    keys = ("prompt_template", "use_chat_template", "max_length")
    return {k: training[k] for k in keys if k in training}
