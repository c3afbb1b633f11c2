"""What ``generate`` is asked for and what it gives back: the decoding settings, one
generated output, the prompts (capped to the model's positions) and the output record.

Shared by :mod:`.generate`, :mod:`.streaming` and :mod:`.rerank`; no generation happens here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..data.prompts import PromptFormat, ScoreInputError, prompt_ids
from ..lm.backbone import Backbone
from ..safe.finite import bounds, check_settings
from .aggregate import sequence_record
from .guidance import argmax_only, head_guidance
from .token_scores import TokenScores, unpack_model

GENERATION_MAX_PROMPT = 2048
"""The longest generation prompt in tokens (less where the model's positions are fewer)."""


@dataclass
class DecodingConfig:
    """How the original model generates."""

    max_new_tokens: int = field(default=128, metadata=bounds(low=1, integer=True))
    """Most tokens generated per output (the EOS included)."""
    num_beams: int = field(default=1, metadata=bounds(low=1, integer=True))
    """Beam size (> 1: beam search, scored by force-decoding)."""
    do_sample: bool = False
    """Sample instead of greedy/beam decoding."""
    temperature: float = field(default=1.0, metadata=bounds("temperature"))
    """Sampling temperature."""
    top_p: float = field(default=1.0, metadata=bounds("top_p"))
    """Nucleus sampling mass (1 = off)."""
    top_k: int = 0
    """Top-k sampling (0 = off; overrides the model's generation-config default)."""
    num_return_sequences: int = 1
    """Outputs per input."""
    seed: int = field(default=0, metadata=bounds("seed"))
    """Seed of sampling (the global torch RNG state is restored afterwards)."""
    head_weight: float = field(default=0.0, metadata=bounds("head_weight"))
    """Head-guided decoding: add this weight times the Sigmoid Head's log-probability of each token to the next-token scores (0 = off: the original model decodes alone, as in the paper). The output's scores stay the LM's and the head's own."""
    head_mask_below: float = field(default=0.0, metadata=bounds("head_mask_below"))
    """Head-guided decoding: never choose a token whose head probability is below this (the head's most probable allowed token of a step is always kept; 0 = off)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further keyword arguments for ``generate`` (e.g. ``eos_token_id``)."""

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.num_beams < 1 or self.num_return_sequences < 1:
            raise ValueError("max_new_tokens, num_beams and num_return_sequences must be >= 1")
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be > 0 and top_p in (0, 1]")
        if self.num_return_sequences > max(self.num_beams, 1) and not self.do_sample:
            raise ValueError("num_return_sequences > num_beams needs do_sample=True")
        if self.head_weight < 0 or not 0 <= self.head_mask_below < 1:
            raise ValueError("head_weight must be >= 0 and head_mask_below in [0, 1)")
        check_settings(self)  # finite, representable, in range (seed, temperature, ...)

    def guidance(self, backbone: Backbone, head: Any) -> contextlib.AbstractContextManager[dict]:
        """The ``generate`` keyword arguments of head-guided decoding, hooked while entered
        (``{}`` when off; see :mod:`.guidance`)."""
        greedy = argmax_only(self.do_sample, self.num_beams, self.extra,
                             getattr(backbone.model, "generation_config", None))
        return head_guidance(backbone, head, self.head_weight, self.head_mask_below, greedy)

    def generate_kwargs(self) -> dict[str, Any]:
        kw = {
            "max_new_tokens": self.max_new_tokens,
            "num_beams": self.num_beams,
            "do_sample": self.do_sample,
            "num_return_sequences": self.num_return_sequences,
        }
        if self.do_sample:
            kw.update(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k)
        return {**kw, **self.extra}


@dataclass
class Generated:
    """One generated output.

    Attributes:
        input_index: which input it answers.
        prompt: the prompt ids (causal) or encoder ids (seq2seq).
        output: the generated ids, cut after the first EOS (inclusive).
        finished: whether it ended with an EOS.
        scores: its token scores (T = len(output)).
        logits: (T, V) the logits its softmax-side scores were computed from, when asked
            for (``generate_outputs(keep_logits=True)``; float32, CPU).
    """

    input_index: int
    prompt: list[int]
    output: list[int]
    finished: bool
    scores: TokenScores | None = None
    logits: torch.Tensor | None = None


def eos_ids(backbone: Backbone, cfg: DecodingConfig) -> set[int]:
    """The token ids that end an output: the decoding's ``eos_token_id``, else the model's."""
    eos = cfg.extra.get("eos_token_id", backbone.model.generation_config.eos_token_id)
    if eos is None:
        eos = backbone.tokenizer.eos_token_id
    return {int(e) for e in (eos if isinstance(eos, list | tuple) else [eos]) if e is not None}


def cut_at_eos(row: list[int], eos: set[int]) -> tuple[list[int], bool]:
    """``row`` up to its first EOS (inclusive), and whether it had one."""
    for i, t in enumerate(row):
        if t in eos:
            return row[: i + 1], True
    return row, False


def generation_prompts(
    model: Any, records: Sequence[dict] | Sequence[str], decoding: DecodingConfig | None,
    prompt_template: str | None, use_chat_template: bool | None,
) -> tuple[list[dict], list[list[int]], set[int]]:
    """(records as dicts, prompt ids, the indices of the prompts that were cut) for
    generation, each prompt capped so that it and ``max_new_tokens`` fit in the model's
    positions (a cut prompt is warned about, naming its file:line; shared with streaming)."""
    backbone, _ = unpack_model(model)
    recs = [{"source": r} if isinstance(r, str) else r.copy() if isinstance(r, dict) else dict(r)
            for r in records]
    if not recs:
        raise ScoreInputError("nothing to generate from: no inputs")
    limit = backbone.max_positions() if hasattr(backbone, "max_positions") else None
    room = (decoding or DecodingConfig()).max_new_tokens
    if limit is not None and limit - room < 1:
        raise ValueError(f"max_new_tokens={room} leaves no room for a prompt in the model's "
                         f"{limit} positions")
    cut: set[int] = set()
    form = PromptFormat.for_model(model, prompt_template, use_chat_template,
                                  GENERATION_MAX_PROMPT if limit is None
                                  else min(GENERATION_MAX_PROMPT, limit - room))
    return recs, prompt_ids(recs, backbone.tokenizer, form, cut=cut), cut


def output_row(g: Generated, record: dict, tokenizer: Any, with_tokens: bool,
               truncated: bool = False) -> dict[str, Any]:
    """The output record of one generated output (see :func:`generate_and_score`);
    ``truncated``: its prompt was cut to fit the model (the row says so)."""
    src = {k: record[k] for k in ("source", "messages") if k in record}
    return {
        **src,
        "candidate": tokenizer.decode(g.output, skip_special_tokens=True),
        "finished": g.finished,
        **({"truncated": True} if truncated else {}),
        **sequence_record(g.scores, tokenizer, None, with_tokens),
    }
