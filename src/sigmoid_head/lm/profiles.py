"""Execution profiles: how work on a device is shaped, shared by the dominant-token
search (:mod:`sigmoid_head.lm.dominant`), the negative samplers (:mod:`sigmoid_head.training.negatives`)
and the token scores.

On CPU (``"cpu"``) work goes in cache-sized slices of rows and shapes may follow the data
(a host read costs nothing there). On an accelerator (``"cuda"``) every shape is fixed in
advance, so the kernel count and the host syncs do not grow with the number of
positions. Both profiles give the same results; :func:`device_profile` forces one, e.g. to
count the accelerator path's operators on a CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch

PROFILES = ("cpu", "cuda")
"""Execution profiles: data-dependent shapes in cache-sized slices, or fixed shapes."""
SLICE_ROWS = 16
"""Rows per slice on CPU: a (16, V) float32 slice stays in a core's cache across the
log-softmax and the screening passes."""
SLICE_BYTES = 2 << 30
"""Bytes of one (rows, V) float32 slice on an accelerator (capped at 1/16 of its memory)."""
LOGIT_ROWS = 256
"""Rows of LM logits made at once on CPU when only their dominant sets are kept (a
matmul-sized block; its statistics still go :data:`SLICE_ROWS` rows at a time)."""
LOGIT_BYTES = 128 << 20
"""Bytes of one (rows, V) float32 block of LM logits on an accelerator when only their
dominant sets are kept: the training step never holds the (positions, V) logits, so its
peak memory stays near the forward's (a block costs about 2.5 times this at its peak:
the output layer's result, its float32 copy and the log-softmax)."""

_FORCED: ContextVar[str | None] = ContextVar("sigmoid_head_profile", default=None)


@contextmanager
def device_profile(name: str) -> Iterator[None]:
    """Run the enclosed code with the given profile ("cpu" or "cuda") whatever the device."""
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {name!r}")
    token = _FORCED.set(name)
    try:
        yield
    finally:
        _FORCED.reset(token)


def step_profile(device: torch.device | str) -> str:
    """The profile of work on ``device``: "cpu" on a CPU, "cuda" on any accelerator."""
    forced = _FORCED.get()
    if forced is not None:
        return forced
    return "cpu" if torch.device(device).type == "cpu" else "cuda"


def fixed_shapes(device: torch.device | str) -> bool:
    """Whether work on ``device`` uses fixed shapes (no host reads of data-dependent sizes)."""
    return step_profile(device) == "cuda"


def slice_rows(vocab_size: int, device: torch.device | str) -> int:
    """Rows per (rows, V) slice of the softmax statistics on ``device``.

    16 on CPU (cache-sized); on an accelerator as many as :data:`SLICE_BYTES` of float32
    allow (at most 1/16 of the device's memory), so thousands of positions are one slice.
    """
    if step_profile(device) == "cpu":
        return SLICE_ROWS
    budget = SLICE_BYTES
    device = torch.device(device)
    if device.type == "cuda":
        budget = min(budget, torch.cuda.get_device_properties(device).total_memory // 16)
    return max(1, budget // (4 * vocab_size))


def logit_rows(vocab_size: int, device: torch.device | str) -> int:
    """Rows per block of LM logits made from hidden states when only their dominant sets
    are kept (:func:`sigmoid_head.lm.dominant.dominant_from_hidden`).

    :data:`LOGIT_ROWS` on CPU; on an accelerator as many as :data:`LOGIT_BYTES` of float32
    allow (a few blocks per micro-batch, each a fixed number of rows).
    """
    if step_profile(device) == "cpu":
        return LOGIT_ROWS
    return max(1, LOGIT_BYTES // (4 * vocab_size))
