"""The optimizer and the learning-rate schedule of head training."""

from __future__ import annotations

import math

import torch

from .config import TrainConfig


def make_optimizer(config: TrainConfig, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """SparseAdam, or AdamW with its fused kernel where the parameters allow it.

    The head is a dense (V, d) matrix, so every AdamW step touches all V rows; the fused
    kernel does that in one pass per tensor (about 6x faster than the default on CPU).
    """
    if config.optimizer == "sparse_adam":
        return torch.optim.SparseAdam(params, lr=config.lr)
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype in (torch.float32, torch.bfloat16,
                                                                   torch.float16) for p in params)
    return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay,
                             fused=fused or None)


def cosine_with_warmup(optimizer: torch.optim.Optimizer, warmup: int, total: int
                       ) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
