"""The training step's loss: BCE over gathered rows plus the optional dominant ranking hinge."""

import pytest
import torch

from sigmoid_head.head.layer import SigmoidHead
from sigmoid_head.training.loop import train


def _config(model_path, data, out, **kw):
    from sigmoid_head.training.config import TrainConfig

    base = dict(train_file=str(data), output_dir=str(out), model=str(model_path), lr=3e-2,
                batch_size=16, epochs=4, eval_every=10, patience=0, progress=False,
                validation_fraction=0.15, seed=0, device="cpu")
    return TrainConfig(**{**base, **kw})


def _step_losses(avoid_dominant: bool, margin: float = 0.0):
    from sigmoid_head.head.layer import sigmoid_bce
    from sigmoid_head.lm.backbone import Positions
    from sigmoid_head.lm.dominant import DominantConfig
    from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig
    from sigmoid_head.training.step import StepContext, head_loss

    gen = torch.Generator().manual_seed(3)
    head = SigmoidHead.from_lm_head(torch.randn(60, 8, generator=gen))
    pos = Positions(hidden=torch.randn(4, 8, generator=gen), targets=torch.tensor([1, 2, 3, 4]),
                    row=torch.zeros(4, dtype=torch.long), col=torch.arange(4))
    dom = torch.tensor([[1, 7, -1], [9, 8, 2], [-1, -1, -1], [5, -1, -1]])
    sampler = NegativeSampler(SamplerConfig("token_freq", 5, avoid_dominant=avoid_dominant), 60,
                              torch.ones(60))
    losses = {}
    for w in (0.0, 0.5):
        ctx = StepContext(None, head, sampler, DominantConfig(), torch.autocast("cpu", enabled=False),
                          rank_weight=w, rank_margin=margin)
        losses[w], n = head_loss(ctx, pos, dom, torch.Generator().manual_seed(0))
    negatives = sampler(pos.targets, torch.Generator().manual_seed(0), dom)
    bce = sigmoid_bce(head, pos.hidden, pos.targets, negatives).sum()
    return head, pos, dom, losses, bce, n


def test_rank_loss_adds_the_weighted_pair_mean_per_position():
    from sigmoid_head.head.layer import dominant_ranking_loss

    head, pos, dom, losses, bce, n = _step_losses(True, margin=2.0)
    pair_mean = dominant_ranking_loss(head, pos.hidden, pos.targets, dom, 2.0)
    assert pair_mean > 0 and n == 4
    assert torch.allclose(losses[0.0], bce)
    # the loop divides by the positions: mean BCE + 0.5 * the mean over the batch's 4 pairs
    assert torch.allclose(losses[0.5] / n, bce / n + 0.5 * pair_mean)


def test_rank_loss_applies_only_with_avoid_dominant_sampling(tmp_path):
    from sigmoid_head.training.config import TrainConfig

    _, _, _, losses, bce, _ = _step_losses(False, margin=2.0)
    assert torch.allclose(losses[0.5], bce) and torch.allclose(losses[0.0], bce)
    with pytest.raises(ValueError, match="needs avoid_dominant"):
        TrainConfig(train_file="x.jsonl", output_dir=str(tmp_path), rank_loss_weight=1.0,
                    avoid_dominant=False)
    defaults = TrainConfig.defaults()
    assert (defaults["rank_margin"], defaults["rank_loss_weight"]) == (0.0, 0.0)  # the authors' margin


def test_rank_loss_trains_end_to_end_and_is_recorded(tiny_causal_path, tiny_pairs_jsonl,
                                                                 tmp_path):
    plain = train(_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "plain", max_steps=25))
    ranked = train(_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "ranked", max_steps=25,
                           rank_loss_weight=1.0, rank_margin=2.0))
    assert ranked.config.training["rank_loss_weight"] == 1.0
    for m in (plain, ranked):
        assert all(h["val_loss"] == h["val_loss"] for h in m.config.training["history"])  # no NaN


@pytest.mark.parametrize("profile", ["cpu", "cuda"])
def test_token_freq_step_makes_its_logits_in_blocks_with_the_one_pass_loss(
        tiny_causal_path, monkeypatch, profile):
    """The token_freq step keeps only the dominant sets of its logits, made a block at a
    time: the loss (dominant sets, negatives, BCE) equals the one-block step's, and no
    block of logits is wider than the budget."""
    from contextlib import nullcontext

    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.lm import profiles
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.lm.dominant import DominantConfig
    from sigmoid_head.lm.profiles import device_profile
    from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig
    from sigmoid_head.training.step import StepContext, batch_loss

    model = SigmoidHeadModel.from_base(load_backbone(str(tiny_causal_path), device="cpu"))
    bb, v = model.backbone, model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, v, (6, 20), generator=gen)
    labels = ids.clone()
    labels[:, :4] = -100
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    sampler = NegativeSampler(SamplerConfig("token_freq"), v, torch.rand(v, generator=gen) + 0.1)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    widths = []
    lm_logits = bb.lm_logits

    def spy(h):
        widths.append(h.shape[0])
        return lm_logits(h)

    monkeypatch.setattr(bb, "lm_logits", spy)
    with device_profile(profile):
        monkeypatch.setattr(profiles, "LOGIT_ROWS", 1 << 40)
        monkeypatch.setattr(profiles, "LOGIT_BYTES", 1 << 40)
        one, n = batch_loss(ctx, batch, torch.Generator().manual_seed(1))
        assert widths == [n]  # one block: every trained position at once
        widths.clear()
        monkeypatch.setattr(profiles, "LOGIT_ROWS", 16)
        monkeypatch.setattr(profiles, "LOGIT_BYTES", 4 * v * 16)
        blocks, n2 = batch_loss(ctx, batch, torch.Generator().manual_seed(1))
    assert n2 == n == 6 * 16 and max(widths) == 16 and sum(widths) == n
    torch.testing.assert_close(blocks, one, rtol=1e-6, atol=0)
