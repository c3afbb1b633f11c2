"""The LM softmax's per-position statistics of scoring, with one exponential per logit.

Scoring needs, at each position, the log-probability of the scored token, its entropy,
and BoostedProb's dominant set (ids, size, mass). Computed the plain way
(``log_softmax``, then ``exp`` of it for the entropy, then a screening pass over the
log-probabilities) every logit is exponentiated twice and two (R, V) tensors are written.
:func:`softmax_stats` exponentiates once:

* ``p = softmax(z)``: one fused pass (row maximum, sum of exponentials, normalisation);
* the dominant sets screen ``p`` itself (:func:`~sigmoid_head.lm.dominant.find_dominant`
  with ``probs=True``: no exponential at all, only the kept values are ranked);
* the normaliser comes from the top probability: ``p_max = 1 / sum(exp(z - z_max))``, so
  ``logsumexp(z) = z_max - log(p_max)`` (``z_max`` gathered at the top id), and every
  gathered log-probability is ``z[t] - logsumexp(z)``;
* the entropy is ``sum_v p(v) (logsumexp(z) - z(v))``: one sum and one dot product over
  ``p`` and ``z``, no logarithm over the vocabulary.

The values equal the plain way's within float32 rounding (``tests/test_scoring_softmax_stats.py``
checks ties, ``-inf`` logits and bfloat16 inputs against it); the dominant sets are the
same sets. Rows holding ``-inf`` logits (``0 * -inf`` in the dot) get the entropy's
explicit ``p log p = 0 where p = 0`` rule, as :func:`.token_scores.entropy` does: on CPU
those rows are found and redone (a host read, free there); with fixed shapes (an
accelerator) the logits are first raised to ``z_max - 200`` wherever they are lower, where
``p`` is exactly 0 in float32 anyway, so no term with ``p > 0`` changes and the pass never
waits for the device (one more pass over (R, V) instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..lm.dominant import DominantConfig, DominantSets, find_dominant
from ..lm.profiles import fixed_shapes


@dataclass
class SoftmaxStats:
    """The softmax statistics of R positions (each (R,) unless said otherwise).

    Attributes:
        log_norm: ``logsumexp(z)`` of each row: ``log p(v) = z(v) - log_norm``.
        target_logp: log-probability of each position's scored token.
        entropy: softmax entropy in nats.
        dominant: the dominant sets (prefix form, (R, K)).
    """

    log_norm: torch.Tensor
    target_logp: torch.Tensor
    entropy: torch.Tensor
    dominant: DominantSets

    def boosted_prob(self, targets: torch.Tensor) -> torch.Tensor:
        """(R,) BoostedProb: the dominant set's mass for a dominant target, else its probability."""
        return torch.where(self.dominant.contains(targets), self.dominant.mass(),
                           self.target_logp.exp())


def softmax_stats(logits: torch.Tensor, targets: torch.Tensor, config: DominantConfig | None = None,
                  *, fixed_shape: bool | None = None) -> SoftmaxStats:
    """Target log-probabilities, entropy and dominant sets of R rows of logits.

    Args:
        logits: (R, V) LM logits, any float dtype (computed in float32); never modified.
        targets: (R,) the scored token of each row.
        config: the dominant-token rule (default: the paper's).
        fixed_shape: dominant sets with fixed shapes (default: from the device's profile).

    Returns:
        The rows' :class:`SoftmaxStats`.
    """
    if fixed_shape is None:
        fixed_shape = fixed_shapes(logits.device)
    z = logits.float()  # (R, V)
    p = torch.softmax(z, dim=-1)  # (R, V): the one exponential per logit
    dom = find_dominant(p, config, probs=True, fixed_shape=fixed_shape)
    top_p, top_id = dom.top_probs[:, :1], dom.top_ids[:, :1]  # (R, 1): the row's maximum
    z_max = z.gather(-1, top_id)  # (R, 1)
    log_norm = (z_max - top_p.log()).squeeze(-1)  # (R,)
    target_logp = z.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm
    if fixed_shape:  # no host read: logits where p is 0 anyway raised to a finite floor
        ent = _entropy(p, torch.clamp(z, min=z_max - FLOOR), log_norm, check=False)
    else:
        ent = _entropy(p, z, log_norm)
    return SoftmaxStats(log_norm, target_logp, ent, dom)


FLOOR = 200.0
"""Logits more than this below their row's maximum have ``p = exp(-200) = 0`` in float32."""


def _entropy(p: torch.Tensor, z: torch.Tensor, log_norm: torch.Tensor,
             check: bool = True) -> torch.Tensor:
    """(R,) ``sum_v p(v) (log_norm - z(v))`` from probabilities p and logits z (R, V);
    ``check``: redo rows whose dot is NaN (a ``-inf`` logit) with the explicit rule."""
    ent = log_norm * p.sum(-1) - torch.linalg.vecdot(p, z)  # (R,)
    if not check:
        return ent
    bad = ent.isnan()  # a -inf logit: 0 * -inf in the dot
    if bool(bad.any()):
        pb, zb = p[bad], z[bad]
        terms = torch.where(pb > 0, pb * (log_norm[bad].unsqueeze(-1) - zb), torch.zeros_like(pb))
        ent[bad] = terms.sum(-1)
    return ent
