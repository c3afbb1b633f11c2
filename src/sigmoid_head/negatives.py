"""Negative samplers, registered by name.

Every sampler returns, for each of N positions, k *distinct* token ids that are never
the position's reference token nor (with avoid-dominant) one of its dominant tokens.
Sampling is without replacement from the sampler's distribution restricted to the
allowed ids, implemented as draw-and-reject: candidates are drawn with replacement,
excluded ids and repeats are dropped, and the first k survivors are kept, which is
exactly sequential sampling without replacement.

Fixed distributions ("random", "token_freq") draw from one shared (V,) distribution by
inverse-CDF lookup, so no [positions x vocab] tensor is ever built for them. The
"softmax" sampler uses each position's own LM distribution at a temperature (the
logits the forward pass already made), processed in row chunks to bound memory, with a
two-level (block, then token) inverse-CDF draw instead of a cumsum over the vocabulary.

A mixture such as ``"token_freq+softmax"`` draws ``k // parts`` from each part (the
first parts take the remainder); later parts also exclude what earlier parts drew.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

DrawFn = Callable[[torch.Tensor, int], torch.Tensor]  # (rows (R,), m) -> (R, m) candidate ids


@dataclass
class SamplerConfig:
    """How negatives are drawn."""

    strategy: str = "token_freq"
    """Sampler name, or several joined with "+" (e.g. "token_freq+softmax")."""
    num_negatives: int = 10
    """k, negatives per position."""
    avoid_dominant: bool = True
    """Exclude the position's dominant tokens (the paper's ambiguity-informed sampling)."""
    softmax_temperature: float = 2.0
    """Temperature of the "softmax" sampler: q is proportional to p ** (1 / t)."""
    freq_power: float = 1.0
    """The "token_freq" sampler draws proportionally to count ** power."""
    freq_smoothing: float = 0.0
    """Added to every token's count before the power (0 = the paper: unseen tokens are never drawn)."""

    def __post_init__(self) -> None:
        for name in self.parts():
            if name not in SAMPLERS:
                raise ValueError(f"unknown negative sampler {name!r}; known: {sorted(SAMPLERS)}")
        if self.num_negatives < len(self.parts()):
            raise ValueError("num_negatives must be at least the number of mixed samplers")
        if self.softmax_temperature <= 0:
            raise ValueError("softmax_temperature must be > 0")
        if self.freq_smoothing < 0 or self.freq_power < 0:
            raise ValueError("freq_power and freq_smoothing must be >= 0")

    def parts(self) -> list[str]:
        """The sampler names of the (possibly mixed) strategy."""
        return [p.strip() for p in self.strategy.split("+") if p.strip()]

    @property
    def needs_counts(self) -> bool:
        return "token_freq" in self.parts()

    @property
    def needs_logits(self) -> bool:
        return "softmax" in self.parts()


def count_target_tokens(label_lists: list[list[int]], vocab_size: int) -> torch.Tensor:
    """Unigram counts of trained target tokens.

    Args:
        label_lists: per example, its labels (-100 = not trained, skipped).
        vocab_size: V.

    Returns:
        (V,) float64 counts.
    """
    flat = torch.tensor([t for labels in label_lists for t in labels if t >= 0], dtype=torch.long)
    if flat.numel() and int(flat.max()) >= vocab_size:
        raise ValueError(f"label id {int(flat.max())} is outside the vocabulary ({vocab_size})")
    return torch.bincount(flat, minlength=vocab_size).to(torch.float64)


def _first_k_valid(seq: torch.Tensor, excluded: torch.Tensor, k: int) -> torch.Tensor:
    """Keep, per row, the first k ids of ``seq`` that are >= 0, not excluded, not repeated.

    Args:
        seq: (R, L) candidate ids in draw order (-1 = empty).
        excluded: (R, E) ids to avoid (-1 = padding).
        k: how many to keep.

    Returns:
        (R, k) ids, -1 where fewer than k survived.
    """
    valid = seq >= 0
    valid &= ~(seq.unsqueeze(-1) == excluded.unsqueeze(1)).any(-1)  # (R, L)
    sorted_ids, order = torch.sort(seq, dim=1, stable=True)  # earlier draw first among equals
    repeat = torch.zeros_like(valid)
    repeat[:, 1:] = sorted_ids[:, 1:] == sorted_ids[:, :-1]
    valid &= ~torch.zeros_like(valid).scatter(1, order, repeat)
    keep = torch.sort((~valid).to(torch.int8), dim=1, stable=True).indices[:, :k]  # (R, k)
    out = seq.gather(1, keep)
    n_valid = valid.sum(1, keepdim=True)
    return torch.where(torch.arange(k, device=seq.device) < n_valid, out, -1)


def draw_distinct(
    draw: DrawFn, excluded: torch.Tensor, k: int, vocab_size: int, gen: torch.Generator,
    max_rounds: int = 8,
) -> torch.Tensor:
    """Draw k distinct allowed ids per row with ``draw``, then fill any shortfall.

    Rows still short after ``max_rounds`` (a distribution whose support is almost all
    excluded) are filled uniformly from the allowed ids, and as a last resort with the
    smallest allowed ids, so every row gets k ids whenever the vocabulary allows.

    Args:
        draw: candidate generator (rows (R,), m) -> (R, m) ids.
        excluded: (N, E) ids never to return (-1 = padding).
        k: negatives per row.
        vocab_size: V.
        gen: random generator (all randomness comes from it).
        max_rounds: draw rounds before the uniform fallback.

    Returns:
        (N, k) long ids; -1 only where fewer than k ids are allowed at all.
    """
    n, device = excluded.shape[0], excluded.device
    out = torch.full((n, k), -1, dtype=torch.long, device=device)
    uniform: DrawFn = lambda rows, m: torch.randint(  # noqa: E731
        vocab_size, (rows.numel(), m), generator=gen, device=device
    )
    for round_ in range(max_rounds + 4):
        rows = (out[:, -1] < 0).nonzero().squeeze(1)
        if rows.numel() == 0:
            return out
        fn = draw if round_ < max_rounds else uniform
        cand = fn(rows, 2 * k + 8)
        out[rows] = _first_k_valid(torch.cat([out[rows], cand], 1), excluded[rows], k)
    rows = (out[:, -1] < 0).nonzero().squeeze(1)
    if rows.numel():  # tiny vocabularies: take the allowed ids in order
        ar = torch.arange(vocab_size, device=device).expand(rows.numel(), -1)
        out[rows] = _first_k_valid(torch.cat([out[rows], ar], 1), excluded[rows], k)
    return out


def _cdf_draw(cdf: torch.Tensor, gen: torch.Generator) -> DrawFn:
    """Inverse-CDF draws from one shared distribution. cdf: (V,) float64, increasing."""

    def draw(rows: torch.Tensor, m: int) -> torch.Tensor:
        u = torch.rand(rows.numel(), m, generator=gen, dtype=torch.float64, device=cdf.device)
        ids = torch.searchsorted(cdf, u * cdf[-1], right=True)
        return ids.clamp_(max=cdf.numel() - 1)

    return draw


class NegativeSampler:
    """Draws negatives for a batch of positions according to a SamplerConfig."""

    def __init__(
        self, config: SamplerConfig, vocab_size: int, token_counts: torch.Tensor | None = None,
        chunk_rows: int = 32,
    ) -> None:
        """
        Args:
            config: sampling settings.
            vocab_size: V.
            token_counts: (V,) target-token counts, required by "token_freq".
            chunk_rows: rows of the softmax sampler's (rows, V) buffers at a time.
        """
        self.config, self.vocab_size, self.chunk_rows = config, vocab_size, chunk_rows
        self.freq_cdf: torch.Tensor | None = None
        if config.needs_counts:
            if token_counts is None:
                raise ValueError("the token_freq sampler needs token counts of the training data")
            if token_counts.numel() != vocab_size:
                raise ValueError(f"token_counts has {token_counts.numel()} entries, vocab is {vocab_size}")
            w = (token_counts.double() + config.freq_smoothing).pow(config.freq_power)
            w = torch.where(token_counts.double() + config.freq_smoothing > 0, w, 0.0)
            if w.sum() <= 0:
                raise ValueError("token counts are all zero: no training targets were counted")
            self.freq_cdf = torch.cumsum(w, 0)

    def split(self) -> list[tuple[str, int]]:
        """(sampler name, how many negatives it draws) per part of the mixture."""
        parts, k = self.config.parts(), self.config.num_negatives
        base, extra = divmod(k, len(parts))
        return [(p, base + (1 if i < extra else 0)) for i, p in enumerate(parts)]

    def __call__(
        self, targets: torch.Tensor, gen: torch.Generator, dominant_ids: torch.Tensor | None = None,
        logits: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Sample negatives.

        Args:
            targets: (N,) reference ids.
            gen: random generator on the targets' device.
            dominant_ids: (N, M) dominant ids padded with -1 (used when avoid_dominant).
            logits: (N, V) LM logits at these positions (needed by "softmax").

        Returns:
            (N, k) distinct negative ids.
        """
        excluded = targets.unsqueeze(1)
        if self.config.avoid_dominant and dominant_ids is not None:
            excluded = torch.cat([excluded, dominant_ids.to(targets.device)], 1)
        pieces = []
        for name, k in self.split():
            if name == "softmax":
                if logits is None:
                    raise ValueError("the softmax sampler needs the LM logits")
                got = self._softmax(logits, excluded, k, gen)
            else:
                got = draw_distinct(self._fixed_draw(name, gen, targets.device), excluded, k,
                                    self.vocab_size, gen)
            pieces.append(got)
            excluded = torch.cat([excluded, got], 1)
        return torch.cat(pieces, 1)

    def _fixed_draw(self, name: str, gen: torch.Generator, device: torch.device) -> DrawFn:
        if name == "random":
            v = self.vocab_size
            return lambda rows, m: torch.randint(v, (rows.numel(), m), generator=gen, device=device)
        assert self.freq_cdf is not None
        if self.freq_cdf.device != device:
            self.freq_cdf = self.freq_cdf.to(device)
        return _cdf_draw(self.freq_cdf, gen)

    def _softmax(
        self, logits: torch.Tensor, excluded: torch.Tensor, k: int, gen: torch.Generator
    ) -> torch.Tensor:
        """Per-position sampling from softmax(logits / t), excluded ids zeroed first."""
        out = []
        t = self.config.softmax_temperature
        for start in range(0, logits.shape[0], self.chunk_rows):
            z = logits[start : start + self.chunk_rows].float()  # (R, V)
            ex = excluded[start : start + self.chunk_rows]  # (R, E)
            w = z.sub(z.amax(-1, keepdim=True)).div_(t).exp_()  # (R, V) unnormalised q
            r, c = (ex >= 0).nonzero(as_tuple=True)
            w[r, ex[r, c]] = 0.0  # excluded ids get no mass
            out.append(draw_distinct(_two_level_draw(w, gen), ex, k, self.vocab_size, gen))
        return torch.cat(out, 0)


BLOCK = 256
"""Vocabulary block width of the two-level softmax sampler."""


def _two_level_draw(w: torch.Tensor, gen: torch.Generator) -> DrawFn:
    """Exact inverse-CDF draws from per-row weights without a full-width cumsum.

    The vocabulary is cut into blocks of :data:`BLOCK`. A draw first picks a block by
    inverse CDF over the per-row block sums, then a token by inverse CDF over the
    chosen block's weights, with the remainder of the same uniform: together exactly
    one inverse-CDF draw over the whole row, but the only full-width work is one sum.

    Args:
        w: (R, V) non-negative weights (a row's distribution up to a constant).
        gen: random generator.

    Returns:
        A draw function (rows (r,), m) -> (r, m) ids, -1 where rounding left a draw empty.
    """
    n_rows, vocab = w.shape
    nb = -(-vocab // BLOCK)
    if vocab % BLOCK:  # zero-weight padding of the tail block
        w = torch.nn.functional.pad(w, (0, nb * BLOCK - vocab))
    blocks = w.view(n_rows, nb, BLOCK)  # (R, nb, BLOCK)
    block_cdf = blocks.sum(-1).cumsum_(-1)  # (R, nb)

    def draw(rows: torch.Tensor, m: int) -> torch.Tensor:
        bc = block_cdf if rows.numel() == n_rows else block_cdf[rows]  # (r, nb)
        u = torch.rand(rows.numel(), m, generator=gen, device=w.device) * bc[:, -1:]  # (r, m)
        b = torch.searchsorted(bc, u, right=True)  # (r, m) first block whose cdf exceeds u
        full = b < nb
        b = b.clamp_(max=nb - 1)
        below = torch.where(b > 0, bc.gather(1, (b - 1).clamp(min=0)), 0.0)  # (r, m)
        inner = blocks[rows.unsqueeze(1), b].cumsum_(-1)  # (r, m, BLOCK)
        rest = (u - below).unsqueeze(-1)  # (r, m, 1) remainder inside the block
        j = torch.searchsorted(inner, rest, right=True).squeeze(-1)  # (r, m)
        ids = b * BLOCK + j.clamp(max=BLOCK - 1)
        ok = full & (j < BLOCK) & (ids < vocab)
        return torch.where(ok, ids, -1)

    return draw


SAMPLERS = {"random": "uniform over the vocabulary",
            "token_freq": "unigram frequency of training targets (count ** power)",
            "softmax": "the LM's own softmax at a temperature"}
