"""Hidden-state cache: run the frozen backbone once, train the head many times.

The backbone is frozen, so the final hidden states of every trained position, and the
dominant sets the samplers exclude, never change. With the cache on, the first pass
stores them per example (CPU memory, in ``storage_dtype``), and every later micro-batch
is assembled from the cache instead of running the backbone. The softmax sampler still
needs each position's LM distribution; it is recomputed from the cached hidden states
with the LM head alone (the body is skipped), which is what bounds a cached epoch with
softmax sampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data.batching import Collator
from ..data.datasets_io import examples_at
from ..lm.backbone import Backbone, Positions
from ..lm.dominant import DominantConfig, log_softmax_and_dominant


@dataclass
class CachedExample:
    """One example's trained positions: hidden (n, d), targets (n,), dominant (n, M) or None."""

    hidden: torch.Tensor
    targets: torch.Tensor
    dominant: torch.Tensor | None


class PositionCache:
    """Per-example hidden states, targets and dominant ids, filled lazily."""

    def __init__(self, backbone: Backbone, collate: Collator, dominant: DominantConfig | None,
                 storage_dtype: torch.dtype = torch.float32) -> None:
        """
        Args:
            backbone: the frozen model.
            collate: batch collator.
            dominant: dominant-token rule, or None when no sampler needs dominant sets.
            storage_dtype: dtype of the stored hidden states.
        """
        self.backbone, self.collate, self.dominant = backbone, collate, dominant
        self.storage_dtype = storage_dtype
        self.items: dict[int, CachedExample] = {}

    def nbytes(self) -> int:
        """Memory held by the cache."""
        total = 0
        for item in self.items.values():
            for t in (item.hidden, item.targets, item.dominant):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total

    @torch.no_grad()
    def fill(self, indices: list[int], examples: list[dict], autocast: object) -> None:
        """Run the backbone on the examples of ``indices`` that are not cached yet."""
        todo = [i for i in indices if i not in self.items]
        if not todo:
            return
        pos, dom = backbone_positions(self.backbone, self.collate, self.dominant,
                                      examples_at(examples, todo), autocast)
        # one copy to the host per tensor, then slices there (not one device sync per example)
        hidden, targets = pos.hidden.to("cpu", self.storage_dtype), pos.targets.cpu()
        row, dom = pos.row.cpu(), None if dom is None else dom.cpu()
        for r, i in enumerate(todo):
            sel = row == r
            self.items[i] = CachedExample(
                hidden=hidden[sel],
                targets=targets[sel],
                dominant=None if dom is None else trim_dominant(dom[sel]),
            )

    def positions(self, indices: list[int]) -> tuple[Positions, torch.Tensor | None]:
        """The cached positions of a micro-batch, in the same order the backbone gives them.

        Returns:
            Positions (hidden (N, d) in the backbone dtype, targets (N,)) and the dominant
            ids (N, M) padded with -1 (None when not cached).
        """
        return assemble(self.backbone, [self.items[i] for i in indices], self.dominant is not None)


def assemble(backbone: Backbone, items: list[CachedExample], with_dominant: bool
             ) -> tuple[Positions, torch.Tensor | None]:
    """One micro-batch's positions from its cached examples, on the backbone's device and
    in its dtype; dominant ids (N, M) padded with -1 (None without)."""
    device, dtype = backbone.device, backbone.dtype
    hidden = torch.cat([it.hidden for it in items]).to(device, dtype)
    targets = torch.cat([it.targets for it in items]).to(device)
    dominant = None
    if with_dominant:
        width = max(it.dominant.shape[1] for it in items)
        dominant = torch.cat([torch.nn.functional.pad(it.dominant, (0, width - it.dominant.shape[1]),
                                                      value=-1) for it in items]).to(device)
    empty = torch.empty(0, dtype=torch.long, device=device)
    return Positions(hidden=hidden, targets=targets, row=empty, col=empty), dominant


@torch.no_grad()
def backbone_positions(backbone: Backbone, collate: Collator, dominant: DominantConfig | None,
                       examples: list[dict], autocast: object
                       ) -> tuple[Positions, torch.Tensor | None]:
    """The backbone's trained positions of ``examples`` (one batch) and their dominant ids
    (N, M), padded with -1 (None without a dominant rule)."""
    batch = {k: v.to(backbone.device) for k, v in collate(examples).items()}
    with autocast:
        pos = backbone.positions(batch, with_logits=dominant is not None)
    dom = None
    if dominant is not None:
        _, dom = log_softmax_and_dominant(pos.logits, dominant)  # (N, M)
    return pos, dom


def trim_dominant(ids: torch.Tensor) -> torch.Tensor:
    """Drop all-padding columns of (n, M) dominant ids (keep at least one)."""
    keep = max(int((ids >= 0).sum(1).max()) if ids.numel() else 0, 1)
    return ids[:, :keep].contiguous()
