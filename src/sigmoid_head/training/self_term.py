"""The self-generated term: the head trained on the model's own outputs, labelled good/bad.

Avoid-dominant sampling never uses a dominant token as a negative, and on the model's own
greedy output almost every token is dominant, so the paper's objective never tells the head
which of those tokens are wrong. This term does: for every labelled position of a
self-labelled example (:mod:`sigmoid_head.data.self_labels`), the binary cross-entropy of
the head's sigmoid score of the generated token against its label (1 = the token spells
words the reference alignment matched, 0 = it does not).

Each optimizer step adds ``self_weight`` times the mean of this BCE over one micro-batch of
self-labelled examples (``batch_size`` of them, cycling through a seeded shuffle of the
file) to the paper's per-position mean loss. Validation reports both parts; the loss that
selects the best head and stops early is their sum with the same weight.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from ..data.batching import Collator, make_batches
from ..data.datasets_io import examples_at
from ..data.self_labels import IGNORE_LABEL
from .cache import PositionCache
from .config import split_validation


@dataclass
class SelfData:
    """The self-labelled examples of one run, their micro-batches and hidden-state caches."""

    train: list[dict]
    validation: list[dict]
    weight: float
    batch_size: int
    seed: int
    cache: PositionCache | None = None
    val_cache: PositionCache | None = None
    _order: list[list[int]] = field(default_factory=list)
    _epoch: int = -1
    _n_batches: int | None = None

    def batch_for(self, step: int, part: int = 0, parts: int = 1) -> list[int]:
        """The self micro-batch of optimizer step ``step`` (of process ``part`` of
        ``parts``): consecutive batches of the file's length-bucketed shuffle, renewed every
        pass and seeded by (seed, pass), so a resumed run draws the same ones."""
        if self._n_batches is None:
            self._n_batches = len(self._pass(0))
        epoch, at = divmod(step * parts + part, self._n_batches)
        if epoch != self._epoch:
            self._order, self._epoch = self._pass(epoch), epoch
        return self._order[at]

    def _pass(self, epoch: int) -> list[list[int]]:
        return make_batches([len(e["input_ids"]) + len(e["labels"]) for e in self.train],
                            batch_size=self.batch_size, shuffle=True, seed=self.seed, epoch=epoch)

    def validation_batches(self) -> list[list[int]]:
        if not self.validation:
            return []
        return make_batches([len(e["input_ids"]) for e in self.validation],
                            batch_size=self.batch_size, shuffle=False)


def self_loss(head: torch.nn.Module, model, indices: list[int], examples: list[dict],
              collate: Collator, autocast, cache: PositionCache | None
              ) -> tuple[torch.Tensor, int]:
    """Summed BCE of the head's score of every labelled generated token against its label,
    and the number of labelled positions, for the examples at ``indices``."""
    chosen = examples_at(examples, indices)
    if cache is not None:
        cache.fill(indices, examples, autocast)
        pos, _ = cache.positions(indices)
    else:
        batch = {k: v.to(model.backbone.device) for k, v in collate(chosen).items()}
        with torch.no_grad(), autocast:
            pos = model.backbone.positions(batch, with_logits=False)
    good = torch.tensor([g for e in chosen for g in e["good"]], device=pos.targets.device)
    if good.numel() != pos.targets.numel():
        raise RuntimeError(f"{good.numel()} self labels for {pos.targets.numel()} positions")
    keep = good != IGNORE_LABEL
    logits = head(pos.hidden[keep], pos.targets[keep].unsqueeze(1)).float().squeeze(1)
    loss = F.binary_cross_entropy_with_logits(logits, good[keep].float(), reduction="sum")
    return loss, int(keep.sum())


@torch.no_grad()
def self_validation(head: torch.nn.Module, model, data: SelfData, collate: Collator,
                    autocast) -> float | None:
    """Mean self BCE over the self validation examples (None without them)."""
    total, n = 0.0, 0
    for mb in data.validation_batches():
        loss, k = self_loss(head, model, mb, data.validation, collate, autocast, data.val_cache)
        total, n = total + float(loss), n + k
    return total / n if n else None


def load_self_data(config, model, collate: Collator) -> SelfData | None:
    """The self-labelled train and validation examples of a run (None without
    ``self_generated``); without ``self_validation_file`` a share is held out as the
    paper's data is."""
    if not config.self_generated:
        return None
    from ..lm.backbone import DTYPES
    from .self_generated import load_self_examples

    form = config.prompt_format(model.backbone.is_encoder_decoder)
    train = load_self_examples(config.self_generated, model.tokenizer, form)
    if config.self_validation_file:
        val = load_self_examples(config.self_validation_file, model.tokenizer, form)
    else:
        train, val = split_validation(config, train)
    caches = (None, None)
    if config.cache_hidden and not config.cache_dir:
        dtype = DTYPES[config.cache_dtype]
        caches = (PositionCache(model.backbone, collate, None, dtype),
                  PositionCache(model.backbone, collate, None, dtype))
    return SelfData(train, val[: config.max_validation_examples], config.self_weight,
                    config.batch_size or 8, config.seed, *caches)


def self_step(data: SelfData, ctx: Any, collate: Collator, acc: Any, step: int, more: bool
              ) -> torch.Tensor:
    """Backward of ``self_weight`` x the mean self BCE of optimizer step ``step``'s self
    micro-batch (gradients not synced when paper micro-batches follow: ``more``); returns
    that weighted mean, detached."""
    mb = data.batch_for(step, acc.process_index, acc.num_processes)
    with acc.no_sync(ctx.head) if more else nullcontext():
        loss_sum, n = self_loss(ctx.head, ctx.model, mb, data.train, collate, ctx.autocast, data.cache)
        weighted = loss_sum * (data.weight / max(n, 1))
        acc.backward(weighted)
    return weighted.detach().double()
