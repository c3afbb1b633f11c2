"""Head-guided decoding: the Sigmoid Head's judgement mixed into the next-token scores.

At every generation step, with ``h`` (R, d) the LM head's input at the last position and
``s`` (R, V) the scores ``generate`` is about to choose from (the LM's logits after any
earlier processor), :class:`HeadGuidance` returns

    s'(v) = s(v) + w * log sigmoid(W_qe[v] . h + b[v])        (w = ``head_weight``)

and, with ``head_mask_below`` p, ``s'(v) = -inf`` wherever ``sigmoid(...) < p``, except the
step's most probable token under the head among those still allowed, so that a step
never runs out of tokens. It is a transformers logits processor: it runs before
temperature, top-k and top-p, and works with greedy decoding, sampling and beam search,
for causal and encoder-decoder models alike. ``h`` comes from a forward pre-hook on the
LM's output layer (:func:`sigmoid_head.lm.backbone.on_head_input`), the same capture that
generation-time scoring uses, so no second forward pass is run.

Greedy decoding needs only the argmax of ``s'``, and since ``log sigmoid <= 0`` no token
scores higher under ``s'`` than under ``s``. So a greedy step first scores just the
best 32 tokens under ``s``, then the best 512 (their head rows: (R, k) x d products instead of a
(R, d) x (d, V) one): when the best mixed score among them is strictly above the best
plain score outside them, no other token can win, and every other token gets ``-inf``.
Only where that bound fails (a large weight, or a mask that rejects every candidate) does
the step score the whole vocabulary, as sampling and beam search always do. The chosen
tokens are the same either way (a test holds the two paths to identical outputs).

Guidance only changes *which* tokens are chosen. The scores written for the output are
still the LM's own softmax (from the raw logits, before any processor) and the head's
own sigmoid of each chosen token.

The authors' research code decodes with the head alone (their LM head's weights swapped
for the head's, then log-sigmoid as the scores); a large ``head_weight`` approaches that.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from ..head.layer import SigmoidHead
from ..lm.backbone import Backbone, on_head_input

CANDIDATES = (32, 512)
"""How many of the best tokens a greedy step scores with the head, tried in turn, before it
falls back to the whole vocabulary."""

NOT_GREEDY = frozenset({"do_sample", "num_beams", "num_beam_groups", "penalty_alpha",
                        "assistant_model", "prompt_lookup_num_tokens", "output_scores",
                        "dola_layers", "guidance_scale", "top_k", "top_p", "temperature"})
"""``generate`` arguments that may make a step choose other than the argmax of the scores."""


class HeadGuidance:
    """Adds ``weight * log sigmoid(head logits)`` to the scores and masks rejected tokens.

    A transformers logits processor (called as ``processor(input_ids, scores)``; not a
    subclass, so that importing this module does not import transformers).

    Attributes:
        head: the Sigmoid Head.
        weight: w, the weight of the head's log-probabilities (0: no mixing).
        mask_below: p, tokens whose head probability is below it are never chosen (0: none).
        argmax_only: the decoding takes the argmax of the returned scores and nothing else
            (greedy): only the tokens that can win are scored, the rest get ``-inf``.
        hidden: (R, d) the LM head's input at the last position of the latest forward call.
        steps: how many steps it has guided; full_steps: how many of them scored the whole
            vocabulary (for benchmarks and tests).
    """

    def __init__(self, head: SigmoidHead, weight: float, mask_below: float,
                 argmax_only: bool = False) -> None:
        self.head, self.weight, self.mask_below = head, weight, mask_below
        self.argmax_only = argmax_only
        self.hidden: torch.Tensor | None = None
        self.steps = self.full_steps = 0

    def capture(self, h: torch.Tensor) -> None:
        """Forward pre-hook callback: keep the last position's LM-head input, (R, d)."""
        self.hidden = h[:, -1, :].detach()

    @torch.no_grad()
    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """(R, V) scores -> (R, V) guided scores."""
        if self.hidden is None or self.hidden.shape[0] != scores.shape[0]:
            raise RuntimeError("head guidance found no hidden state for this step (was the LM "
                               "head's forward hooked?)")
        self.steps += 1
        if self.argmax_only and scores.dtype == torch.float32:
            for k in CANDIDATES:
                if k >= scores.shape[-1]:
                    break
                out = self._candidates_only(scores, k)
                if out is not None:
                    return out
        self.full_steps += 1
        log_p = F.logsigmoid(self.head.full_logits(self.hidden).float())  # (R, V_head)
        if log_p.shape != scores.shape:
            raise RuntimeError(f"head logits {tuple(log_p.shape)} do not match the scores "
                               f"{tuple(scores.shape)}")
        log_p = log_p.to(scores.dtype)
        out = scores + self.weight * log_p if self.weight else scores.clone()
        if self.mask_below > 0:
            allowed = scores > float("-inf")
            reject = (log_p < math.log(self.mask_below)) & allowed  # (R, V)
            best = log_p.masked_fill(~allowed, float("-inf")).argmax(-1, keepdim=True)  # (R, 1)
            reject.scatter_(1, best, False)  # always keep one token per step
            out = out.masked_fill(reject, float("-inf"))
        return out

    def _candidates_only(self, scores: torch.Tensor, k: int) -> torch.Tensor | None:
        """(R, V) scores whose argmax is the full mix's, from the ``k`` best tokens under
        ``scores`` alone; None where a token outside them could still win."""
        top, ids = scores.topk(k + 1, dim=-1)  # (R, k+1)
        outside = top[:, k]  # (R,) the best plain score of any token not scored here
        top, ids = top[:, :k], ids[:, :k]
        log_p = F.logsigmoid(self.head.logits(self.hidden, ids).float())  # (R, k)
        mixed = top + self.weight * log_p if self.weight else top.clone()
        if self.mask_below > 0:  # while one candidate stays allowed, the full mask's
            # "keep the head's best token" exception cannot touch the argmax
            mixed = mixed.masked_fill(log_p < math.log(self.mask_below), float("-inf"))
        if not bool((mixed.max(-1).values > outside).all()):
            return None
        return torch.full_like(scores, float("-inf")).scatter_(1, ids, mixed)


def argmax_only(cfg_do_sample: bool, num_beams: int, extra: dict[str, Any],
                generation_config: Any = None) -> bool:
    """Whether ``generate`` with these settings chooses each token as the argmax of the
    processed scores (greedy search), so that :class:`HeadGuidance` may score candidates only."""
    if cfg_do_sample or num_beams != 1 or NOT_GREEDY & set(extra):
        return False
    return getattr(generation_config, "penalty_alpha", None) is None


@contextlib.contextmanager
def head_guidance(backbone: Backbone, head: SigmoidHead | None, weight: float,
                  mask_below: float, greedy: bool = False) -> Iterator[dict[str, Any]]:
    """Keyword arguments for ``generate`` that guide it with the head, hooked for its duration.

    Yields ``{}`` when guidance is off (``weight == 0`` and ``mask_below == 0``), so that
    decoding is then exactly the original model's; else ``{"logits_processor": [...]}``.
    ``greedy``: the decoding is greedy search (see :func:`argmax_only`), so that a step may
    score only the tokens that can win.

    Raises:
        ValueError: guidance asked for without a head.
    """
    if not weight and not mask_below:
        yield {}
        return
    if head is None:
        raise ValueError("head-guided decoding (head_weight / head_mask_below) needs a Sigmoid Head")
    from transformers import LogitsProcessorList

    guide = HeadGuidance(head, weight, mask_below, argmax_only=greedy)
    with on_head_input(backbone.model, guide.capture):
        yield {"logits_processor": LogitsProcessorList([guide])}
