"""Token-level scores made from both heads of the same forward pass.

Not to be confused with :mod:`sigmoid_head.evaluation.combination`, which mixes
*sequence* scores after scoring (the ``combined`` field of ``score`` and ``generate``, its
weight fitted by ``calibrate``). The functions here work on each token's probabilities:

* :func:`geometric` -- ``alpha * log sigmoid + (1 - alpha) * log softmax`` per token: a
  weighted geometric mean of the two probabilities (``alpha`` chosen on dev data).
* :func:`rank_preserving` -- the head's probabilities lowered where needed so that,
  within a position, they keep the softmax's order: a token never scores above
  ``(1 - eps)`` times the lowest head score of the tokens the softmax ranks above it.
  The argmax token is never lowered, so on greedy output this equals the head.

Both return token log-probabilities, which aggregate like any other method.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def geometric(sigmoid_log: torch.Tensor, softmax_log: torch.Tensor, alpha: float) -> torch.Tensor:
    """(N,) ``alpha * sigmoid_log + (1 - alpha) * softmax_log``; alpha in [0, 1]."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    return alpha * sigmoid_log + (1.0 - alpha) * softmax_log


def rank_preserving(head_logits: torch.Tensor, logp: torch.Tensor, targets: torch.Tensor,
                    eps: float = 1e-3) -> torch.Tensor:
    """Log of the rank-preserving adjusted head probability of each target token.

    Args:
        head_logits: (N, V) Sigmoid Head logits over the whole vocabulary.
        logp: (N, V) softmax log-probabilities of the same positions.
        targets: (N,) scored token ids.
        eps: relative separation kept below each higher-ranked token.

    Returns:
        (N,) ``log min(sigmoid(s_y), (1 - eps) * min_{v: p(v) > p(y)} sigmoid(s_v))``.
    """
    own_logit = head_logits.gather(1, targets[:, None])[:, 0].float()  # (N,)
    own_logp = logp.gather(1, targets[:, None])  # (N, 1)
    above = logp > own_logp  # (N, V) tokens the softmax ranks strictly higher
    lowest = torch.where(above, head_logits.float(), math.inf).amin(1)  # (N,) inf if none
    cap = F.logsigmoid(lowest) + math.log1p(-eps)  # (N,) log((1 - eps) * sigmoid(lowest))
    cap = torch.where(above.any(1), cap, math.inf)  # the softmax's top token has no cap
    return torch.minimum(F.logsigmoid(own_logit), cap)
