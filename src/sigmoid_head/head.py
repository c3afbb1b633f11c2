"""The Sigmoid Head: a second unembedding matrix W_qe (V x d) with sigmoid activation.

It is initialised as a copy of the LM's output matrix (never tied to it) and scores a
token ``y`` at a position with hidden state ``h`` as ``sigmoid(W_qe[y] . h + b[y])``.
Training and scoring only ever gather the rows they need; a full ``(N, V)`` sigmoid is
available for tests and analysis but never used on the hot path.

The file format (``head_config.json`` + ``head.safetensors``) lives in :mod:`.head_io`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class HeadMismatchError(ValueError):
    """A saved head does not belong to the base model (or config) it is being loaded onto."""


class SigmoidHead(nn.Module):
    """W_qe (V, d) and an optional bias (V,), scored through gathered rows.

    Attributes:
        weight: (V, d) parameter.
        bias: (V, 1) parameter or None (kept 2-D so sparse gradients work for it too).
        sparse: produce sparse row gradients (for lazy/sparse optimizers).
    """

    def __init__(self, vocab_size: int, hidden_size: int, bias: bool = False,
                 dtype: torch.dtype = torch.float32, sparse: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(vocab_size, hidden_size, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(vocab_size, 1, dtype=dtype)) if bias else None
        self.sparse = sparse

    @classmethod
    def from_lm_head(cls, weight: torch.Tensor, bias: torch.Tensor | None = None,
                     use_bias: bool = False, dtype: torch.dtype = torch.float32) -> SigmoidHead:
        """A head initialised as an untied copy of an LM output layer.

        Args:
            weight: (V, d) the LM's output matrix.
            bias: (V,) the LM's output bias, copied when ``use_bias`` (zeros if None).
            use_bias: give the head a bias.
            dtype: parameter dtype (float32 keeps the optimizer exact even for bf16 models).
        """
        head = cls(weight.shape[0], weight.shape[1], bias=use_bias, dtype=dtype)
        with torch.no_grad():
            head.weight.copy_(weight.detach().to(dtype))
            if head.bias is not None and bias is not None:
                head.bias.copy_(bias.detach().reshape(-1, 1).to(dtype))
        return head.to(weight.device)

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def forward(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Same as :meth:`logits` (forward goes through DDP wrappers)."""
        return self.logits(hidden, ids)

    def logits(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Sigmoid-head logits of chosen tokens.

        Args:
            hidden: (N, d) final hidden states.
            ids: (N, m) token ids per position.

        Returns:
            (N, m) logits ``W_qe[ids] . h (+ b[ids])``.
        """
        rows = F.embedding(ids, self.weight, sparse=self.sparse)  # (N, m, d)
        out = torch.bmm(rows, hidden.to(rows.dtype).unsqueeze(-1)).squeeze(-1)  # (N, m)
        if self.bias is not None:
            out = out + F.embedding(ids, self.bias, sparse=self.sparse).squeeze(-1)
        return out

    def token_probs(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """(N,) sigmoid probability of token ``ids[n]`` at position n; hidden (N, d)."""
        return torch.sigmoid(self.logits(hidden, ids.unsqueeze(-1)).squeeze(-1).float())

    def full_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, V) logits over the whole vocabulary (for tests and analysis only)."""
        out = hidden.to(self.weight.dtype) @ self.weight.T
        return out + self.bias.T if self.bias is not None else out

    def state_for_saving(self) -> dict[str, torch.Tensor]:
        state = {"weight": self.weight.detach().contiguous().cpu()}
        if self.bias is not None:
            state["bias"] = self.bias.detach().reshape(-1).contiguous().cpu()
        return state

    def load_saved_state(self, state: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            self.weight.copy_(state["weight"])
            if self.bias is not None:
                if "bias" not in state:
                    raise HeadMismatchError("head_config says bias=True but the weights hold no bias")
                self.bias.copy_(state["bias"].reshape(-1, 1))


def sigmoid_bce(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                negatives: torch.Tensor) -> torch.Tensor:
    """Per-position binary cross-entropy over the positive and its negatives.

    Only the 1 + k gathered rows of W_qe take part; no (N, V) tensor is made.

    Args:
        head: the sigmoid head (or a DDP wrapper of it; called as ``head(hidden, ids)``).
        hidden: (N, d) final hidden states.
        targets: (N,) reference ids (label 1).
        negatives: (N, k) negative ids (label 0); -1 marks a missing negative (ignored).

    Returns:
        (N,) loss per position: the mean BCE over its positive and valid negatives.
    """
    ids = torch.cat([targets.unsqueeze(1), negatives], 1)  # (N, 1+k)
    valid = ids >= 0
    logits = head(hidden, ids.clamp(min=0)).float()  # (N, 1+k)
    labels = torch.zeros_like(logits)
    labels[:, 0] = 1.0
    bce = F.binary_cross_entropy_with_logits(logits, labels, reduction="none") * valid
    return bce.sum(1) / valid.sum(1)
