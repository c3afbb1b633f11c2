"""Dominant tokens and BoostedProb (Dinh & Niehues, 2025), vectorised over positions.

A position's *dominant set* is found on its softmax distribution sorted in descending
order: index ``i`` is a *significant drop* when ``p(i) - p(i+1) > p_jump * p(i)`` and
``p(i) - p(i+1) > epsilon``. The dominant set is every token up to and including the
cut, where the cut is the last significant drop (``cut="last"``, what the paper's code
did) or the first one (``cut="first"``). A position without any significant drop has
an empty dominant set.

Because a drop larger than ``epsilon`` needs ``p(i) > epsilon``, and at most
``floor(1 / epsilon)`` tokens can have that much mass, only the top
``floor(1 / epsilon) + 1`` probabilities are ever looked at (201 for the default
``epsilon = 0.005``), instead of a full sort or the reference package's top-1024.
Going further, only tokens above ``epsilon`` and the first one below can matter, and
they are found by screening blocks of the vocabulary by their maximum: the top-k then
runs over a few gathered blocks, and only the kept values are exponentiated.
The dominant set is always a prefix of that sorted list, so it is returned compactly
as ``(top_ids, n_dominant)``: the set at position ``n`` is ``top_ids[n, :n_dominant[n]]``.

Two execution profiles give the same sets. On CPU (``"cpu"``) the work goes a
cache-sized slice of 16 rows at a time and the top-k is sized from the data (a host
read per slice costs nothing there). On an accelerator (``"cuda"``) every shape is
fixed in advance, so the kernel count and the host syncs do not grow with the number
of positions: slices are sized from a memory budget (a micro-batch is one or a few
slices) and the screening keeps the top ``K = config.topk(V)`` blocks and entries,
which is exact (see :func:`_fixed_topk`). The profiles live in :mod:`sigmoid_head.lm.profiles`;
:func:`~sigmoid_head.lm.profiles.device_profile` forces one, e.g. to count the accelerator
path's operators on a CPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .profiles import fixed_shapes, logit_rows, slice_rows

CUT_MODES = ("last", "first")
REFERENCE_TOPK = 1024  # the published code never looks past the top-1024 tokens
@dataclass(frozen=True)
class DominantConfig:
    """Settings of the "difference_jump" rule."""

    p_jump: float = 0.3
    """Relative drop: ``p(i) - p(i+1)`` must exceed ``p_jump * p(i)``."""
    epsilon: float = 0.005
    """Absolute drop: ``p(i) - p(i+1)`` must exceed ``epsilon``."""
    cut: str = "last"
    """Which significant drop ends the set: "last" (the paper's code) or "first"."""

    def __post_init__(self) -> None:
        if self.cut not in CUT_MODES:
            raise ValueError(f"cut must be one of {CUT_MODES}, got {self.cut!r}")
        if not 0.0 <= self.p_jump <= 1.0:
            raise ValueError(f"p_jump must be in [0, 1], got {self.p_jump}")
        if not 0.0 <= self.epsilon < 1.0:
            raise ValueError(f"epsilon must be in [0, 1), got {self.epsilon}")

    def topk(self, vocab_size: int) -> int:
        """How many sorted probabilities can matter for a vocabulary of this size."""
        k = min(vocab_size, REFERENCE_TOPK)
        if self.epsilon > 0:
            k = min(k, math.floor(1.0 / self.epsilon) + 1)
        return k


@dataclass
class DominantSets:
    """Dominant sets of N positions, in compact prefix form.

    Attributes:
        top_ids: (N, K) token ids sorted by descending probability.
        top_probs: (N, K) their probabilities.
        n_dominant: (N,) size of each dominant set; the set is ``top_ids[n, :n_dominant[n]]``.
        fixed_shape: K is the fixed cap ``config.topk(V)`` (no host read sized anything).
        epsilon: the rule's absolute drop (for :meth:`capped`).
    """

    top_ids: torch.Tensor
    top_probs: torch.Tensor
    n_dominant: torch.Tensor
    fixed_shape: bool = False
    epsilon: float = 0.0

    def mask(self) -> torch.Tensor:
        """(N, K) bool: which of the top-K ids are dominant."""
        k = self.top_ids.shape[-1]
        ar = torch.arange(k, device=self.top_ids.device)
        return ar.unsqueeze(0) < self.n_dominant.unsqueeze(-1)

    def padded_ids(self, fill: int = -1) -> torch.Tensor:
        """(N, M) dominant ids padded with ``fill``.

        M is the largest set size (at least 1), read from the device, or K with fixed
        shapes (no host read).
        """
        if self.fixed_shape:
            m = self.top_ids.shape[-1]
        else:
            m = max(int(self.n_dominant.max().item()) if self.n_dominant.numel() else 0, 1)
        ids = self.top_ids[:, :m]
        keep = self.mask()[:, :m]
        return torch.where(keep, ids, torch.full_like(ids, fill))

    def mass(self) -> torch.Tensor:
        """(N,) total probability of each dominant set (0 for an empty set)."""
        return (self.top_probs * self.mask()).sum(-1)

    def contains(self, token_ids: torch.Tensor) -> torch.Tensor:
        """(N,) bool: whether ``token_ids[n]`` is in the dominant set of position n."""
        hit = (self.top_ids == token_ids.unsqueeze(-1)) & self.mask()
        return hit.any(-1)

    def capped(self) -> torch.Tensor:
        """(N,) bool: rows whose last kept probability still exceeds epsilon.

        There a wider top-k could find a later drop, so the set may be cut short. That
        cannot happen for a normalised distribution (at most ``floor(1 / epsilon)``
        tokens exceed epsilon, K is one more), only for inputs that are not one.
        """
        if self.epsilon <= 0 or self.top_probs.shape[-1] == 0:
            return torch.zeros(self.top_probs.shape[0], dtype=torch.bool,
                               device=self.top_probs.device)
        return self.top_probs[:, -1] > self.epsilon


BLOCK = 64
"""Width of the vocabulary blocks that screen out tokens which cannot matter."""


def _screened_topk(x: torch.Tensor, k: int, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The top ``k'`` entries per row, ``k' <= k`` just large enough to hold every entry
    above ``threshold`` plus the next one, without a full-width top-k.

    Rows are cut into blocks of :data:`BLOCK`; only the blocks whose maximum exceeds the
    threshold, plus the best block below it, can hold those entries, so the top-k runs
    over a few gathered blocks instead of the whole vocabulary. Exact: the returned
    prefix equals ``torch.topk(x, k')`` up to the order of tied values.

    Args:
        x: (N, V) log-probabilities (or probabilities).
        k: the most entries ever needed.
        threshold: entries at or below it matter only as the first one below.

    Returns:
        values (N, k'), ids (N, k'), sorted descending.
    """
    n, v = x.shape
    nb = -(-v // BLOCK)
    if v % BLOCK:  # pad the tail block with -inf
        x_pad = torch.full((n, nb * BLOCK), -math.inf, dtype=x.dtype, device=x.device)
        x_pad[:, :v] = x
    else:
        x_pad = x
    block_max = x_pad.view(n, nb, BLOCK).amax(-1)  # (N, nb)
    kb = min(nb, int((block_max > threshold).sum(-1).max()) + 1)
    blocks = torch.topk(block_max, kb, dim=-1).indices  # (N, kb) the blocks that can matter
    cols = (blocks.unsqueeze(-1) * BLOCK + torch.arange(BLOCK, device=x.device)).flatten(1)
    vals = x_pad.gather(1, cols)  # (N, kb * BLOCK)
    above = int((vals > threshold).sum(-1).max())
    k = min(k, above + 1, vals.shape[1])
    top_vals, where = torch.topk(vals, k, dim=-1)  # (N, k')
    return top_vals, cols.gather(1, where)


def _fixed_topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(x, k)`` per row with fixed shapes, screening blocks by their maximum.

    Exact: an entry among a row's top k lies in one of the k blocks with the largest
    maxima (otherwise k blocks each hold a larger entry), so the top k of those blocks'
    entries are the row's top k (up to the order of tied values).

    Args:
        x: (N, V) values.
        k: entries kept, at most V.

    Returns:
        values (N, k), ids (N, k), sorted descending.
    """
    n, v = x.shape
    nb = -(-v // BLOCK)
    if nb <= k:  # screening cannot narrow the row
        return torch.topk(x, k, dim=-1)
    x_pad = torch.nn.functional.pad(x, (0, nb * BLOCK - v), value=-math.inf) if v % BLOCK else x
    block_max = x_pad.view(n, nb, BLOCK).amax(-1)  # (N, nb)
    blocks = torch.topk(block_max, k, dim=-1).indices  # (N, k)
    cols = (blocks.unsqueeze(-1) * BLOCK + torch.arange(BLOCK, device=x.device)).flatten(1)
    top_vals, where = torch.topk(x_pad.gather(1, cols), k, dim=-1)  # (N, k)
    return top_vals, cols.gather(1, where)


def find_dominant(
    log_probs: torch.Tensor, config: DominantConfig | None = None, *, probs: bool = False,
    fixed_shape: bool | None = None,
) -> DominantSets:
    """Find the dominant set of every position at once (no per-position loop).

    A significant drop at sorted index ``i`` needs ``p(i) > epsilon``, so only the
    tokens above epsilon and the next one are ranked (see :func:`_screened_topk`); the
    full ``(N, V)`` matrix is never exponentiated, only the K kept values are.

    Args:
        log_probs: (..., V) log-softmax of the LM logits (or probabilities when
            ``probs=True``). Never modified.
        config: the rule's settings; defaults to the paper's.
        probs: the input already holds probabilities.
        fixed_shape: K = ``config.topk(V)`` exactly, with no host read (default: from
            the device's profile, see :func:`sigmoid_head.lm.profiles.step_profile`).

    Returns:
        DominantSets with tensors of shape (N, K), N = prod(leading dims), K at most
        ``config.topk(V)`` (fewer when fewer tokens can matter, unless ``fixed_shape``).
    """
    config = config or DominantConfig()
    vocab = log_probs.shape[-1]
    flat = log_probs.reshape(-1, vocab)
    k = config.topk(vocab)
    if fixed_shape is None:
        fixed_shape = fixed_shapes(flat.device)
    if fixed_shape:
        top, top_ids = _fixed_topk(flat, k)  # (N, K)
    elif config.epsilon > 0 and flat.shape[0] > 0 and vocab > BLOCK:
        # a margin below log(epsilon) keeps every token whose exp may round above epsilon
        thr = config.epsilon * (1 - 1e-6) if probs else math.log(config.epsilon) - 1e-4
        top, top_ids = _screened_topk(flat, k, thr)
    else:
        top, top_ids = torch.topk(flat, k=k, dim=-1, largest=True, sorted=True)  # (N, K)
    top_probs = top if probs else top.exp()  # (N, K), exp of the kept values only
    diff = top_probs[:, :-1] - top_probs[:, 1:]  # (N, K-1)
    drop = (diff > config.p_jump * top_probs[:, :-1]) & (diff > config.epsilon)
    n = drop.shape[-1]
    if n == 0:  # a single kept token has no drop
        n_dom = torch.zeros(flat.shape[0], dtype=torch.long, device=flat.device)
        return DominantSets(top_ids, top_probs, n_dom, fixed_shape, config.epsilon)
    ar = torch.arange(n, device=flat.device)
    if config.cut == "last":
        cut = torch.where(drop, ar, -1).amax(-1)  # (N,)
    else:
        cut = torch.where(drop, ar, n).amin(-1)
        cut = torch.where(cut == n, -1, cut)
    return DominantSets(top_ids, top_probs, cut + 1, fixed_shape, config.epsilon)


def boosted_prob(
    log_probs: torch.Tensor,
    targets: torch.Tensor,
    config: DominantConfig | None = None,
    dominant: DominantSets | None = None,
) -> torch.Tensor:
    """BoostedProb token scores.

    A target that is in its position's dominant set scores the set's total mass;
    any other target scores its own probability.

    Args:
        log_probs: (..., V) log-softmax.
        targets: (...) token ids.
        config: dominant-token rule.
        dominant: already computed dominant sets of these positions (saves a top-k).

    Returns:
        (...) scores in [0, 1].
    """
    vocab = log_probs.shape[-1]
    flat_t = targets.reshape(-1)
    dom = dominant if dominant is not None else find_dominant(log_probs, config)
    own = log_probs.reshape(-1, vocab).gather(-1, flat_t.unsqueeze(-1)).squeeze(-1).exp()
    out = torch.where(dom.contains(flat_t), dom.mass(), own)
    return out.reshape(targets.shape)


def log_softmax_and_dominant(
    logits: torch.Tensor, config: DominantConfig | None = None, *, with_dominant: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-softmax the logits in place and find the dominant sets, a slice at a time.

    Slices are :func:`~sigmoid_head.lm.profiles.slice_rows` long: cache-sized on CPU, memory-budget-sized on an
    accelerator (with fixed shapes there: no host read, one or a few slices in all).

    Args:
        logits: (N, V) float LM logits; overwritten with their log-softmax.
        config: dominant-token rule.
        with_dominant: also find the dominant sets.

    Returns:
        ``logits`` (now log-probabilities, (N, V)) and the dominant ids (N, M) padded
        with -1 (M >= 1; M = ``config.topk(V)`` with fixed shapes), or None without
        ``with_dominant``.
    """
    rows = slice_rows(logits.shape[-1], logits.device)
    fixed = fixed_shapes(logits.device)
    pieces = []
    for r in range(0, logits.shape[0], rows):
        part = logits[r : r + rows]  # (S, V) view
        part.copy_(torch.log_softmax(part, -1))
        if with_dominant:
            pieces.append(find_dominant(part, config, fixed_shape=fixed).padded_ids())  # (S, M_s)
    if not with_dominant:
        return logits, None
    if not pieces:
        width = (config or DominantConfig()).topk(logits.shape[-1]) if fixed else 1
        return logits, torch.full((0, width), -1, dtype=torch.long, device=logits.device)
    return logits, _joined(pieces)


def _joined(pieces: list[torch.Tensor]) -> torch.Tensor:
    """Padded dominant ids of consecutive slices, (S_i, M_i) each, as one (N, max M_i)."""
    if len(pieces) == 1:
        return pieces[0]
    width = max(p.shape[1] for p in pieces)
    return torch.cat([torch.nn.functional.pad(p, (0, width - p.shape[1]), value=-1) for p in pieces])


def dominant_from_hidden(
    logits_of: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, vocab_size: int,
    config: DominantConfig | None = None,
) -> torch.Tensor:
    """Dominant ids of N positions from their hidden states, the LM logits made a block at a
    time and dropped with it, so no (N, V) float32 tensor is ever held.

    The same ids as ``log_softmax_and_dominant(logits_of(hidden), config)[1]`` (each row's
    set depends on that row only); blocks are :func:`~sigmoid_head.lm.profiles.logit_rows`
    long (:data:`~sigmoid_head.lm.profiles.LOGIT_BYTES` of float32 on an accelerator).

    Args:
        logits_of: (n, d) hidden states -> (n, V) float32 LM logits (e.g.
            :meth:`sigmoid_head.lm.backbone.Backbone.lm_logits`).
        hidden: (N, d) hidden states.
        vocab_size: V.
        config: dominant-token rule.

    Returns:
        (N, M) dominant ids padded with -1, as :func:`log_softmax_and_dominant` gives them.
    """
    rows = logit_rows(vocab_size, hidden.device)
    fixed = fixed_shapes(hidden.device)

    def sets(h: torch.Tensor) -> torch.Tensor:
        z = logits_of(h)  # (n, V)
        if fixed:  # a block is one slice there: no copy of the log-softmax back into z
            return find_dominant(torch.log_softmax(z, -1), config, fixed_shape=True).padded_ids()
        return log_softmax_and_dominant(z, config)[1]

    n = hidden.shape[0]
    if n <= rows:
        return sets(hidden)
    return _joined([sets(hidden[r : r + rows]) for r in range(0, n, rows)])
