"""scoring/force_decode.py: the one force-decode path against plain HF forward passes; its options."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sigmoid_head.data.prompts import ScoreInputError
from sigmoid_head.scoring.force_decode import score_examples, score_pairs, score_records


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_softmax_logprob_equals_hf_loss(which, request, candidate_examples, scored_pairs) -> None:
    model = request.getfixturevalue(which)
    examples = candidate_examples(model)
    records = score_pairs(model, *scored_pairs, batch_size=3, progress=False)
    hf = model.backbone.model
    for ex, rec in zip(examples, records, strict=True):
        ids = torch.tensor([ex["input_ids"]])
        labels = torch.tensor([ex["labels"]])
        with torch.no_grad():
            loss = hf(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
        n = int((labels != -100).sum())
        assert rec["n_tokens"] == n
        assert rec["softmax_logprob"] == pytest.approx(-loss.item() * n, rel=1e-5)
        assert rec["softmax"] == pytest.approx(math.exp(-loss.item() * n), rel=1e-4)


def test_batching_keeps_input_order_and_values(causal, candidate_examples) -> None:
    examples = candidate_examples(causal)
    one = score_examples(causal, examples, batch_size=1, progress=False)
    many = score_examples(causal, examples, max_tokens=40, progress=False)
    for a, b in zip(one, many, strict=True):
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_allclose(a.sigmoid_log, b.sigmoid_log, atol=1e-5)
        np.testing.assert_allclose(a.softmax_log, b.softmax_log, atol=1e-5)


def test_backbone_only_has_no_sigmoid_columns(causal, scored_pairs) -> None:
    rec = score_pairs(causal.backbone, scored_pairs[0][:1], scored_pairs[1][:1], progress=False)[0]
    assert "sigmoid" not in rec and "softmax" in rec and "boostedprob_min" in rec
    with_head = score_pairs(causal, scored_pairs[0][:1], scored_pairs[1][:1], progress=False)[0]
    assert with_head["softmax"] == pytest.approx(rec["softmax"])
    expected = {
        f"{m}{s}"
        for m in ("sigmoid", "softmax", "boostedprob")
        for s in ("", "_logprob", "_mean_log", "_min")
    }
    assert expected | {"entropy_mean", "dominant_mean", "n_tokens"} == set(with_head)


def test_chat_scores_only_the_candidate_turn(causal) -> None:
    msgs = [
        {"role": "user", "content": "Translate: el perro"},
        {"role": "assistant", "content": "the dog"},
        {"role": "user", "content": "Translate: la casa"},
    ]
    rec = score_records(
        causal, [{"messages": msgs, "candidate": "the house"}], with_tokens=True, progress=False
    )[0]
    assert [t["token"] for t in rec["tokens"]] == ["the", "Ġhouse", "<|im_end|>"]
    assert [w["word"] for w in rec["words"]] == ["the", "house"]


def test_input_validation(causal) -> None:
    with pytest.raises(ScoreInputError, match="2 sources but 1 candidates"):
        score_pairs(causal, ["a", "b"], ["x"])
    with pytest.raises(ScoreInputError, match="record 2: the candidate is empty"):
        score_pairs(causal, ["a", "b"], ["x", "  "])
    with pytest.raises(ScoreInputError, match="needs a string 'candidate'"):
        score_records(causal, [{"source": "a"}])
    with pytest.raises(ScoreInputError, match="must not end with an assistant"):
        score_records(
            causal, [{"messages": [{"role": "assistant", "content": "x"}], "candidate": "y"}]
        )
    with pytest.raises(ScoreInputError, match="no records"):
        score_records(causal, [])


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_sigmoid_only_scoring_equals_full_scoring(which, request, candidate_examples) -> None:
    model = request.getfixturevalue(which)
    examples = candidate_examples(model)
    full = score_examples(model, examples, batch_size=3, progress=False)
    only = score_examples(model, examples, batch_size=2, sigmoid_only=True, progress=False)
    for a, b in zip(full, only, strict=True):
        np.testing.assert_allclose(a.sigmoid_log, b.sigmoid_log, rtol=1e-6, atol=1e-7)
        assert b.softmax_log is None and b.entropy is None
    with pytest.raises(TypeError):
        score_examples(model.backbone, examples, sigmoid_only=True)
