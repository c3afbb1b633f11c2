"""The training step's loss: BCE over gathered rows plus the optional dominant ranking hinge."""

import torch

from sigmoid_head.head import SigmoidHead
from sigmoid_head.training.loop import train


def _config(model_path, data, out, **kw):
    from sigmoid_head.training.config import TrainConfig

    base = dict(train_file=str(data), output_dir=str(out), model=str(model_path), lr=3e-2,
                batch_size=16, epochs=4, eval_every=10, patience=0, progress=False,
                validation_fraction=0.15, seed=0, device="cpu")
    return TrainConfig(**{**base, **kw})


def test_rank_loss_adds_the_weighted_hinge_to_the_step_loss():
    from sigmoid_head.backbone import Positions
    from sigmoid_head.dominant import DominantConfig
    from sigmoid_head.head import dominant_margin_loss, sigmoid_bce
    from sigmoid_head.negatives import NegativeSampler, SamplerConfig
    from sigmoid_head.training.step import StepContext, head_loss

    gen = torch.Generator().manual_seed(3)
    head = SigmoidHead.from_lm_head(torch.randn(60, 8, generator=gen))
    pos = Positions(hidden=torch.randn(4, 8, generator=gen), targets=torch.tensor([1, 2, 3, 4]),
                    row=torch.zeros(4, dtype=torch.long), col=torch.arange(4))
    dom = torch.tensor([[1, 7, -1], [9, 8, 2], [-1, -1, -1], [5, -1, -1]])
    sampler = NegativeSampler(SamplerConfig("token_freq", 5), 60, torch.ones(60))
    losses = {}
    for w in (0.0, 0.5):
        ctx = StepContext(None, head, sampler, DominantConfig(), torch.autocast("cpu", enabled=False),
                          rank_weight=w, rank_margin=2.0)
        losses[w], n = head_loss(ctx, pos, dom, torch.Generator().manual_seed(0))
    negatives = sampler(pos.targets, torch.Generator().manual_seed(0), dom)
    bce = sigmoid_bce(head, pos.hidden, pos.targets, negatives).sum()
    hinge = dominant_margin_loss(head, pos.hidden, pos.targets, dom, 2.0).sum()
    assert hinge > 0 and n == 4
    assert torch.allclose(losses[0.0], bce) and torch.allclose(losses[0.5], bce + 0.5 * hinge)


def test_rank_loss_trains_end_to_end_and_is_recorded(tiny_causal_path, tiny_pairs_jsonl,
                                                                 tmp_path):
    plain = train(_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "plain", max_steps=25))
    ranked = train(_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "ranked", max_steps=25,
                           rank_loss_weight=1.0, rank_margin=2.0))
    assert ranked.config.training["rank_loss_weight"] == 1.0
    for m in (plain, ranked):
        assert all(h["val_loss"] == h["val_loss"] for h in m.config.training["history"])  # no NaN
