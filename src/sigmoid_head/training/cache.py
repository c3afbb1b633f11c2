"""Hidden-state cache: run the frozen backbone once, train the head many times.

The backbone is frozen, so the final hidden states of every trained position, and the
dominant sets the samplers exclude, never change. With the cache on, the first pass
stores them per example (CPU memory, in ``storage_dtype``), and every later micro-batch
is assembled from the cache instead of running the backbone. Each cached example keeps the
key of its token ids (:func:`example_key`): an example whose key differs from the one it
is asked for (a cache reused on other data) is recomputed, never served. The softmax sampler still
needs each position's LM distribution; it is recomputed from the cached hidden states
with the LM head alone (the body is skipped), which is what bounds a cached epoch with
softmax sampling.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import numpy as np
import torch

from ..data.batching import Collator
from ..data.datasets_io import examples_at
from ..lm.backbone import Backbone, Positions
from ..lm.dominant import DominantConfig, dominant_from_hidden

logger = logging.getLogger(__name__)


def example_key(example: dict) -> bytes:
    """A 16-byte hash of what fixes an example's cached rows: its input and label ids."""
    h = hashlib.blake2b(digest_size=16)
    for name in ("input_ids", "labels", "decoder_input_ids"):
        if name in example and example[name] is not None:
            h.update(name.encode())
            h.update(np.asarray(example[name], dtype=np.int64).tobytes())
    return h.digest()


@dataclass
class CachedExample:
    """One example's trained positions: hidden (n, d), targets (n,), dominant (n, M) or None,
    and the :func:`example_key` of the example they were computed from."""

    hidden: torch.Tensor
    targets: torch.Tensor
    dominant: torch.Tensor | None
    key: bytes = b""


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
        """Run the backbone on the examples of ``indices`` that are not cached yet, or whose
        cached rows were computed from other token ids (another data set)."""
        chosen = examples_at(examples, indices)
        keys = [example_key(e) for e in chosen]
        stale = {i for i, k in zip(indices, keys, strict=True) if i in self.items and self.items[i].key != k}
        if stale:
            logger.warning("hidden-state cache: %d cached examples were computed from other token ids "
                           "(another data set); recomputing them", len(stale))
        todo = [r for r, i in enumerate(indices) if i not in self.items or i in stale]
        if not todo:
            return
        pos, dom = backbone_positions(self.backbone, self.collate, self.dominant,
                                      [chosen[r] for r in todo], autocast)
        # one copy to the host per tensor, then slices there (not one device sync per example)
        hidden, targets = pos.hidden.to("cpu", self.storage_dtype), pos.targets.cpu()
        row, dom = pos.row.cpu(), None if dom is None else dom.cpu()
        for b, r in enumerate(todo):
            sel = row == b
            self.items[indices[r]] = CachedExample(
                hidden=hidden[sel],
                targets=targets[sel],
                dominant=None if dom is None else trim_dominant(dom[sel]),
                key=keys[r],
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
        pos = backbone.positions(batch, with_logits=False)
        dom = None
        if dominant is not None:  # (N, M), the logits a block at a time
            dom = dominant_from_hidden(backbone.lm_logits, pos.hidden, backbone.vocab_rows(), dominant)
    return pos, dom


def trim_dominant(ids: torch.Tensor) -> torch.Tensor:
    """Drop all-padding columns of (n, M) dominant ids (keep at least one)."""
    keep = max(int((ids >= 0).sum(1).max()) if ids.numel() else 0, 1)
    return ids[:, :keep].contiguous()
