"""Token-level scores from both heads: the geometric mix and the rank-preserving adjustment against brute force."""

import math

import pytest
import torch

from sigmoid_head.scoring.token_adjust import geometric, rank_preserving


def _brute_rank_preserving(head_logits, logp, targets, eps):
    """Sort by softmax, cap each head probability by (1 - eps) x every higher-ranked one."""
    out = []
    for n in range(logp.shape[0]):
        order = sorted(range(logp.shape[1]), key=lambda v: -float(logp[n, v]))
        probs = [float(torch.sigmoid(head_logits[n, v])) for v in order]
        adjusted = {}
        for i, v in enumerate(order):
            caps = [probs[j] * (1 - eps) for j in range(i)]
            adjusted[v] = min([probs[i], *caps])
        out.append(math.log(adjusted[int(targets[n])]))
    return torch.tensor(out)


def test_rank_preserving_matches_brute_force():
    gen = torch.Generator().manual_seed(0)
    head_logits = torch.randn(12, 30, generator=gen) * 3
    logp = torch.log_softmax(torch.randn(12, 30, generator=gen) * 2, -1)
    targets = torch.randint(30, (12,), generator=gen)
    got = rank_preserving(head_logits, logp, targets, eps=1e-3)
    assert torch.allclose(got, _brute_rank_preserving(head_logits, logp, targets, 1e-3), atol=1e-5)


def test_rank_preserving_never_lowers_the_argmax_and_never_raises():
    gen = torch.Generator().manual_seed(1)
    head_logits = torch.randn(20, 40, generator=gen) * 4
    logp = torch.log_softmax(torch.randn(20, 40, generator=gen), -1)
    argmax = logp.argmax(-1)
    own = torch.nn.functional.logsigmoid(head_logits.gather(1, argmax[:, None])[:, 0])
    assert torch.equal(rank_preserving(head_logits, logp, argmax), own)
    other = (argmax + 1) % 40
    own_other = torch.nn.functional.logsigmoid(head_logits.gather(1, other[:, None])[:, 0])
    assert (rank_preserving(head_logits, logp, other) <= own_other).all()


def test_geometric_endpoints_and_range():
    s, p = torch.tensor([-0.1, -2.0]), torch.tensor([-1.0, -0.5])
    assert torch.equal(geometric(s, p, 1.0), s)
    assert torch.equal(geometric(s, p, 0.0), p)
    assert torch.allclose(geometric(s, p, 0.5), (s + p) / 2)
    with pytest.raises(ValueError):
        geometric(s, p, 1.5)
