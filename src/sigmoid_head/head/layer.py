"""The Sigmoid Head: a second unembedding matrix W_qe (V x d) with sigmoid activation.

It is initialised as a copy of the LM's output matrix (never tied to it) and scores a
token ``y`` at a position with hidden state ``h`` as ``sigmoid(W_qe[y] . h + b[y])``.
Training and scoring only ever gather the rows they need; a full ``(N, V)`` sigmoid is
available for tests and analysis but never used on the hot path.

The file format (``head_config.json`` + ``head.safetensors``) lives in :mod:`.head_io`.
"""

from __future__ import annotations

from collections.abc import Callable

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
        before_read: None, or a function of the ids about to be read by :meth:`logits`,
            called first (``--optimizer deferred_adamw`` brings those rows up to date).
    """

    def __init__(self, vocab_size: int, hidden_size: int, bias: bool = False,
                 dtype: torch.dtype = torch.float32, sparse: bool = False, rank: int = 0) -> None:
        super().__init__()
        if rank < 0:
            raise ValueError(f"rank must be >= 0, got {rank}")
        self.rank = rank
        if rank:  # W_qe = W_out (a frozen copy, never saved) + A (V, r) @ B (r, d)
            self.register_buffer("weight", torch.zeros(vocab_size, hidden_size, dtype=dtype),
                                 persistent=False)
            self.lora_a = nn.Parameter(torch.zeros(vocab_size, rank, dtype=dtype))
            init = torch.randn(rank, hidden_size, generator=torch.Generator().manual_seed(rank))
            self.lora_b = nn.Parameter((init / hidden_size**0.5).to(dtype))
        else:
            self.weight = nn.Parameter(torch.zeros(vocab_size, hidden_size, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(vocab_size, 1, dtype=dtype)) if bias else None
        self.sparse = sparse
        self.before_read: Callable[[torch.Tensor], None] | None = None

    @classmethod
    def from_lm_head(cls, weight: torch.Tensor, bias: torch.Tensor | None = None,
                     use_bias: bool = False, dtype: torch.dtype = torch.float32,
                     rank: int = 0) -> SigmoidHead:
        """A head initialised as an untied copy of an LM output layer.

        Args:
            weight: (V, d) the LM's output matrix.
            bias: (V,) the LM's output bias, copied when ``use_bias`` (zeros if None).
            use_bias: give the head a bias.
            dtype: parameter dtype (float32 keeps the optimizer exact even for bf16 models).
            rank: 0 = a full trainable (V, d) matrix (the paper); r > 0 = the frozen LM
                head plus a trainable rank-r update, r * (V + d) parameters.
        """
        head = cls(weight.shape[0], weight.shape[1], bias=use_bias, dtype=dtype, rank=rank)
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
        if self.before_read is not None:
            self.before_read(ids)
        rows = F.embedding(ids, self.weight, sparse=self.sparse and not self.rank)  # (N, m, d)
        out = torch.bmm(rows, hidden.to(rows.dtype).unsqueeze(-1)).squeeze(-1)  # (N, m)
        if self.rank:
            low = F.embedding(ids, self.lora_a, sparse=self.sparse)  # (N, m, r)
            proj = hidden.to(self.lora_b.dtype) @ self.lora_b.T  # (N, r)
            out = out + torch.bmm(low, proj.unsqueeze(-1)).squeeze(-1)
        if self.bias is not None:
            out = out + F.embedding(ids, self.bias, sparse=self.sparse).squeeze(-1)
        return out

    def token_probs(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """(N,) sigmoid probability of token ``ids[n]`` at position n; hidden (N, d)."""
        return torch.sigmoid(self.logits(hidden, ids.unsqueeze(-1)).squeeze(-1).float())

    def row_parameters(self) -> list[nn.Parameter]:
        """The trained parameters whose rows are the vocabulary's (read through ``ids``)."""
        return [p for p in (self.weight, getattr(self, "lora_a", None), self.bias)
                if isinstance(p, nn.Parameter)]

    def full_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, V) logits over the whole vocabulary (for tests and analysis only)."""
        out = hidden.to(self.weight.dtype) @ self.weight.T
        if self.rank:
            out = out + (hidden.to(self.lora_b.dtype) @ self.lora_b.T) @ self.lora_a.T
        return out + self.bias.T if self.bias is not None else out

    def trainable_parameters(self) -> int:
        """Number of trained values: V * d for the full head, r * (V + d) for a low-rank one."""
        return sum(p.numel() for p in self.parameters())

    def state_for_saving(self) -> dict[str, torch.Tensor]:
        if self.rank:
            state = {"lora_a": self.lora_a.detach().contiguous().cpu(),
                     "lora_b": self.lora_b.detach().contiguous().cpu()}
        else:
            state = {"weight": self.weight.detach().contiguous().cpu()}
        if self.bias is not None:
            state["bias"] = self.bias.detach().reshape(-1).contiguous().cpu()
        return state

    def load_saved_state(self, state: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            if self.rank:
                if "lora_a" not in state:
                    raise HeadMismatchError("head_config says rank > 0 but the weights hold no low-rank factors")
                self.lora_a.copy_(state["lora_a"])
                self.lora_b.copy_(state["lora_b"])
            else:
                self.weight.copy_(state["weight"])
            if self.bias is not None:
                if "bias" not in state:
                    raise HeadMismatchError("head_config says bias=True but the weights hold no bias")
                self.bias.copy_(state["bias"].reshape(-1, 1))


def sigmoid_bce(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                negatives: torch.Tensor, positive: torch.Tensor | None = None) -> torch.Tensor:
    """Per-position binary cross-entropy over the positive and its negatives.

    Only the 1 + k gathered rows of W_qe take part; no (N, V) tensor is made.

    Args:
        head: the sigmoid head (or a DDP wrapper of it; called as ``head(hidden, ids)``).
        hidden: (N, d) final hidden states.
        targets: (N,) reference ids (label 1).
        negatives: (N, k) negative ids (label 0); -1 marks a missing negative (ignored).
        positive: (N,) bool, optional: where False, the target token is a labelled error:
            it is the position's one negative (label 0) and its sampled negatives are
            dropped (human labels, :mod:`sigmoid_head.training.labelled`).

    Returns:
        (N,) loss per position: the mean BCE over its positive and valid negatives (the
        target's BCE alone at an error position).
    """
    ids = torch.cat([targets.unsqueeze(1), negatives], 1)  # (N, 1+k)
    valid = ids >= 0
    logits = head(hidden, ids.clamp(min=0)).float()  # (N, 1+k)
    labels = torch.zeros_like(logits)
    labels[:, 0] = 1.0
    if positive is not None:
        labels[:, 0] = positive.float()
        valid[:, 1:] &= positive.unsqueeze(1)
    bce = F.binary_cross_entropy_with_logits(logits, labels, reduction="none") * valid
    return bce.sum(1) / valid.sum(1)


def dominant_ranking_loss(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                          dominant_ids: torch.Tensor, margin: float = 0.0) -> torch.Tensor:
    """The authors' ranking loss: the reference's head logit above each other dominant token's.

    ``mean over all pairs (n, d), d in D_n \\ {y*_n}, of max(0, margin - (s_n(y*) - s_n(d)))``
    on head logits: one mean over every (reference, non-reference dominant token) pair of
    the batch, so a position with many dominant tokens counts once per pair and a position
    with none does not count at all. With margin 0 (the authors' default) only inversions
    (a dominant token above the reference) are penalised; a positive margin also pushes
    valid alternatives below the reference. Avoid-dominant sampling never draws the
    dominant tokens as negatives; this term keeps an order among them.

    Args:
        head: the sigmoid head (called as ``head(hidden, ids)``).
        hidden: (N, d) final hidden states.
        targets: (N,) reference ids.
        dominant_ids: (N, M) dominant ids padded with -1.
        margin: required logit gap.

    Returns:
        () the mean hinge over the batch's pairs; 0 (still in the graph) when there is none.
    """
    valid = (dominant_ids >= 0) & (dominant_ids != targets.unsqueeze(1))  # (N, M)
    ids = torch.cat([targets.unsqueeze(1), dominant_ids.clamp(min=0)], 1)  # (N, 1+M)
    logits = head(hidden, ids).float()  # (N, 1+M)
    hinge = F.relu(margin - (logits[:, :1] - logits[:, 1:])) * valid  # (N, M)
    return hinge.sum() / valid.sum().clamp(min=1)
