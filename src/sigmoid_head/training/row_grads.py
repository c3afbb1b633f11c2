"""The rows of a head's gradient that an update touches (the row-sparse optimizers' input)."""

from __future__ import annotations

import torch


def touched_rows(grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of a gradient that are not all zero, and their values.

    Args:
        grad: a dense gradient (R0, ...) or a sparse COO one with one sparse dimension
            (what ``F.embedding(..., sparse=True)`` gives; repeated rows are summed).

    Returns:
        ``(rows, values)``: (R,) sorted row ids and (R, ...) their gradient rows. A row
        gathered but with an all-zero summed gradient is left out, so the sparse and the
        dense form of one gradient give the same rows.
    """
    if grad.is_sparse:
        if grad.sparse_dim() != 1:
            raise ValueError(f"RowSparseAdamW needs row gradients (1 sparse dim), got {grad.sparse_dim()}")
        grad = grad.coalesce()
        rows, values = grad.indices()[0], grad.values()
        keep = values.reshape(values.shape[0], -1).ne(0).any(1)  # (R,)
        return rows[keep], values[keep]
    flat = grad.reshape(grad.shape[0], -1)
    rows = torch.count_nonzero(flat, dim=1).nonzero().squeeze(1)  # (R,)
    return rows, grad.index_select(0, rows)
