"""Sigmoid head: gathered loss equals brute force; save/load round trip; base-model check."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sigmoid_head.head import HeadMismatchError, SigmoidHead, sigmoid_bce
from sigmoid_head.head_io import fingerprint
from sigmoid_head.model import SigmoidHeadModel
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
