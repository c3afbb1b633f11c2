"""Dominant sets and BoostedProb equal the published boostedprob package (the oracle)."""

import pytest
import torch

from sigmoid_head.lm.dominant import DominantConfig, boosted_prob, find_dominant

boostedprob = pytest.importorskip("boostedprob")


def _distribution(kind: str, n: int, v: int, gen: torch.Generator) -> torch.Tensor:
    if kind == "random":
        z = torch.randn(n, v, generator=gen) * 3
    elif kind == "peaked":
        z = torch.randn(n, v, generator=gen)
        z[:, :6] += torch.rand(n, 6, generator=gen) * 14
    elif kind == "flat":
        z = torch.zeros(n, v)
    elif kind == "onehot":
        z = torch.full((n, v), -1e4)
        z[torch.arange(n), torch.randint(0, v, (n,), generator=gen)] = 0.0
    elif kind == "tied":
        z = torch.randint(0, 4, (n, v), generator=gen).float() * 3
    else:  # two or three near-equal alternatives: the ambiguous case
        z = torch.randn(n, v, generator=gen)
        z[:, :3] += 12 + torch.rand(n, 3, generator=gen) * 0.3
    return torch.log_softmax(z, -1)


KINDS = ["random", "peaked", "flat", "onehot", "tied", "ambiguous"]


@pytest.mark.parametrize("cut", ["last", "first"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("vocab", [37, 1500, 4096])
def test_sets_equal_oracle(cut, kind, vocab):
    gen = torch.Generator().manual_seed(vocab)
    lp = _distribution(kind, 48, vocab, gen)
    before = lp.clone()
    dom = find_dominant(lp, DominantConfig(cut=cut))
    assert torch.equal(lp, before), "find_dominant must not mutate its input"
    ora = boostedprob.find_dominant(lp.clone(), cut_point_mode=cut)
    for n in range(lp.shape[0]):
        want = {i for i in ora[n].tolist() if i != -1}
        assert set(dom.top_ids[n, : dom.n_dominant[n]].tolist()) == want
    if kind == "flat":
        assert int(dom.n_dominant.max()) == 0  # no significant drop, empty sets
    if kind == "onehot":
        assert bool((dom.n_dominant == 1).all())


@pytest.mark.parametrize("cut", ["last", "first"])
@pytest.mark.parametrize("kind", KINDS)
def test_boostedprob_equals_oracle(cut, kind):
    gen = torch.Generator().manual_seed(7)
    lp = _distribution(kind, 40, 900, gen)
    dom = find_dominant(lp, DominantConfig(cut=cut))
    targets = torch.randint(0, 900, (40,), generator=gen)
    targets[:20] = dom.top_ids[:20, 0]  # half the targets are the argmax (often dominant)
    got = boosted_prob(lp, targets, DominantConfig(cut=cut))
    want = boostedprob.calculate_boostedprob(lp.clone()[None], targets[None], cut_point_mode=cut)[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_cut_modes_differ_when_two_drops():
    p = torch.tensor([[0.5, 0.3, 0.1, 0.05, 0.05]])
    first = find_dominant(p.log(), DominantConfig(cut="first"))
    last = find_dominant(p.log(), DominantConfig(cut="last"))
    assert int(first.n_dominant) == 1 and int(last.n_dominant) == 3


def test_topk_is_bounded_by_epsilon():
    assert DominantConfig().topk(49152) == 201
    assert DominantConfig(epsilon=0.0).topk(49152) == 1024
    assert DominantConfig().topk(50) == 50
    with pytest.raises(ValueError):
        DominantConfig(cut="middle")


def _full_sort_reference(lp: torch.Tensor, config: DominantConfig) -> list[set[int]]:
    """The rule applied to a full descending sort cut at the config's top-k (no screening)."""
    p, ids = lp.exp().sort(-1, descending=True)
    k = config.topk(lp.shape[-1])
    p, ids = p[:, :k], ids[:, :k]
    diff = p[:, :-1] - p[:, 1:]
    drop = (diff > config.p_jump * p[:, :-1]) & (diff > config.epsilon)
    out = []
    for n in range(lp.shape[0]):
        hits = drop[n].nonzero().flatten().tolist()
        cut = (hits[-1] if config.cut == "last" else hits[0]) if hits else -1
        out.append(set(ids[n, : cut + 1].tolist()))
    return out


@pytest.mark.parametrize("epsilon", [0.005, 0.02, 0.0])
@pytest.mark.parametrize("kind", KINDS)
def test_block_screening_equals_a_full_sort(kind, epsilon):
    # 5000 is not a multiple of the screening block: the padded tail block is exercised
    gen = torch.Generator().manual_seed(11)
    lp = _distribution(kind, 24, 5000, gen)
    for cut in ("last", "first"):
        cfg = DominantConfig(epsilon=epsilon, cut=cut)
        dom = find_dominant(lp, cfg)
        got = [set(dom.top_ids[n, : dom.n_dominant[n]].tolist()) for n in range(24)]
        assert got == _full_sort_reference(lp, cfg)
        via_probs = find_dominant(lp.exp(), cfg, probs=True)
        assert torch.equal(via_probs.n_dominant, dom.n_dominant)
