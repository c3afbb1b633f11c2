"""One training step's loss: frozen forward, dominant sets, negatives, BCE over gathered rows.

These functions are the hot path of :func:`sigmoid_head.training.loop.train` (and of the
benchmarks); the loop around them lives in :mod:`.loop`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data.batching import IGNORE_INDEX, Collator
from ..data.datasets_io import examples_at
from ..data.self_labels import IGNORE_LABEL
from ..head.layer import dominant_ranking_loss, sigmoid_bce
from ..head.model import SigmoidHeadModel
from ..lm.backbone import Positions
from ..lm.dominant import DominantConfig, dominant_from_hidden, log_softmax_and_dominant
from .cache import PositionCache
from .negatives import NegativeSampler


@dataclass
class StepContext:
    """What a loss computation needs besides the batch."""

    model: SigmoidHeadModel
    head: torch.nn.Module  # the (possibly DDP-wrapped) head
    sampler: NegativeSampler
    dominant: DominantConfig
    autocast: object
    rank_weight: float = 0.0
    """Weight of the authors' ranking loss (0 = the paper's loss only)."""
    rank_margin: float = 0.0
    """Its logit margin (0: the authors' default, only inversions count)."""
    bad_weight: float = 1.0
    """Weight of a human-labelled error token's BCE (labelled examples only)."""
    reference_weight: float = 1.0
    """Weight of a reference example's positions when labelled examples are mixed in."""


def position_labels(ctx: StepContext, chosen: list[dict]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(good, weight), each (N,), of the N trained positions of the examples ``chosen`` in
    the order the backbone gives them: a labelled example's ``good`` (1 / 0 / -1) with
    weight 1, ``bad_weight`` or 0 (skipped); a reference example's positions good with
    weight ``reference_weight``. None when nothing is labelled and reference_weight is 1
    (the paper's loss, unchanged)."""
    if ctx.reference_weight == 1.0 and not any("good" in e for e in chosen):
        return None
    good: list[int] = []
    weight: list[float] = []
    for e in chosen:
        if "good" in e:
            good += e["good"]
            weight += [0.0 if g == IGNORE_LABEL else (ctx.bad_weight if g == 0 else 1.0)
                       for g in e["good"]]
        else:
            n = trained_positions(e, ctx.model.backbone.is_encoder_decoder)
            good, weight = good + [1] * n, weight + [ctx.reference_weight] * n
    return torch.tensor(good), torch.tensor(weight, dtype=torch.float32)


def _seeded(seed: int, *parts: int, device: torch.device) -> torch.Generator:
    """A generator whose state depends only on (seed, parts)."""
    value = seed
    for p in parts:
        value = (value * 1_000_003 + p + 1) % (2**62)
    return torch.Generator(device=device).manual_seed(value)


def batch_loss(ctx: StepContext, batch: dict[str, torch.Tensor], gen: torch.Generator,
               labels: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, int]:
    """Summed per-position loss of one collated micro-batch and its number of trained positions.

    Phases: frozen forward (hidden states + LM logits at trained positions only) ->
    dominant sets -> negatives -> BCE over gathered head rows (+ the optional ranking
    hinge over the dominant tokens).
    """
    cfg = ctx.sampler.config
    need_dominant = cfg.avoid_dominant or ctx.rank_weight > 0
    bb = ctx.model.backbone
    dominant_ids = None
    with ctx.autocast:
        pos = bb.positions(batch, with_logits=cfg.needs_logits)
        if need_dominant and not cfg.needs_logits:
            # only the sets are kept: logits a block at a time, never (N, V) at once
            dominant_ids = dominant_from_hidden(bb.lm_logits, pos.hidden, bb.vocab_rows(),
                                                ctx.dominant)  # (N, M)
    if pos.logits is not None:
        # one log-softmax serves both the dominant sets and (shift-invariant) softmax sampling
        pos.logits, dominant_ids = log_softmax_and_dominant(  # (N, V), (N, M)
            pos.logits, ctx.dominant, with_dominant=need_dominant)
    return head_loss(ctx, pos, dominant_ids, gen, labels)


def head_loss(ctx: StepContext, pos: Positions, dominant_ids: torch.Tensor | None,
              gen: torch.Generator,
              labels: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, int]:
    """Negatives, then the summed BCE over gathered head rows, for N positions.

    With ``rank_weight > 0`` and avoid-dominant sampling (the only case the authors apply it
    in), ``rank_weight`` times the ranking loss, the mean over the batch's (reference, other
    dominant token) pairs, is added per position: the loop divides the sum by N, so a step
    of one micro-batch optimises mean BCE + rank_weight * mean pair hinge, as theirs does.

    With ``labels`` (:func:`position_labels`: good and weight, each (N,)), a position
    labelled 0 has its token as its one negative, every position's BCE is weighted, the
    ranking loss takes the good positions only, and the count returned is of the
    positions with a label (-1 skipped).
    """
    if labels is not None:
        return _labelled_loss(ctx, pos, dominant_ids, gen, labels)
    if ctx.sampler.config.needs_logits and pos.logits is None:  # cached positions
        with ctx.autocast:
            pos.logits, _ = log_softmax_and_dominant(ctx.model.backbone.lm_logits(pos.hidden),
                                                     with_dominant=False)  # (N, V)
    avoid = dominant_ids if ctx.sampler.config.avoid_dominant else None
    negatives = ctx.sampler(pos.targets, gen, avoid, pos.logits)  # (N, k)
    total = sigmoid_bce(ctx.head, pos.hidden, pos.targets, negatives).sum()  # over N positions
    n = int(pos.targets.numel())
    if ctx.rank_weight > 0 and avoid is not None:
        total = total + n * ctx.rank_weight * dominant_ranking_loss(
            ctx.head, pos.hidden, pos.targets, avoid, ctx.rank_margin)
    return total, n


def _labelled_loss(ctx: StepContext, pos: Positions, dominant_ids: torch.Tensor | None,
                   gen: torch.Generator, labels: tuple[torch.Tensor, torch.Tensor]
                   ) -> tuple[torch.Tensor, int]:
    """:func:`head_loss` with per-position labels and weights."""
    good, weight = (t.to(pos.targets.device) for t in labels)  # (N,), (N,)
    if good.numel() != pos.targets.numel():
        raise RuntimeError(f"{good.numel()} labels for {pos.targets.numel()} trained positions")
    if ctx.sampler.config.needs_logits and pos.logits is None:  # cached positions
        with ctx.autocast:
            pos.logits, _ = log_softmax_and_dominant(ctx.model.backbone.lm_logits(pos.hidden),
                                                     with_dominant=False)  # (N, V)
    avoid = dominant_ids if ctx.sampler.config.avoid_dominant else None
    negatives = ctx.sampler(pos.targets, gen, avoid, pos.logits)  # (N, k)
    ok = good == 1
    per = sigmoid_bce(ctx.head, pos.hidden, pos.targets, negatives, positive=ok)  # (N,)
    total = (per * weight).sum()
    n = int((good != IGNORE_LABEL).sum())
    if ctx.rank_weight > 0 and avoid is not None and bool(ok.any()):
        total = total + int(ok.sum()) * ctx.rank_weight * dominant_ranking_loss(
            ctx.head, pos.hidden[ok], pos.targets[ok], avoid[ok], ctx.rank_margin)
    return total, n


def micro_loss(ctx: StepContext, indices: list[int], examples: list[dict], collate: Collator,
               gen: torch.Generator, cache: PositionCache | None) -> tuple[torch.Tensor, int]:
    """Loss of the micro-batch ``indices``: from the hidden-state cache when there is one."""
    chosen = examples_at(examples, indices)
    labels = position_labels(ctx, chosen)
    if cache is None:
        batch = collate(chosen)
        batch["trained_index"] = ctx.model.backbone.trained_index(batch["labels"])  # host side
        device = ctx.model.backbone.device
        if device.type == "cuda":  # copies that do not wait for the device's queue
            batch = {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
        return batch_loss(ctx, {k: v.to(device) for k, v in batch.items()}, gen, labels)
    cache.fill(indices, examples, ctx.autocast)
    pos, dominant_ids = cache.positions(indices)
    return head_loss(ctx, pos, dominant_ids, gen, labels)


@torch.no_grad()
def evaluate(ctx: StepContext, batches: list[list[int]], examples: list[dict], collate: Collator,
             seed: int, accelerator, cache: PositionCache | None = None) -> float:
    """Mean validation loss; negatives come from fixed seeds, so every evaluation is comparable."""
    total = torch.zeros(2, dtype=torch.float64, device=accelerator.device)
    rank, world = accelerator.process_index, accelerator.num_processes
    for i in range(rank, len(batches), world):
        gen = _seeded(seed, -1, i, device=accelerator.device)
        loss, n = micro_loss(ctx, batches[i], examples, collate, gen, cache)
        total[0] += loss.double()  # accumulated on the device: one readout at the end
        total[1] += n
    total = accelerator.reduce(total, reduction="sum")
    return float(total[0] / total[1].clamp(min=1))


def loss_positions(example: dict, is_encoder_decoder: bool) -> int:
    """How many positions of an example count in a step's loss: its trained positions, or
    a labelled example's positions with a label (the divisor of the step's loss)."""
    if "good" in example:
        return sum(1 for g in example["good"] if g != IGNORE_LABEL)
    return trained_positions(example, is_encoder_decoder)


def trained_positions(example: dict, is_encoder_decoder: bool) -> int:
    """How many positions of an example are trained (a causal model never predicts token 0)."""
    labels = example["labels"] if is_encoder_decoder else example["labels"][1:]
    return sum(1 for t in labels if t != IGNORE_INDEX)
