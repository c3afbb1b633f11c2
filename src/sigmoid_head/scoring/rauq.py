"""RAUQ: recurrent attention-based uncertainty from the attention weights of the scoring pass.

RAUQ (Vazhentsev et al. 2025, "Uncertainty-Aware Attention Heads: Efficient Unsupervised
Uncertainty Quantification for LLMs", arXiv:2505.20045) needs no sampling and no training:
the probabilities of the scored tokens and one number per (layer, head, token) from the
very forward pass that gives them.

* ``a[l, h, j]``: the attention weight that head ``h`` of layer ``l`` gives, at the query
  that predicts token ``y_j``, to the token just before ``y_j`` (the query's own position:
  the main diagonal of the causal attention matrix);
* per layer, one head: the one with the highest mean ``a`` over ``j = 1 .. T-1``;
* per layer, a confidence per token: ``c_0 = p(y_0)`` and
  ``c_j = alpha * p(y_j) + (1 - alpha) * a[l, h_l, j] * c_{j-1}``;
* the sequence takes the layer whose mean ``log c`` is lowest (the most uncertain of the
  middle third of the layers, by default).

The per-token score is ``c_j`` of that layer: a confidence in (0, 1] like a probability,
so the usual aggregations apply; its geometric mean is RAUQ's sequence confidence, and
LM-Polygraph 0.7.0's ``RAUQ`` uncertainty is ``1 - mean_j log c_j``. Defaults follow that
implementation (alpha 0.2, or 0.5 for instruction-tuned models; layers ``L // 3`` to
``ceil(2L / 3)``), except that the layer range is cut at the last layer: polygraph's rule
indexes past it for models of one or two layers.

Decoder-only models only: the method is defined on a causal LM's self-attention (the
paper and LM-Polygraph), and an encoder-decoder model raises a ValueError.

RAUQ is an ordinary registered method that reads ``attention``
(:mod:`sigmoid_head.registry.builtin_methods`): :func:`capture` is its capture and
:func:`rauq_values` its per-token values, which the scoring paths run through
:mod:`.captured` as they would any such method's. It is asked for with ``rauq=`` (a
:class:`RauqConfig`, ``True``, or the ``CorpusConfig`` settings
:class:`~sigmoid_head.registry.baseline_settings.RauqSettings`).

The attention weights exist only under eager attention: :func:`capture_self_attention`
switches the model to it for the pass and back afterwards, and keeps one diagonal per
selected layer, never a ``(B, H, S, S)`` matrix beyond its layer's own forward. During
generation each step's query is the last position; a cache that does not grow by one key
per step (static, sliding window) leaves that unknown, and the outputs are force-decoded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .captured import SequenceRows, on_positions

ATTENTION_NAMES = ("self_attn", "attn", "attention", "self_attention")
"""Child names of a decoder layer's self-attention module (Llama/Qwen/OLMo/OPT, GPT-2,
GPT-NeoX, Falcon)."""


@dataclass(frozen=True)
class RauqConfig:
    """RAUQ's settings; the defaults are LM-Polygraph 0.7.0's."""

    alpha: float | None = None
    """Weight of the token's own probability in the recurrence (None: 0.2, or 0.5 with
    ``instruct``, as LM-Polygraph chooses)."""
    instruct: bool = False
    """The model is instruction-tuned (only chooses the default ``alpha``)."""
    layers: tuple[int, ...] | None = None
    """Layers (0-based) whose heads are used; None = the middle third (:func:`default_layers`)."""

    def __post_init__(self) -> None:
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"RAUQ alpha must be in [0, 1], got {self.alpha}")
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(i) for i in self.layers))
            if not self.layers or min(self.layers) < 0:
                raise ValueError(f"RAUQ layers must be non-negative layer indices, got {self.layers}")

    @property
    def weight(self) -> float:
        """The alpha in use."""
        if self.alpha is not None:
            return float(self.alpha)
        return 0.5 if self.instruct else 0.2

    def layer_ids(self, n_layers: int) -> list[int]:
        """The layers used in a model of ``n_layers`` layers (checked against it)."""
        ids = list(self.layers) if self.layers is not None else default_layers(n_layers)
        if max(ids) >= n_layers:
            raise ValueError(f"RAUQ layer {max(ids)} does not exist: the model has {n_layers} layers")
        return ids


def as_config(asked: Any) -> RauqConfig:
    """The RauqConfig that ``asked`` stands for: a RauqConfig, ``True`` (the defaults), or
    ``CorpusConfig``'s settings (``rauq_alpha``, ``rauq_layers``)."""
    if isinstance(asked, RauqConfig):
        return asked
    if asked is True:
        return RauqConfig()
    if hasattr(asked, "rauq_alpha"):
        return RauqConfig(alpha=asked.rauq_alpha, layers=asked.rauq_layers)
    raise TypeError(f"RAUQ is asked for with a RauqConfig or True, not {type(asked).__name__}")


def default_layers(n_layers: int) -> list[int]:
    """``L // 3`` to ``ceil(2L / 3)`` inclusive (LM-Polygraph's middle third), cut at ``L - 1``."""
    return list(range(n_layers // 3, min((2 * n_layers + 2) // 3 + 1, n_layers)))


# ----------------------------------------------------------------------------- capture


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The self-attention module of every decoder layer of a causal LM, in layer order.

    Raises:
        ValueError: an encoder-decoder model, or no layer list of ``num_hidden_layers``
            layers with a self-attention child named as in :data:`ATTENTION_NAMES`.
    """
    cfg = model.config
    if getattr(cfg, "is_encoder_decoder", False):
        raise ValueError("RAUQ is defined for decoder-only (causal) LMs; this model is "
                         "encoder-decoder")
    n = getattr(getattr(cfg, "text_config", cfg), "num_hidden_layers", None)
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == n:
            found = [next((getattr(layer, k) for k in ATTENTION_NAMES if hasattr(layer, k)), None)
                     for layer in module]
            if all(isinstance(f, nn.Module) for f in found):
                return found
    raise ValueError(f"RAUQ cannot find the self-attention modules of {type(model).__name__}")


def _set_attention(model: nn.Module, name: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:  # older transformers read it at each call; the oldest not at all (the hook says so)
        model.config._attn_implementation = name


class AttentionDiagonals:
    """What :func:`capture_self_attention` records: per selected layer, one ``(B, H, Q)``
    tensor per forward call, the weight of each query on its own position."""

    def __init__(self, layers: Sequence[int]) -> None:
        self.layers = list(layers)
        self.calls: list[list[torch.Tensor]] = [[] for _ in self.layers]
        self.keys: list[int] = []  # keys attended to at each call (first selected layer)

    def hook(self, k: int):
        def record(_module: nn.Module, _args: tuple, output: object) -> None:
            w = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if not isinstance(w, torch.Tensor) or w.dim() != 4:
                raise RuntimeError("RAUQ needs attention weights: load the model with "
                                   "attn_implementation='eager' (this transformers version "
                                   "cannot switch it at run time)")
            q, s = w.shape[-2], w.shape[-1]
            diag = torch.diagonal(w, offset=s - q, dim1=-2, dim2=-1)  # (B, H, Q)
            self.calls[k].append(diag.to(torch.float32, copy=True))
            if k == 0:
                self.keys.append(s)
        return record

    def clear(self) -> None:
        """Forget what was recorded (before the next batch)."""
        for c in self.calls:
            c.clear()
        self.keys.clear()

    def at(self, row: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """(N, L, H) the weights at (row, query) of the single forward call recorded."""
        if any(len(c) != 1 for c in self.calls):
            raise RuntimeError("expected exactly one forward call")
        return torch.stack([c[0][row, :, query] for c in self.calls], 1)

    def per_step(self) -> torch.Tensor | None:
        """(B, S, L, H) the last query's weight at each of S recorded calls (generation steps),
        or None when the calls did not add one key each (a static or sliding-window cache,
        whose last key is not the query's own position: force-decode instead)."""
        if any(b - a != 1 for a, b in zip(self.keys, self.keys[1:], strict=False)):
            return None
        return torch.stack([torch.stack([d[..., -1] for d in c], 1) for c in self.calls], 2)


@contextlib.contextmanager
def capture_self_attention(model: nn.Module, config: RauqConfig) -> Iterator[AttentionDiagonals]:
    """Record the self-attention diagonals of RAUQ's layers on every forward of ``model``.

    The model runs with eager attention inside the block (the only implementation that
    returns attention weights) and gets its own implementation back afterwards.
    """
    modules = attention_modules(model)
    record = AttentionDiagonals(config.layer_ids(len(modules)))
    before = getattr(model.config, "_attn_implementation", None) or "eager"
    handles = [modules[i].register_forward_hook(record.hook(k)) for k, i in enumerate(record.layers)]
    try:
        if before != "eager":
            _set_attention(model, "eager")
        yield record
    finally:
        for h in handles:
            h.remove()
        if before != "eager":
            _set_attention(model, before)


def capture(model: nn.Module, asked: Any) -> contextlib.AbstractContextManager[AttentionDiagonals]:
    """RAUQ's capture as the registry declares it: :func:`capture_self_attention` with the
    config ``asked`` stands for (:func:`as_config`)."""
    return capture_self_attention(model, as_config(asked))


# ----------------------------------------------------------------------------- the recurrence


def rauq_log_confidence(log_p: torch.Tensor, attn: torch.Tensor, lengths: torch.Tensor,
                        alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """RAUQ's per-token log confidences of a padded batch of sequences (in float64).

    Args:
        log_p: (B, T) log-probability of each scored token.
        attn: (B, T, L, H) weight of the query predicting token j on the token before it.
        lengths: (B,) scored tokens per sequence (>= 1); positions past them are ignored.
        alpha: weight of the token's own probability.

    Returns:
        (B, T) ``log c_j`` at the chosen layer (meaningless past each length), and (B,) the
        chosen layer's index into the L given.
    """
    b, t = log_p.shape
    p = log_p.double().exp()  # (B, T)
    a = attn.double()
    steps = torch.arange(t, device=p.device)
    valid = steps < lengths[:, None]  # (B, T)
    later = (valid & (steps >= 1)).double()  # the tokens that have a predecessor
    mean_a = (a * later[:, :, None, None]).sum(1) / later.sum(1).clamp_min(1)[:, None, None]
    head = mean_a.argmax(-1)  # (B, L): the most attentive head per layer
    a = a.gather(3, head[:, None, :, None].expand(b, t, -1, 1)).squeeze(-1)  # (B, T, L)
    c = torch.empty_like(a)
    c[:, 0] = p[:, :1]
    for j in range(1, t):
        c[:, j] = alpha * p[:, j, None] + (1 - alpha) * a[:, j] * c[:, j - 1]
    log_c = c.log()
    mean_log = (log_c * valid[..., None]).sum(1) / lengths[:, None]  # (B, L)
    layer = mean_log.argmin(-1)  # (B,) the most uncertain layer
    return log_c.gather(2, layer[:, None, None].expand(b, t, 1)).squeeze(-1), layer


def rauq_values(rows: SequenceRows) -> torch.Tensor:
    """RAUQ's per-token values as the registry declares them: (B, T) ``log c`` of each
    sequence (:func:`rauq_log_confidence`) from its captured attention diagonals."""
    return rauq_log_confidence(rows.logp, rows.captured, rows.lengths,
                               as_config(rows.config).weight)[0]


def rauq_positions(log_p: torch.Tensor, attn: torch.Tensor, row: torch.Tensor, n_rows: int,
                   alpha: float) -> torch.Tensor:
    """:func:`rauq_log_confidence` on flat positions (N,), those of a row in sequence order.

    Args:
        log_p: (N,) token log-probabilities.
        attn: (N, L, H) attention weights (see :func:`rauq_log_confidence`).
        row: (N,) sequence of each position, non-decreasing within the batch order
            ``Backbone.positions`` gives.
        n_rows: number of sequences.
        alpha: weight of the token's own probability.

    Returns:
        (N,) float64 ``log c`` per position.
    """
    return on_positions(lambda r: rauq_log_confidence(r.logp, r.captured, r.lengths, alpha)[0],
                        log_p, attn, row, n_rows)
