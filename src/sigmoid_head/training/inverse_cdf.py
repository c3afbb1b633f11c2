"""Exact inverse-CDF draws of token ids, the candidate generators of the negative samplers
(:mod:`sigmoid_head.training.negatives`): from one shared (V,) distribution (:func:`cdf_draw`) and
from per-row weights without a cumsum over the vocabulary (:func:`two_level_draw`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

DrawFn = Callable[[torch.Tensor | None, torch.Tensor], torch.Tensor]
"""(rows (r,) or None for all rows, uniforms (r, m) float64 in [0, 1)) -> (r, m) candidate ids."""


def cdf_draw(cdf: torch.Tensor) -> DrawFn:
    """Inverse-CDF draws from one shared distribution. cdf: (V,) float64, increasing."""

    def draw(rows: torch.Tensor | None, u: torch.Tensor) -> torch.Tensor:
        ids = torch.searchsorted(cdf, u * cdf[-1], right=True)
        return ids.clamp_(max=cdf.numel() - 1)

    return draw


BLOCK = 256
"""Vocabulary block width of the two-level softmax sampler."""


def two_level_draw(w: torch.Tensor, fixed_shape: bool = False) -> DrawFn:
    """Exact inverse-CDF draws from per-row weights without a full-width cumsum.

    The vocabulary is cut into blocks of :data:`BLOCK`. A draw first picks a block by
    inverse CDF over the per-row block sums, then a token by inverse CDF over the
    chosen block's weights, with the remainder of the same uniform: together exactly
    one inverse-CDF draw over the whole row. On CPU the only full-width work is one
    sum, and the chosen blocks' cumsums are made per draw; with fixed shapes (many
    draws per row at once) every block's cumsum is made once, in place, and the token
    is found by a binary search of fixed depth.

    Args:
        w: (R, V) non-negative weights (a row's distribution up to a constant);
            overwritten with fixed shapes.
        fixed_shape: the accelerator variant (same draws).

    Returns:
        A :data:`DrawFn`; -1 where rounding left a draw empty.
    """
    n_rows, vocab = w.shape
    nb = -(-vocab // BLOCK)
    if vocab % BLOCK:  # zero-weight padding of the tail block
        w = torch.nn.functional.pad(w, (0, nb * BLOCK - vocab))
    blocks = w.view(n_rows, nb, BLOCK)  # (R, nb, BLOCK)
    block_cdf = blocks.sum(-1).cumsum_(-1)  # (R, nb)
    if fixed_shape:
        inner_cdf = blocks.cumsum_(-1).view(n_rows, nb * BLOCK)  # (R, nb * BLOCK) per block

    def in_block(rows: torch.Tensor | None, b: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
        """(r, m): how many of block b's cumulative weights are <= rest (searchsorted, right)."""
        if not fixed_shape:
            inner = blocks[rows.unsqueeze(1), b].cumsum_(-1)  # (r, m, BLOCK)
            return torch.searchsorted(inner, rest.unsqueeze(-1), right=True).squeeze(-1)
        count, step, base = torch.zeros_like(b), BLOCK, b * BLOCK
        while step:  # binary lifting over a sorted block: fixed depth log2(BLOCK) + 1
            probe = count + step
            val = inner_cdf.gather(1, base + (probe - 1).clamp(max=BLOCK - 1))
            count = torch.where((probe <= BLOCK) & (val <= rest), probe, count)
            step //= 2
        return count

    def draw(rows: torch.Tensor | None, u: torch.Tensor) -> torch.Tensor:
        bc = block_cdf if rows is None else block_cdf[rows]  # (r, nb)
        u = u.to(w.dtype) * bc[:, -1:]  # (r, m)
        b = torch.searchsorted(bc, u, right=True)  # (r, m) first block whose cdf exceeds u
        full = b < nb
        b = b.clamp_(max=nb - 1)
        below = torch.where(b > 0, bc.gather(1, (b - 1).clamp(min=0)), 0.0)  # (r, m)
        j = in_block(rows, b, u - below)  # (r, m)
        ids = b * BLOCK + j.clamp(max=BLOCK - 1)
        ok = full & (j < BLOCK) & (ids < vocab)
        return torch.where(ok, ids, -1)

    return draw
