"""Batching and collation: length-bucketed micro-batches and dynamic padding.

Examples are the dicts built by :mod:`sigmoid_head.data` (``{"input_ids", "labels",
"is_seq2seq"}``); :mod:`sigmoid_head.data` re-exports everything public here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

IGNORE_INDEX = -100
"""Label value of positions that are not trained (prompt, template, padding)."""


# ------------------------------------------------------------------------ batching


def example_length(ex: dict) -> int:
    """Tokens an example costs in a padded batch (encoder + decoder for seq2seq)."""
    extra = len(ex["labels"]) if ex.get("is_seq2seq") else 0
    return len(ex["input_ids"]) + extra


def _greedy_batches(
    order: list[int], lengths: list[int], batch_size: int | None, max_tokens: int | None
) -> list[list[int]]:
    """Cut ``order`` into consecutive batches that respect the size or token budget."""
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        grown = max(longest, lengths[i])
        if batch_size is not None:
            full = len(cur) >= batch_size
        else:
            full = (len(cur) + 1) * grown > (max_tokens or 0)
        if cur and full:
            batches.append(cur)
            cur, grown = [], lengths[i]
        cur.append(i)
        longest = grown
    return batches + [cur] if cur else batches


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
        batch_size: Sequences per batch. Set exactly one of this and ``max_tokens``.
        max_tokens: Padded tokens per batch (``n_seqs * longest <= max_tokens``); a
            single longer example forms its own batch.
        shuffle: Shuffle the indices, sort them by length inside chunks of ~100
            batches (bucketing cuts padding), then shuffle the order of the batches.
            Without it the order is kept.
        seed: Seed of the shuffle.
        epoch: Mixed into the seed so that every epoch has its own order.

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
    mean_len = max(1.0, sum(lengths) / max(1, len(lengths)))
    per_batch = batch_size if batch_size is not None else (max_tokens or 1) / mean_len
    chunk = max(1, int(100 * per_batch))  # ~100 batches' worth of examples
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
        batches += _greedy_batches(part, lengths, batch_size, max_tokens)
    rng.shuffle(batches)
    return batches


# ----------------------------------------------------------------------- collating


def pad_id(tokenizer: Any) -> int:
    """The id that pads inputs: the tokenizer's pad id, else its eos id."""
    pid = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pid is None:
        raise ValueError("the tokenizer has neither a pad nor an eos token")
    return int(pid)


def pad(seqs: Sequence[Sequence[int]], value: int, side: str = "right") -> torch.Tensor:
    """Pad ``seqs`` to the longest one; returns a ``(B, T)`` long tensor."""
    width = max(len(s) for s in seqs)
    fill = [[value] * (width - len(s)) for s in seqs]
    rows = [list(s) + f if side == "right" else f + list(s) for s, f in zip(seqs, fill, strict=True)]
    return torch.tensor(rows, dtype=torch.long)


def pad_with_mask(seqs: Sequence[Sequence[int]], value: int, side: str = "right"
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, each ``(B, T)``, of ``seqs`` padded on ``side``."""
    return pad(seqs, value, side), pad([[1] * len(s) for s in seqs], 0, side)


class Collator:
    """Dynamic padding: pads each batch to its longest example, never to max_length.

    Causal: ``input_ids`` (B, T) padded with the pad id, ``attention_mask`` (B, T),
    ``labels`` (B, T) padded with :data:`IGNORE_INDEX`. Seq2seq: ``input_ids`` (B, S),
    ``attention_mask`` (B, S), ``labels`` (B, L) padded with :data:`IGNORE_INDEX` on the right (the
    model builds ``decoder_input_ids`` from them).

    Args:
        pad_token_id: Id that pads ``input_ids``.
        is_encoder_decoder: True for seq2seq examples.
        padding_side: ``"right"`` or ``"left"``; applies to ``input_ids``,
            ``attention_mask`` and causal ``labels``.
    """

    def __init__(self, pad_token_id: int, is_encoder_decoder: bool, padding_side: str = "right"):
        if pad_token_id is None:
            raise ValueError("pad_token_id is None; give the tokenizer a pad token")
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        self.pad_token_id = int(pad_token_id)
        self.is_encoder_decoder = is_encoder_decoder
        self.padding_side = padding_side

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        """Collate examples into padded tensors (shapes in the class docstring)."""
        if not examples:
            raise ValueError("cannot collate an empty batch")
        ids = [list(ex["input_ids"]) for ex in examples]
        labels = [list(ex["labels"]) for ex in examples]
        side = self.padding_side
        return {
            "input_ids": pad(ids, self.pad_token_id, side),
            "attention_mask": pad([[1] * len(s) for s in ids], 0, side),
            "labels": pad(labels, IGNORE_INDEX, "right" if self.is_encoder_decoder else side),
        }
