"""The rows of a head's gradient that an update touches, and the base of the optimizers that
update only those rows (``sparse_adamw``, ``deferred_adamw``)."""

from __future__ import annotations

from abc import ABC, abstractmethod

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


class RowOptimizer(torch.optim.Optimizer, ABC):
    """AdamW's settings, checked, and a step that hands every parameter to
    :meth:`_step_param` (the row optimizers differ only there)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        if not (lr > 0 and eps >= 0 and weight_decay >= 0 and all(0 <= b < 1 for b in betas)):
            raise ValueError(f"{type(self).__name__}: invalid lr={lr}, betas={betas}, eps={eps} or "
                             f"weight_decay={weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001, ANN201 (torch's signature)
        """One update of every parameter (:meth:`_step_param`)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                self._step_param(p, group)
        return loss

    @abstractmethod
    def _step_param(self, p: torch.Tensor, group: dict) -> None:
        """Update ``p`` (its gradient's touched rows) with ``group``'s settings."""
