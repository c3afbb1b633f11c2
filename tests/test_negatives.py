"""Negative samplers: exclusions, distinctness, target distributions, determinism."""

import pytest
import torch

from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig, count_target_tokens

V = 300


def _setup(n=200, seed=0):
    gen = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, V, (n,), generator=gen)
    dom = torch.randint(0, V, (n, 6), generator=gen)
    dom[:, 4:] = -1  # padded sets
    logits = torch.randn(n, V, generator=gen) * 2
    counts = torch.randint(0, 50, (V,), generator=gen).double()
    counts[:100] = 0.0  # tokens never seen as targets
    return targets, dom, logits, counts


STRATEGIES = ["random", "token_freq", "softmax", "token_freq+softmax", "random+softmax+token_freq"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("avoid", [True, False])
def test_exclusions_and_distinct(strategy, avoid):
    targets, dom, logits, counts = _setup()
    cfg = SamplerConfig(strategy=strategy, num_negatives=10, avoid_dominant=avoid)
    neg = NegativeSampler(cfg, V, counts)(targets, torch.Generator().manual_seed(1), dom, logits)
    assert neg.shape == (200, 10) and neg.dtype == torch.long
    assert bool(((neg >= 0) & (neg < V)).all())
    assert not bool((neg == targets[:, None]).any())
    in_dom = (neg.unsqueeze(-1) == dom.unsqueeze(1)).any(-1)
    # with avoid-dominant never a dominant token; without it they are drawn like any other
    assert bool(in_dom.any()) == (not avoid)
    assert all(len(set(row.tolist())) == 10 for row in neg)


@pytest.mark.parametrize("strategy", ["random", "softmax"])
def test_avoid_only_where_target_dominant(strategy):
    """avoid_when=target_dominant: rows whose reference is dominant avoid their dominant ids, the
    other rows may draw them (the model's top tokens that missed the reference)."""
    targets, dom, logits, counts = _setup(n=400)
    dom[::2, 1] = targets[::2]  # even rows: the reference is dominant; odd rows: it is not
    dom[1::2] = torch.where(dom[1::2] == targets[1::2, None], -1, dom[1::2])
    logits.scatter_(1, dom.clamp(min=0), 6.0)  # dominant ids carry most softmax mass
    cfg = SamplerConfig(strategy=strategy, num_negatives=10, avoid_when="target_dominant")
    neg = NegativeSampler(cfg, V, counts)(targets, torch.Generator().manual_seed(1), dom, logits)
    in_dom = (neg.unsqueeze(-1) == dom.unsqueeze(1)).any(-1)  # (N, k); padding -1 never matches
    assert not bool(in_dom[::2].any())
    assert bool(in_dom[1::2].any(1).float().mean() > 0.5 if strategy == "softmax" else in_dom[1::2].any())
    assert not bool((neg == targets[:, None]).any())
    with pytest.raises(ValueError, match="avoid_when"):
        SamplerConfig(avoid_when="sometimes")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_deterministic_under_seed(strategy):
    targets, dom, logits, counts = _setup()
    sampler = NegativeSampler(SamplerConfig(strategy=strategy), V, counts)
    a = sampler(targets, torch.Generator().manual_seed(3), dom, logits)
    b = sampler(targets, torch.Generator().manual_seed(3), dom, logits)
    c = sampler(targets, torch.Generator().manual_seed(4), dom, logits)
    assert torch.equal(a, b) and not torch.equal(a, c)


def _chi2_ok(observed: torch.Tensor, expected_p: torch.Tensor) -> bool:
    from scipy.stats import chisquare

    expected_p, observed = expected_p.double(), observed.double()
    keep = expected_p > 0
    exp = expected_p[keep] / expected_p[keep].sum() * observed[keep].sum()
    assert observed[~keep].sum() == 0, "drew a token of zero probability"
    return chisquare(observed[keep].numpy(), exp.numpy()).pvalue > 1e-3


def test_token_freq_follows_counts():
    _, _, _, counts = _setup()
    n = 20000
    targets = torch.zeros(n, dtype=torch.long)  # token 0 has count 0, so excludes nothing drawn
    neg = NegativeSampler(SamplerConfig("token_freq", num_negatives=1, avoid_dominant=False),
                          V, counts)(targets, torch.Generator().manual_seed(0))
    observed = torch.bincount(neg[:, 0], minlength=V).double()
    assert _chi2_ok(observed, counts)


def test_token_freq_power_and_smoothing():
    counts = torch.tensor([0.0, 1.0, 4.0, 16.0] + [0.0] * 6)
    cfg = SamplerConfig("token_freq", num_negatives=1, avoid_dominant=False, freq_power=0.5,
                        freq_smoothing=0.0)
    neg = NegativeSampler(cfg, 10, counts)(torch.full((20000,), 9), torch.Generator().manual_seed(0))
    assert _chi2_ok(torch.bincount(neg[:, 0], minlength=10).double(), counts.sqrt())


def test_random_is_uniform_over_allowed():
    n = 30000
    targets = torch.full((n,), 5)
    neg = NegativeSampler(SamplerConfig("random", num_negatives=1, avoid_dominant=False), 50)(
        targets, torch.Generator().manual_seed(0))
    expected = torch.ones(50)
    expected[5] = 0
    assert _chi2_ok(torch.bincount(neg[:, 0], minlength=50).double(), expected)


def test_softmax_follows_tempered_distribution():
    n, v = 20000, 40
    logits = torch.randn(1, v, generator=torch.Generator().manual_seed(2)).repeat(n, 1) * 2
    targets = torch.zeros(n, dtype=torch.long)
    dom = torch.tensor([[1, 2, -1]]).repeat(n, 1)
    cfg = SamplerConfig("softmax", num_negatives=1, softmax_temperature=2.0)
    neg = NegativeSampler(cfg, v)(targets, torch.Generator().manual_seed(0), dom, logits)
    expected = torch.softmax(logits[0] / 2.0, -1).double()
    expected[[0, 1, 2]] = 0.0  # reference and dominant tokens are excluded
    assert _chi2_ok(torch.bincount(neg[:, 0], minlength=v).double(), expected)


def test_mixture_splits_k():
    s = NegativeSampler(SamplerConfig("token_freq+softmax", num_negatives=10), V, torch.ones(V))
    assert s.split() == [("token_freq", 5), ("softmax", 5)]
    s = NegativeSampler(SamplerConfig("random+softmax+token_freq", num_negatives=10), V, torch.ones(V))
    assert s.split() == [("random", 4), ("softmax", 3), ("token_freq", 3)]


def test_small_support_still_gives_k_distinct():
    counts = torch.zeros(V)
    counts[[3, 4, 5]] = 10.0  # only 3 tokens ever occur as targets
    targets = torch.full((50,), 3)
    neg = NegativeSampler(SamplerConfig("token_freq", num_negatives=10, avoid_dominant=False), V,
                          counts)(targets, torch.Generator().manual_seed(0))
    assert all(len(set(r.tolist())) == 10 and 3 not in r.tolist() for r in neg)


def test_tiny_vocabulary_fills_what_it_can():
    neg = NegativeSampler(SamplerConfig("random", num_negatives=5, avoid_dominant=False), 4)(
        torch.tensor([0, 1]), torch.Generator().manual_seed(0))
    for row, t in zip(neg.tolist(), [0, 1], strict=True):
        real = [x for x in row if x >= 0]
        assert sorted(real) == sorted(set(range(4)) - {t}) and row.count(-1) == 2


def test_count_target_tokens_and_errors():
    counts = count_target_tokens([[-100, 1, 2, 2], [2, -100]], 5)
    assert counts.tolist() == [0, 1, 3, 0, 0]
    with pytest.raises(ValueError, match="unknown negative sampler"):
        SamplerConfig("bogus")
    with pytest.raises(ValueError, match="token counts"):
        NegativeSampler(SamplerConfig("token_freq"), V, None)
    with pytest.raises(ValueError, match="logits"):
        NegativeSampler(SamplerConfig("softmax"), V)(torch.zeros(2, dtype=torch.long),
                                                      torch.Generator())


def test_softmax_two_level_draw_is_exact_across_blocks():
    # 700 ids = two full 256-wide blocks and a padded tail block; mass spread over all
    n, v = 30000, 700
    logits = torch.randn(1, v, generator=torch.Generator().manual_seed(5)).repeat(n, 1)
    targets = torch.full((n,), 300)
    dom = torch.tensor([[10, 600, -1]]).repeat(n, 1)
    cfg = SamplerConfig("softmax", num_negatives=1, softmax_temperature=2.0)
    neg = NegativeSampler(cfg, v, chunk_rows=4096)(targets, torch.Generator().manual_seed(0), dom,
                                                   logits)
    expected = torch.softmax(logits[0] / 2.0, -1).double()
    expected[[300, 10, 600]] = 0.0
    assert _chi2_ok(torch.bincount(neg[:, 0], minlength=v).double(), expected)
    shifted = NegativeSampler(cfg, v, chunk_rows=4096)(
        targets, torch.Generator().manual_seed(0), dom, torch.log_softmax(logits, -1))
    # a shift of the logits (log-probs instead) changes a draw only by float rounding
    assert (neg == shifted).double().mean() > 0.999


def test_a_sampler_registered_in_the_table_is_used_by_name(monkeypatch):
    """A new sampler is one function and one entry of SAMPLERS: the config accepts its name,
    its needs come from the entry, and the mixture calls its draw."""
    from sigmoid_head.training import negatives

    calls = []

    def draw_low(s, excluded, k, gen, logits):  # the k lowest allowed ids
        calls.append(logits is not None)
        return negatives.draw_distinct(lambda rows, u: (u * 20).long(), excluded, k,
                                       s.vocab_size, gen)

    monkeypatch.setitem(negatives.SAMPLERS, "low",
                        negatives.Sampler(draw_low, "ids below 20", needs_logits=True))
    cfg = SamplerConfig("low+random", num_negatives=6)
    assert cfg.needs_logits and not cfg.needs_counts
    targets, dom, logits, _ = _setup()
    neg = NegativeSampler(cfg, V)(targets, torch.Generator().manual_seed(1), dom, logits)
    assert calls == [True] and bool((neg[:, :3] < 20).all())
    with pytest.raises(ValueError, match="the low sampler needs the LM logits"):
        NegativeSampler(cfg, V)(targets, torch.Generator().manual_seed(1), dom)
    with pytest.raises(ValueError, match="unknown negative sampler 'lowest'"):
        SamplerConfig("lowest")


@pytest.mark.parametrize("strategy", ["token_freq", "softmax"])
@pytest.mark.parametrize("fixed_shape", [False, True])
def test_uniform_share_mixes_the_whole_vocabulary_in(strategy, fixed_shape, monkeypatch):
    """uniform_negative_share s draws from s / V + (1 - s) q, so tokens that the strategy never
    draws (count 0 for token_freq) are negatives too; s = 0 leaves the draws untouched."""
    from sigmoid_head.training import negatives

    monkeypatch.setattr(negatives, "fixed_shapes", lambda device: fixed_shape)
    n, v, s = 30000, 60, 0.3
    counts = torch.zeros(v, dtype=torch.float64)
    counts[40:] = torch.arange(1, 21, dtype=torch.float64)  # ids 0-39 never occur as targets
    logits = torch.full((1, v), -30.0)
    logits[0, 40:] = torch.linspace(0, 2, 20)  # the softmax gives ids 0-39 ~no mass either
    logits = logits.repeat(n, 1)
    targets = torch.full((n,), 59)
    q = counts if strategy == "token_freq" else torch.softmax(logits[0].double() / 2.0, -1)
    q = q / q.sum()
    expected = s / v + (1 - s) * q
    expected[59] = 0.0  # the reference
    cfg = SamplerConfig(strategy, num_negatives=1, avoid_dominant=False, uniform_negative_share=s)
    neg = NegativeSampler(cfg, v, counts)(targets, torch.Generator().manual_seed(0), None, logits)
    observed = torch.bincount(neg[:, 0], minlength=v).double()
    assert _chi2_ok(observed, expected)
    assert observed[:40].sum() / n == pytest.approx(s * 40 / 59, abs=0.02)  # untrained ids drawn
    plain = SamplerConfig(strategy, num_negatives=1, avoid_dominant=False)
    off = SamplerConfig(strategy, num_negatives=1, avoid_dominant=False, uniform_negative_share=0.0)
    a = NegativeSampler(plain, v, counts)(targets[:500], torch.Generator().manual_seed(1), None, logits[:500])
    b = NegativeSampler(off, v, counts)(targets[:500], torch.Generator().manual_seed(1), None, logits[:500])
    assert torch.equal(a, b) and not bool((a < 40).any())  # the paper's draws, bit for bit
    with pytest.raises(ValueError, match="uniform_negative_share"):
        SamplerConfig(uniform_negative_share=1.0)
