"""Eval Other: force-decode given outputs and score every token in one forward pass.

The one scoring path: the CLI, generation (beam search, MC samples), the recipes and the
benchmarks all score through :func:`score_examples` (or :func:`score_records` on raw
records), choosing with options what to compute (the sigmoid only, further heads).

Inputs are source + candidate pairs (seq2seq models, or causal models with a prompt
template / the chat template) or chat messages + a candidate response (causal models).
They are tokenized by :func:`sigmoid_head.data.prompts.make_examples`, so the scored
tokens and their label masks are exactly those the head was trained on (candidate tokens
plus the end-of-sequence / end-of-turn token). The token scores are those of
:mod:`.token_scores`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from ..data.batching import Collator, example_length, make_batches, pad_id
from ..data.prompts import PromptFormat, ScoreInputError, candidate_text, make_examples
from ..head.layer import SigmoidHead
from ..lm.dominant import DominantConfig
from .aggregate import sequence_record
from .captured import PassCaptures, asked_methods
from .token_scores import TokenScores, position_scores, split_rows, unpack_model


def length_batches(
    examples: Sequence[dict], batch_size: int | None = 16, max_tokens: int | None = None
) -> list[list[int]]:
    """Batches of example indices, longest first (cuts padding); every index once."""
    lengths = [example_length(e) for e in examples]
    order = sorted(range(len(examples)), key=lambda i: -lengths[i])
    if max_tokens:
        batch_size = None
    groups = make_batches(
        [lengths[i] for i in order], batch_size=batch_size, max_tokens=max_tokens, shuffle=False
    )
    return [[order[j] for j in g] for g in groups]


@torch.no_grad()
def score_examples(
    model: Any,
    examples: Sequence[dict],
    *,
    batch_size: int | None = 16,
    max_tokens: int | None = None,
    dominant: DominantConfig | None = None,
    sigmoid_only: bool = False,
    heads: Mapping[str, SigmoidHead] | None = None,
    sort_by_length: bool = True,
    progress: bool = True,
    **opt_in: Any,
) -> list[TokenScores]:
    """Force-decode tokenized examples and score their labelled tokens.

    Args:
        model: a SigmoidHeadModel, or a Backbone (no sigmoid scores of its own).
        examples: ``{"input_ids", "labels"}`` dicts as from ``tokenize_records``.
        batch_size: sequences per forward pass (ignored when ``max_tokens`` is set).
        max_tokens: padded tokens per forward pass.
        dominant: dominant-token rule.
        sigmoid_only: the body's forward pass and one gathered head row per token, no LM
            logits at all (the cheapest quality estimate); the softmax fields stay None.
        heads: further Sigmoid Heads of the same backbone, scored in the same pass
            (:attr:`TokenScores.heads`).
        sort_by_length: batch longest first (cuts padding); False keeps the input order.
        progress: show a tqdm progress bar.
        **opt_in: the methods reading attention asked for, by name, with their settings
            (``rauq=RauqConfig()``: RAUQ, :attr:`TokenScores.rauq_log`, causal LMs; the pass
            runs inside each one's capture, see :mod:`.captured`).

    Returns:
        One TokenScores per example, in input order.
    """
    from tqdm.auto import tqdm

    backbone, head = unpack_model(model)
    if sigmoid_only and head is None and not heads:
        raise TypeError("sigmoid_only scoring needs a head (a Backbone has none)")
    asked = asked_methods(opt_in)
    if sigmoid_only and asked:
        labels = ", ".join(m.label or m.name for m, _ in asked)
        raise ValueError(f"{labels} reads the softmax probabilities: not with sigmoid_only")
    collate = Collator(pad_id(backbone.tokenizer), backbone.is_encoder_decoder)
    if sort_by_length:
        groups = length_batches(examples, batch_size, max_tokens)
    else:
        lengths = [example_length(e) for e in examples]
        groups = make_batches(lengths, batch_size=None if max_tokens else batch_size,
                              max_tokens=max_tokens, shuffle=False)
    results: list[TokenScores | None] = [None] * len(examples)
    from ..registry.contract import DeferredChecks

    groups = list(groups)

    def on_device(idx: list[int]) -> dict[str, torch.Tensor]:
        """A batch collated, its scored positions found on the host (no device read) and
        copied to the device (from pinned memory, without waiting, on CUDA)."""
        batch = collate([examples[i] for i in idx])
        batch["trained_index"] = backbone.trained_index(batch["labels"])
        if backbone.device.type == "cuda":
            return {k: v.pin_memory().to(backbone.device, non_blocking=True) for k, v in batch.items()}
        return {k: v.to(backbone.device) for k, v in batch.items()}

    with PassCaptures(backbone.model, asked) as captures, \
            tqdm(total=len(groups), desc="score", disable=not progress, dynamic_ncols=True) as bar:
        upcoming = on_device(groups[0]) if groups else None
        for k, idx in enumerate(groups):
            batch = upcoming
            captures.clear()
            pos = backbone.positions(batch, with_logits=False)
            later = DeferredChecks()  # settled from the pass's one copy to the host
            values = position_scores(backbone, head, pos.hidden, pos.targets, dominant=dominant,
                                     heads=heads, softmax=not sigmoid_only, later=later)
            if captures:  # the query predicting labels[:, col] sits at col - 1
                values |= captures.forced(values["softmax_log"], pos.row, pos.col - 1, len(idx),
                                          later)
            # the next batch is made while the device computes this one
            upcoming = on_device(groups[k + 1]) if k + 1 < len(groups) else None
            for i, ts in zip(idx, split_rows(values, pos.targets, pos.row, len(idx), later),
                             strict=True):
                results[i] = ts
            bar.update(1)
    return results  # type: ignore[return-value]


def score_records(
    model: Any,
    records: Iterable[dict],
    *,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    max_length: int | None = None,
    batch_size: int | None = 16,
    max_tokens: int | None = None,
    with_tokens: bool = False,
    dominant: DominantConfig | None = None,
    progress: bool = True,
    **opt_in: Any,
) -> list[dict[str, Any]]:
    """Eval Other on ``{source, candidate}`` / ``{messages, candidate}`` records.

    Args:
        model: a SigmoidHeadModel, or a Backbone for the baselines only.
        records: the inputs; ``target`` is accepted as an alias of ``candidate``.
        prompt_template: how causal pairs are rendered; None = what the head was
            trained with (else ``"{source}\\n"``).
        use_chat_template: render causal pairs as a chat; None = the head's setting
            (else False).
        max_length: the longest input in tokens; None = the head's setting (else 2048).
        batch_size: batching (see :func:`score_examples`).
        max_tokens: batching (see :func:`score_examples`).
        with_tokens: add per-token and per-word scores.
        dominant: dominant-token rule.
        progress: show a progress bar.
        **opt_in: the methods reading attention asked for, by name, with their settings
            (``rauq=RauqConfig()``: the ``rauq*`` scores; causal LMs, see :mod:`.rauq`).

    Returns:
        One flat score record per input, in input order (see :func:`sequence_record`).
    """
    asked_methods(opt_in)  # an unknown keyword before anything else
    backbone, _ = unpack_model(model)
    records = list(records)  # a generator is read once
    if not records:
        raise ScoreInputError("nothing to score: no records")
    form = PromptFormat.for_model(model, prompt_template, use_chat_template, max_length)
    form = form.cut_to(capped_max_length(backbone, form.max_length, asked=max_length is not None))
    examples = make_examples(records, backbone.tokenizer, form)
    scored = score_examples(
        model,
        examples,
        batch_size=batch_size,
        max_tokens=max_tokens,
        dominant=dominant,
        progress=progress,
        **opt_in,
    )
    rows = [
        sequence_record(ts, backbone.tokenizer, candidate_text(r, 0), with_tokens)
        for ts, r in zip(scored, records, strict=True)
    ]
    for row, ex in zip(rows, examples, strict=True):
        if ex.get("truncated"):
            row["truncated"] = True  # only part of the candidate was scored
    return rows


def capped_max_length(backbone: Any, max_length: int, asked: bool = True) -> int:
    """``max_length`` cut to the model's position limit (warning when it was asked for)."""
    limit = backbone.max_positions() if hasattr(backbone, "max_positions") else None
    if limit is None or max_length <= limit:
        return max_length
    if asked:
        warnings.warn(f"max_length {max_length} exceeds the model's {limit} positions; "
                      f"using {limit}", stacklevel=3)
    return limit


def score_pairs(
    model: Any, sources: Sequence[str], candidates: Sequence[str], **kwargs: Any
) -> list[dict[str, Any]]:
    """Eval Other on parallel lists of sources and candidates (see :func:`score_records`)."""
    if len(sources) != len(candidates):
        raise ScoreInputError(f"{len(sources)} sources but {len(candidates)} candidates")
    records = [{"source": s, "candidate": c} for s, c in zip(sources, candidates, strict=True)]
    return score_records(model, records, **kwargs)
