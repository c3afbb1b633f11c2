"""scoring/softmax_stats.py: one exponential per logit gives the values of the plain way.

The reference is the plain composition scoring used before issue 60 (``log_softmax``,
:func:`find_dominant` on it, BoostedProb and the entropy from the log-probabilities).
Tolerances: log-probabilities and entropies within 2e-5 absolute (float32 rounding of
values up to ~40 in magnitude), probabilities within 1e-5 relative and 1e-7 absolute;
dominant-set sizes and members exactly.
"""

from __future__ import annotations

import math

import pytest
import torch

from sigmoid_head.lm.dominant import DominantConfig, boosted_prob, find_dominant
from sigmoid_head.registry import methods as registry
from sigmoid_head.scoring.softmax_stats import softmax_stats
from sigmoid_head.scoring.token_scores import _softmax_stats
from sigmoid_head.scoring.token_scores import entropy as plain_entropy

LOG_TOL = {"rtol": 1e-6, "atol": 2e-5}
PROB_TOL = {"rtol": 1e-5, "atol": 1e-7}


def plain(z: torch.Tensor, t: torch.Tensor, config: DominantConfig, fixed: bool) -> dict:
    """The statistics as scoring computed them before: every logit exponentiated twice."""
    logp = torch.log_softmax(z.float(), -1)
    dom = find_dominant(logp, config, fixed_shape=fixed)
    return {"target_logp": logp.gather(-1, t[:, None]).squeeze(-1), "entropy": plain_entropy(logp),
            "boosted": boosted_prob(logp, t, dominant=dom), "dom": dom}


def cases() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Name -> (logits (R, V), targets (R,)): scales, ties, -inf, peaked and flat rows, bf16."""
    g = torch.Generator().manual_seed(0)
    out = {}
    for v in (50, 1000, 4096):  # below and above one 64-wide screening block; a padded tail
        for scale in (1.0, 4.0, 12.0):
            z = torch.randn(40, v, generator=g) * scale + 20.0  # far from 0: the normaliser matters
            out[f"randn V={v} x{scale}"] = (z, torch.randint(0, v, (40,), generator=g))
    z = torch.randn(40, 1000, generator=g).mul(3).round()  # many exact ties
    top = z.argmax(-1)
    z[:, 1] = z.gather(1, top[:, None]).squeeze(1)  # the row's top value tied
    t = torch.randint(0, 1000, (40,), generator=g)
    t[:10] = top[:10]
    out["ties"] = (z, t)
    z = torch.randn(40, 1000, generator=g) * 4
    z[::3, :300] = -math.inf  # masked tokens, some of them the targets
    t = torch.randint(0, 1000, (40,), generator=g)
    t[::6] = 5
    out["-inf"] = (z, t)
    z = torch.randn(20, 1000, generator=g)
    z[:10, 7] = 60.0  # peaked: entropy near 0
    z[10:] = 0.5  # flat: entropy log V, no dominant set
    out["peaked and flat"] = (z, torch.full((20,), 7))
    z = (torch.randn(40, 4096, generator=g) * 5).to(torch.bfloat16)  # bf16 logits: many ties too
    out["bf16"] = (z, torch.randint(0, 4096, (40,), generator=g))
    return out


def members(ids: torch.Tensor) -> list[list[int]]:
    """Each row's dominant ids as a sorted list (padding -1 dropped): ties may be ranked apart."""
    return [sorted(i for i in row.tolist() if i >= 0) for row in ids]


@pytest.mark.parametrize("fixed", [False, True], ids=["cpu profile", "fixed shapes"])
@pytest.mark.parametrize("cut", ["last", "first"])
@pytest.mark.parametrize("name", list(cases()))
def test_one_exponential_gives_the_plain_values(name, cut, fixed):
    z, t = cases()[name]
    config = DominantConfig(cut=cut)
    want = plain(z, t, config, fixed)
    got = softmax_stats(z, t, config, fixed_shape=fixed)
    torch.testing.assert_close(got.target_logp, want["target_logp"], **LOG_TOL)
    torch.testing.assert_close(got.entropy, want["entropy"], **LOG_TOL)
    torch.testing.assert_close(got.boosted_prob(t), want["boosted"], **PROB_TOL)
    torch.testing.assert_close(got.log_norm, torch.logsumexp(z.float(), -1), **LOG_TOL)
    assert torch.equal(got.dominant.n_dominant, want["dom"].n_dominant)
    assert members(got.dominant.padded_ids()) == members(want["dom"].padded_ids())
    torch.testing.assert_close(got.dominant.mass(), want["dom"].mass(), **PROB_TOL)
    assert bool(torch.isfinite(got.entropy).all())


def test_the_values_are_the_float64_truth():
    z = torch.randn(30, 2000, generator=torch.Generator().manual_seed(1)) * 6 - 35.0
    t = torch.arange(30)
    got = softmax_stats(z, t)
    logp = torch.log_softmax(z.double(), -1)
    torch.testing.assert_close(got.target_logp.double(), logp[torch.arange(30), t], **LOG_TOL)
    truth = -(logp.exp() * logp).sum(-1)
    torch.testing.assert_close(got.entropy.double(), truth, rtol=1e-5, atol=2e-5)


def test_the_scoring_path_gives_plugins_the_full_log_softmax():
    """A registered method reading ``rows.logp`` still gets the (R, V) log-softmax; the
    built-in ones are computed without it and agree with the plain way."""
    z, t = cases()["randn V=1000 x4.0"]
    seen = {}

    def top_logp(rows):
        seen["logp"] = rows.logp
        return rows.logp.max(-1).values

    method = registry.register(registry.Method("toy_logp", reads="lm_logits", token_values=top_logp))
    try:
        out = _softmax_stats(z, t, DominantConfig())
    finally:
        registry.unregister("toy_logp")
    torch.testing.assert_close(seen["logp"], torch.log_softmax(z, -1), **LOG_TOL)
    torch.testing.assert_close(out[method.value_key], torch.log_softmax(z, -1).amax(-1), **LOG_TOL)
    want = plain(z, t, DominantConfig(), False)
    torch.testing.assert_close(out["softmax_log"], want["target_logp"], **LOG_TOL)
    torch.testing.assert_close(out["boostedprob"], want["boosted"], **PROB_TOL)
    without = _softmax_stats(z, t, DominantConfig())
    assert set(without) == {"softmax_log", "boostedprob", "entropy", "n_dominant"}
