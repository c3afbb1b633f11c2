"""Sigmoid head: gathered loss equals brute force; save/load round trip; base-model check."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sigmoid_head.head.folder import fingerprint
from sigmoid_head.head.layer import HeadMismatchError, SigmoidHead, sigmoid_bce
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.force_decode import score_examples


@pytest.mark.parametrize("bias", [False, True])
def test_loss_equals_full_vocabulary_bce_restricted_to_sampled_ids(bias):
    gen = torch.Generator().manual_seed(0)
    v, d, n, k = 97, 16, 30, 10
    head = SigmoidHead.from_lm_head(torch.randn(v, d, generator=gen), torch.randn(v, generator=gen),
                                    use_bias=bias)
    hidden = torch.randn(n, d, generator=gen)
    targets = torch.randint(0, v, (n,), generator=gen)
    negatives = torch.stack([torch.randperm(v, generator=gen)[:k] for _ in range(n)])
    negatives = torch.where(negatives == targets[:, None], (negatives + 1) % v, negatives)
    negatives[0, -2:] = -1  # a position short of negatives ignores the missing ones
    got = sigmoid_bce(head, hidden, targets, negatives)
    full = head.full_logits(hidden)  # (N, V) brute force over the whole vocabulary
    labels = torch.zeros(n, v)
    labels[torch.arange(n), targets] = 1.0
    per_token = F.binary_cross_entropy_with_logits(full, labels, reduction="none")
    want = []
    for i in range(n):
        ids = [targets[i].item()] + [x for x in negatives[i].tolist() if x >= 0]
        want.append(per_token[i, ids].mean())
    torch.testing.assert_close(got, torch.stack(want), rtol=1e-5, atol=1e-6)


def test_token_probs_equal_full_sigmoid():
    gen = torch.Generator().manual_seed(1)
    head = SigmoidHead.from_lm_head(torch.randn(50, 8, generator=gen), use_bias=True)
    with torch.no_grad():
        head.bias.normal_(generator=gen)
    hidden, ids = torch.randn(12, 8, generator=gen), torch.randint(0, 50, (12,), generator=gen)
    want = torch.sigmoid(head.full_logits(hidden)).gather(1, ids[:, None]).squeeze(1)
    torch.testing.assert_close(head.token_probs(hidden, ids), want)


def test_head_is_an_untied_copy(tiny_causal_path):
    shm = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    lm = shm.backbone.output_weight()
    assert torch.equal(shm.head.weight, lm.float())
    assert shm.head.weight.data_ptr() != lm.data_ptr()
    with torch.no_grad():
        shm.head.weight.add_(1.0)
    assert not torch.equal(shm.head.weight, lm.float())
    assert shm.head.weight.requires_grad


def test_save_load_round_trip_is_bit_identical(tiny_causal_path, tiny_tokenizer, tmp_path):
    shm = SigmoidHeadModel.from_base(str(tiny_causal_path), bias=True, device="cpu")
    with torch.no_grad():
        shm.head.weight.add_(torch.randn_like(shm.head.weight) * 0.1)
        shm.head.bias.normal_()
    shm.token_counts = torch.arange(shm.config.vocab_size, dtype=torch.float64)
    shm.save_pretrained(tmp_path / "head", training={"lr": 0.5})
    cfg = json.loads((tmp_path / "head" / "head_config.json").read_text())
    assert cfg["training"] == {"lr": 0.5} and cfg["bias"] is True
    assert cfg["fingerprint"] == fingerprint(shm.backbone.output_weight())
    loaded = SigmoidHeadModel.from_pretrained(tmp_path / "head", str(tiny_causal_path), device="cpu")
    assert torch.equal(loaded.head.weight, shm.head.weight)
    assert torch.equal(loaded.head.bias, shm.head.bias)
    assert torch.equal(loaded.token_counts, shm.token_counts)
    ids = tiny_tokenizer("el perro come pan")["input_ids"]
    example = [{"input_ids": ids, "labels": ids}]
    a = score_examples(shm, example, sigmoid_only=True, progress=False)[0].sigmoid_log
    b = score_examples(loaded, example, sigmoid_only=True, progress=False)[0].sigmoid_log
    assert np.array_equal(a, b) and a.size == len(ids) - 1  # every token but the first


def test_loading_onto_another_model_fails_clearly(tiny_causal_path, tiny_gpt2_path, tmp_path):
    SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").save_pretrained(tmp_path / "h")
    with pytest.raises(HeadMismatchError, match="does not fit base model"):
        SigmoidHeadModel.from_pretrained(tmp_path / "h", str(tiny_gpt2_path), device="cpu")


def test_fingerprint_detects_changed_weights_but_not_dtype():
    w = torch.randn(300, 16)
    assert fingerprint(w) == fingerprint(w.to(torch.bfloat16))
    w2 = w.clone()
    w2[0, 0] += 1.0
    assert fingerprint(w) != fingerprint(w2)


def test_missing_files_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="head_config.json"):
        SigmoidHeadModel.from_pretrained(tmp_path, "unused")


def _ranking_example():
    """Head logits by hand: position n's logit of token v is W[v] . h_n."""
    weight = torch.tensor([[0.0, 0], [2, 1], [1, 3], [3, 0], [0, 2], [1, 1]])
    head = SigmoidHead.from_lm_head(weight)
    hidden = torch.tensor([[1.0, 0], [0, 1]])  # logits: [0,2,1,3,0,1] and [0,1,3,0,2,1]
    targets = torch.tensor([1, 4])
    dom = torch.tensor([[1, 3, 2, -1], [4, 2, 1, 5]])
    return head, hidden, targets, dom


def test_dominant_ranking_loss_by_hand():
    from sigmoid_head.head.layer import dominant_ranking_loss

    head, hidden, targets, dom = _ranking_example()
    # position 0, reference 1 (logit 2): token 3 (3) is above it -> 1, token 2 (1) -> 0
    # position 1, reference 4 (logit 2): token 2 (3) -> 1, tokens 1 and 5 (1) -> 0
    # the mean over all 5 pairs: 2 / 5 (a mean per position would give (1/2 + 1/3) / 2)
    assert dominant_ranking_loss(head, hidden, targets, dom).item() == pytest.approx(0.4)
    # margin 1: position 0: 1 - (2 - 3) = 2 and 1 - (2 - 1) = 0; position 1: 2, 0, 0 -> 4 / 5
    assert dominant_ranking_loss(head, hidden, targets, dom, margin=1.0).item() == pytest.approx(0.8)


def test_positions_without_pairs_do_not_dilute_the_ranking_loss():
    from sigmoid_head.head.layer import dominant_ranking_loss

    head, hidden, targets, dom = _ranking_example()
    # three more positions: no dominant token, only the reference, a padded set
    hidden = torch.cat([hidden, torch.tensor([[1.0, 0], [0, 1], [1, 1]])])
    targets = torch.cat([targets, torch.tensor([3, 2, 0])])
    dom = torch.cat([dom, torch.tensor([[-1, -1, -1, -1], [2, -1, -1, -1], [0, -1, -1, -1]])])
    loss = dominant_ranking_loss(head, hidden, targets, dom)
    assert loss.item() == pytest.approx(0.4)
    none = dominant_ranking_loss(head, hidden[2:], targets[2:], dom[2:])
    assert none.item() == 0 and none.requires_grad  # no pair at all: 0, still in the graph


def test_low_rank_head_starts_at_the_lm_head_and_counts_few_parameters():
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(100, 16, generator=gen)
    full, low = SigmoidHead.from_lm_head(weight), SigmoidHead.from_lm_head(weight, rank=4)
    hidden, ids = torch.randn(6, 16, generator=gen), torch.randint(100, (6, 3), generator=gen)
    assert torch.allclose(low.logits(hidden, ids), full.logits(hidden, ids))
    assert low.trainable_parameters() == 4 * (100 + 16)
    assert full.trainable_parameters() == 100 * 16
    assert set(low.state_for_saving()) == {"lora_a", "lora_b"}


def _config(model_path, data, out, **kw):
    from sigmoid_head.training.config import TrainConfig

    base = dict(train_file=str(data), output_dir=str(out), model=str(model_path), lr=3e-2,
                batch_size=16, epochs=4, eval_every=10, patience=0, progress=False,
                validation_fraction=0.15, seed=0, device="cpu")
    return TrainConfig(**{**base, **kw})


def test_low_rank_head_trains_saves_and_loads(tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.training.loop import train

    before = load_backbone(str(tiny_causal_path), device="cpu").output_weight().clone()
    model = train(_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, head_rank=4))
    hist = json.loads((tmp_path / "head_config.json").read_text())["training"]["history"]
    assert hist[-1]["val_loss"] < 0.9 * hist[0]["val_loss"], hist
    assert torch.equal(model.head.weight, before)  # the frozen part never moves
    assert model.head.lora_a.abs().sum() > 0
    loaded = SigmoidHeadModel.from_pretrained(tmp_path, str(tiny_causal_path), device="cpu")
    assert loaded.config.rank == 4
    hidden = torch.randn(5, before.shape[1])
    ids = torch.randint(before.shape[0], (5, 2))
    assert torch.equal(loaded.head.logits(hidden, ids), model.head.logits(hidden, ids))
