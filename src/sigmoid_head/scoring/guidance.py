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
LM's output layer (:func:`sigmoid_head.backbone.on_head_input`), the same capture that
generation-time scoring uses, so no second forward pass is run; the head's logits over
the whole vocabulary cost one (R, d) x (d, V) product per step, as the LM head's own.

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

from ..backbone import Backbone, on_head_input
from ..head import SigmoidHead


class HeadGuidance:
    """Adds ``weight * log sigmoid(head logits)`` to the scores and masks rejected tokens.

    A transformers logits processor (called as ``processor(input_ids, scores)``; not a
    subclass, so that importing this module does not import transformers).

    Attributes:
        head: the Sigmoid Head.
        weight: w, the weight of the head's log-probabilities (0: no mixing).
        mask_below: p, tokens whose head probability is below it are never chosen (0: none).
        hidden: (R, d) the LM head's input at the last position of the latest forward call.
    """

    def __init__(self, head: SigmoidHead, weight: float, mask_below: float) -> None:
        self.head, self.weight, self.mask_below = head, weight, mask_below
        self.hidden: torch.Tensor | None = None

    def capture(self, h: torch.Tensor) -> None:
        """Forward pre-hook callback: keep the last position's LM-head input, (R, d)."""
        self.hidden = h[:, -1, :].detach()

    @torch.no_grad()
    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """(R, V) scores -> (R, V) guided scores."""
        if self.hidden is None or self.hidden.shape[0] != scores.shape[0]:
            raise RuntimeError("head guidance found no hidden state for this step (was the LM "
                               "head's forward hooked?)")
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


@contextlib.contextmanager
def head_guidance(backbone: Backbone, head: SigmoidHead | None, weight: float,
                  mask_below: float) -> Iterator[dict[str, Any]]:
    """Keyword arguments for ``generate`` that guide it with the head, hooked for its duration.

    Yields ``{}`` when guidance is off (``weight == 0`` and ``mask_below == 0``), so that
    decoding is then exactly the original model's; else ``{"logits_processor": [...]}``.

    Raises:
        ValueError: guidance asked for without a head.
    """
    if not weight and not mask_below:
        yield {}
        return
    if head is None:
        raise ValueError("head-guided decoding (head_weight / head_mask_below) needs a Sigmoid Head")
    from transformers import LogitsProcessorList

    guide = HeadGuidance(head, weight, mask_below)
    with on_head_input(backbone.model, guide.capture):
        yield {"logits_processor": LogitsProcessorList([guide])}
