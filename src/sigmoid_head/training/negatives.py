"""Negative samplers, registered by name in one table (:data:`SAMPLERS`).

Each entry of :data:`SAMPLERS` is a :class:`Sampler`: its draw function, a description,
and whether it needs the training data's token counts or the LM logits of the positions;
:class:`NegativeSampler` and :class:`SamplerConfig` read everything from that table, so a
new sampler is one function and one entry.

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
two-level (block, then token) inverse-CDF draw instead of a cumsum over the vocabulary
(both draws are in :mod:`sigmoid_head.training.inverse_cdf`).

All the uniforms of a call are drawn up front, one (rounds, N, m) block per part, and
round r of row n always uses ``u[r, n]``. On CPU only the rows still short are redrawn
and the loop stops when none is; with fixed shapes (an accelerator, see
:func:`sigmoid_head.lm.profiles.step_profile`) the candidates of every round are drawn for
every row at once and filtered in one pass, with no host read: keeping the first k
valid ids of the rounds one after the other is the same as keeping them from all
rounds concatenated. Both give the same draws, whatever the chunking of the softmax
sampler.

A mixture such as ``"token_freq+softmax"`` draws ``k // parts`` from each part (the
first parts take the remainder); later parts also exclude what earlier parts drew.

token_freq never draws a token that is not a training target, so its row keeps the LM
head's values, and the sigmoid reads text made of such tokens (another script, say) as
valid. Two remedies: ``uniform_negative_share`` s mixes a uniform distribution over the
whole vocabulary into every part, ``q' = s / V + (1 - s) q`` (:meth:`NegativeSampler.mix`),
so those rows are trained as negatives in the training data's contexts; ``untrained_prior`` p
sets their rows to p in every context before training (:func:`.model.apply_untrained_prior`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..lm.profiles import fixed_shapes, slice_rows
from .inverse_cdf import DrawFn, cdf_draw, two_level_draw

ROUNDS = 8
"""Rounds of draws from the sampler's own distribution."""
FALLBACK_ROUNDS = 4
"""Rounds of uniform draws after the sampler's own rounds, for nearly exhausted supports."""
WIDE_EXCLUSION = 32
"""Exclusion lists wider than this are tested by binary search instead of broadcasting."""
AVOID_WHEN = ("always", "target_dominant")
"""When avoid-dominant applies (see :attr:`SamplerConfig.avoid_when`)."""


@dataclass
class SamplerConfig:
    """How negatives are drawn."""

    strategy: str = "token_freq"
    """Sampler name, or several joined with "+" (e.g. "token_freq+softmax")."""
    num_negatives: int = 10
    """k, negatives per position."""
    avoid_dominant: bool = True
    """Exclude the position's dominant tokens (the paper's ambiguity-informed sampling)."""
    avoid_when: str = "always"
    """When avoid-dominant applies: always (the paper), or target_dominant (only at positions where
    the reference is itself dominant; elsewhere the model's top tokens may be drawn as negatives)."""
    softmax_temperature: float = 2.0
    """Temperature of the "softmax" sampler: q is proportional to p ** (1 / t)."""
    freq_power: float = 1.0
    """The "token_freq" sampler draws proportionally to count ** power."""
    freq_smoothing: float = 0.0
    """Added to every token's count before the power (0 = the paper: unseen tokens are never drawn)."""
    uniform_negative_share: float = 0.0
    """Share of each sampler's draws taken uniformly over the whole vocabulary instead (0 = the paper): the rows of tokens that never occur as training targets, which token_freq never draws, are then trained as negatives in the training data's contexts (docs/results.md: too little on its own against text in another script; see untrained_prior)."""
    untrained_prior: float | None = None
    """Give every token that never occurs as a training target this constant head probability in every context (its row zeroed, its bias logit(p); the head gets a bias) before training. Default (none): 0.01 on a full head (chosen on dev, docs/results.md; it doubles the head's word MCC on WMT 2021 ro-en human tags, docs/human_labels.md), off on a low-rank head, which has no row of its own per token. 0 = off, the paper's setting: such rows keep the LM head's values, and the sigmoid reads text made of them, e.g. another script, as valid."""

    def __post_init__(self) -> None:
        for name in self.parts():
            if name not in SAMPLERS:
                raise ValueError(f"unknown negative sampler {name!r}; known: {sorted(SAMPLERS)}")
        if self.num_negatives < len(self.parts()):
            raise ValueError("num_negatives must be at least the number of mixed samplers")
        if self.softmax_temperature <= 0:
            raise ValueError("softmax_temperature must be > 0")
        if self.avoid_when not in AVOID_WHEN:
            raise ValueError(f"avoid_when must be one of {AVOID_WHEN}, got {self.avoid_when!r}")
        if self.freq_smoothing < 0 or self.freq_power < 0:
            raise ValueError("freq_power and freq_smoothing must be >= 0")
        if not 0 <= self.uniform_negative_share < 1:
            raise ValueError("uniform_negative_share must be in [0, 1)")
        if self.untrained_prior is not None and not 0 <= self.untrained_prior < 1:
            raise ValueError("untrained_prior must be in [0, 1) (0 = off)")

    def parts(self) -> list[str]:
        """The sampler names of the (possibly mixed) strategy."""
        return [p.strip() for p in self.strategy.split("+") if p.strip()]

    @property
    def needs_counts(self) -> bool:
        """Whether a part draws from the training data's token counts."""
        return any(SAMPLERS[p].needs_counts for p in self.parts())

    @property
    def needs_logits(self) -> bool:
        """Whether a part draws from the LM logits of the positions."""
        return any(SAMPLERS[p].needs_logits for p in self.parts())


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


def avoided_ids(dominant_ids: torch.Tensor, targets: torch.Tensor, when: str) -> torch.Tensor:
    """The dominant ids a position avoids as negatives.

    Args:
        dominant_ids: (N, M) dominant ids padded with -1.
        targets: (N,) reference ids.
        when: "always" keeps every row; "target_dominant" empties (all -1) the rows whose
            reference is not among their dominant ids, so there the model's own top tokens,
            which missed the reference, can be drawn as negatives.

    Returns:
        (N, M) ids, -1 = nothing to avoid.
    """
    if when == "always":
        return dominant_ids
    hit = (dominant_ids == targets.unsqueeze(1)).any(1, keepdim=True)  # (N, 1), no host read
    return torch.where(hit, dominant_ids, -1)


def _is_excluded(seq: torch.Tensor, excluded: torch.Tensor, is_sorted: bool) -> torch.Tensor:
    """(R, L) bool: ``seq[r, l]`` occurs in ``excluded[r]`` (sorted ascending when ``is_sorted``)."""
    if not is_sorted:
        return (seq.unsqueeze(-1) == excluded.unsqueeze(1)).any(-1)  # (R, L, E) -> (R, L)
    at = torch.searchsorted(excluded, seq).clamp_(max=excluded.shape[1] - 1)  # (R, L)
    return excluded.gather(1, at) == seq


def _first_k_valid(seq: torch.Tensor, excluded: torch.Tensor, k: int,
                   is_sorted: bool = False) -> torch.Tensor:
    """Keep, per row, the first k ids of ``seq`` that are >= 0, not excluded, not repeated.

    Args:
        seq: (R, L) candidate ids in draw order (-1 = empty).
        excluded: (R, E) ids to avoid (-1 = padding).
        k: how many to keep.
        is_sorted: ``excluded`` rows are sorted ascending (membership by binary search).

    Returns:
        (R, k) ids, -1 where fewer than k survived.
    """
    valid = seq >= 0
    valid &= ~_is_excluded(seq, excluded, is_sorted)  # (R, L)
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
    max_rounds: int = ROUNDS, *, uniforms: torch.Tensor | None = None, fixed_shape: bool | None = None,
) -> torch.Tensor:
    """Draw k distinct allowed ids per row with ``draw``, then fill any shortfall.

    Rows still short after ``max_rounds`` (a distribution whose support is almost all
    excluded) get :data:`FALLBACK_ROUNDS` uniform rounds, and as a last resort the
    smallest allowed ids, so every row gets k ids whenever the vocabulary allows.

    Args:
        draw: candidate generator, see :data:`DrawFn`.
        excluded: (N, E) ids never to return (-1 = padding).
        k: negatives per row.
        vocab_size: V.
        gen: random generator (all randomness comes from it), used when ``uniforms`` is None.
        max_rounds: draw rounds before the uniform fallback.
        uniforms: (max_rounds + FALLBACK_ROUNDS, N, 2k + 8) float64 uniforms to use
            instead of drawing them from ``gen``.
        fixed_shape: draw every round for every row at once, with no host read
            (default: from the device's profile). Same result either way.

    Returns:
        (N, k) long ids; -1 only where fewer than k ids are allowed at all.
    """
    n, device = excluded.shape[0], excluded.device
    rounds, m = max_rounds + FALLBACK_ROUNDS, 2 * k + 8
    if uniforms is None:
        uniforms = torch.rand(rounds, n, m, generator=gen, dtype=torch.float64, device=device)
    if fixed_shape is None:
        fixed_shape = fixed_shapes(device)
    is_sorted = excluded.shape[1] > WIDE_EXCLUSION
    if is_sorted:
        excluded = excluded.sort(1).values  # (N, E)
    # the smallest allowed ids lie among the first E + 2k ids (E excluded, < k already kept)
    fill = torch.arange(min(vocab_size, excluded.shape[1] + 2 * k), device=device)

    if fixed_shape:  # all rounds at once, in round order per row
        u = uniforms.transpose(0, 1)  # (N, rounds, m)
        own = draw(None, u[:, :max_rounds].reshape(n, -1))  # (N, max_rounds * m)
        uni = (u[:, max_rounds:].reshape(n, -1) * vocab_size).long().clamp_(max=vocab_size - 1)
        seq = torch.cat([own, uni, fill.expand(n, -1)], 1)  # (N, L)
        return _first_k_valid(seq, excluded, k, is_sorted)

    out = torch.full((n, k), -1, dtype=torch.long, device=device)
    for r in range(rounds + 1):
        rows = (out[:, -1] < 0).nonzero().squeeze(1)
        if rows.numel() == 0:
            break
        if r == rounds:
            cand = fill.expand(rows.numel(), -1)
        elif r >= max_rounds:  # uniform over the vocabulary
            cand = (uniforms[r][rows] * vocab_size).long().clamp_(max=vocab_size - 1)
        else:
            cand = draw(rows, uniforms[r][rows])
        out[rows] = _first_k_valid(torch.cat([out[rows], cand], 1), excluded[rows], k, is_sorted)
    return out


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
            chunk_rows: rows of the softmax sampler's (rows, V) buffers at a time on
                CPU (an accelerator uses :func:`sigmoid_head.lm.dominant.slice_rows`).
        """
        self.config, self.vocab_size, self.chunk_rows = config, vocab_size, chunk_rows
        self.freq_cdf: torch.Tensor | None = None
        if config.needs_counts:
            if token_counts is None:
                needy = "+".join(n for n in config.parts() if SAMPLERS[n].needs_counts)
                raise ValueError(f"the {needy} sampler needs token counts of the training data")
            if token_counts.numel() != vocab_size:
                raise ValueError(f"token_counts has {token_counts.numel()} entries, vocab is {vocab_size}")
            w = (token_counts.double() + config.freq_smoothing).pow(config.freq_power)
            w = torch.where(token_counts.double() + config.freq_smoothing > 0, w, 0.0)
            if w.sum() <= 0:
                raise ValueError("token counts are all zero: no training targets were counted")
            self.freq_cdf = torch.cumsum(w, 0)

    def mix(self, draw: DrawFn) -> DrawFn:
        """``draw`` mixed with a uniform draw over the vocabulary (``uniform_negative_share``).

        One uniform per candidate still makes one exact inverse-CDF draw from the mixture
        ``s * uniform + (1 - s) * q``: ``u < s`` picks id ``floor(u / s * V)``, otherwise
        ``draw`` gets ``(u - s) / (1 - s)``. With s = 0 ``draw`` itself is returned.
        """
        s, v = self.config.uniform_negative_share, self.vocab_size
        if s <= 0:
            return draw

        def mixed(rows: torch.Tensor | None, u: torch.Tensor) -> torch.Tensor:
            uniform = (u * (v / s)).long().clamp_(max=v - 1)  # (r, m), used where u < s
            own = draw(rows, ((u - s) / (1 - s)).clamp_(min=0.0))  # (r, m), used where u >= s
            return torch.where(u < s, uniform, own)

        return mixed

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
            excluded = torch.cat([excluded, avoided_ids(dominant_ids.to(targets.device), targets,
                                                        self.config.avoid_when)], 1)
        pieces = []
        for name, k in self.split():
            sampler = SAMPLERS[name]
            if sampler.needs_logits and logits is None:
                raise ValueError(f"the {name} sampler needs the LM logits")
            got = sampler.draw(self, excluded, k, gen, logits)  # (N, k)
            pieces.append(got)
            excluded = torch.cat([excluded, got], 1)
        return torch.cat(pieces, 1)

    def freq_cdf_on(self, device: torch.device) -> torch.Tensor:
        """(V,) the cumulative token-count weights, moved to ``device`` once."""
        assert self.freq_cdf is not None
        if self.freq_cdf.device != device:
            self.freq_cdf = self.freq_cdf.to(device)
        return self.freq_cdf


SamplerDraw = Callable[[NegativeSampler, torch.Tensor, int, torch.Generator, "torch.Tensor | None"],
                       torch.Tensor]
"""(sampler, excluded (N, E) with column 0 the targets, k, generator, LM logits (N, V) or
None) -> (N, k) distinct ids, none of them excluded."""


@dataclass(frozen=True)
class Sampler:
    """One registered sampler (an entry of :data:`SAMPLERS`)."""

    draw: SamplerDraw
    """Draws k distinct allowed ids per position (passing its candidate generator through
    :meth:`NegativeSampler.mix`, so that ``uniform_negative_share`` applies to it)."""
    description: str
    """What it draws from (one line)."""
    needs_counts: bool = False
    """Needs the target-token counts of the training data (:func:`count_target_tokens`)."""
    needs_logits: bool = False
    """Needs the LM logits of the positions."""


def _draw_random(s: NegativeSampler, excluded: torch.Tensor, k: int, gen: torch.Generator,
                 logits: torch.Tensor | None) -> torch.Tensor:
    """Uniform over the vocabulary."""
    v = s.vocab_size
    return draw_distinct(lambda rows, u: (u * v).long().clamp_(max=v - 1), excluded, k, v, gen)


def _draw_token_freq(s: NegativeSampler, excluded: torch.Tensor, k: int, gen: torch.Generator,
                     logits: torch.Tensor | None) -> torch.Tensor:
    """Inverse-CDF draws from the shared (V,) count weights."""
    cdf = s.freq_cdf_on(excluded.device)
    return draw_distinct(s.mix(cdf_draw(cdf)), excluded, k, s.vocab_size, gen)


def _draw_softmax(s: NegativeSampler, excluded: torch.Tensor, k: int, gen: torch.Generator,
                  logits: torch.Tensor | None) -> torch.Tensor:
    """Per-position sampling from softmax(logits / t), excluded ids zeroed first.

    excluded: (N, E), column 0 the targets (always >= 0).
    """
    assert logits is not None
    out = []
    t, n, device = s.config.softmax_temperature, logits.shape[0], logits.device
    fixed = fixed_shapes(device)
    chunk = slice_rows(s.vocab_size, device) if fixed else s.chunk_rows
    u = torch.rand(ROUNDS + FALLBACK_ROUNDS, n, 2 * k + 8, generator=gen, dtype=torch.float64,
                   device=device)  # every row's uniforms, whatever the chunking
    for start in range(0, n, chunk):
        z = logits[start : start + chunk].float()  # (R, V)
        ex = excluded[start : start + chunk]  # (R, E)
        w = z.sub(z.amax(-1, keepdim=True)).div_(t).exp_()  # (R, V) unnormalised q
        # excluded ids get no mass (padding -1 points at the target, excluded anyway)
        w.scatter_(1, torch.where(ex >= 0, ex, ex[:, :1]), 0.0)
        out.append(draw_distinct(s.mix(two_level_draw(w, fixed)), ex, k, s.vocab_size, gen,
                                 uniforms=u[:, start : start + chunk], fixed_shape=fixed))
    return torch.cat(out, 0) if len(out) != 1 else out[0]


SAMPLERS: dict[str, Sampler] = {
    "random": Sampler(_draw_random, "uniform over the vocabulary"),
    "token_freq": Sampler(_draw_token_freq, "unigram frequency of training targets (count ** power)",
                          needs_counts=True),
    "softmax": Sampler(_draw_softmax, "the LM's own softmax at a temperature", needs_logits=True),
}
"""Every negative sampler by name; :attr:`SamplerConfig.strategy` names one or several."""
