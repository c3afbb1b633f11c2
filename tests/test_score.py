"""Eval Other scoring and aggregation: every number against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sigmoid_head.backbone import load_backbone
from sigmoid_head.data.batching import Collator
from sigmoid_head.data.prompts import ScoreInputError, make_examples
from sigmoid_head.model import SigmoidHeadModel
from sigmoid_head.scoring.aggregate import (
    group_words,
    sequence_scores,
    token_spans,
    word_scores,
    words_of,
)
from sigmoid_head.scoring.force_decode import score_examples, score_pairs, score_records
from sigmoid_head.scoring.token_scores import entropy as softmax_entropy

SOURCES = ["el perro come el pan", "la casa", "el niño grande lee un libro hoy", "una mujer"]
CANDS = ["the dog eats the bread", "the house", "the big boy reads a book today", "a woman"]


def perturbed_model(path) -> SigmoidHeadModel:
    """A head that differs from the LM head, so sigmoid and softmax scores differ."""
    model = SigmoidHeadModel.from_base(load_backbone(str(path), device="cpu"))
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        model.head.weight.add_(0.2 * torch.randn(model.head.weight.shape, generator=gen))
    return model


@pytest.fixture(scope="module")
def causal(tiny_causal_path) -> SigmoidHeadModel:
    return perturbed_model(tiny_causal_path)


@pytest.fixture(scope="module")
def seq2seq(tiny_seq2seq_path) -> SigmoidHeadModel:
    return perturbed_model(tiny_seq2seq_path)


def _examples(model: SigmoidHeadModel) -> list[dict]:
    records = [{"source": s, "candidate": c} for s, c in zip(SOURCES, CANDS, strict=True)]
    return make_examples(
        records, model.tokenizer, is_encoder_decoder=model.backbone.is_encoder_decoder
    )


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_gathered_sigmoid_equals_full_vocabulary_sigmoid(which, request) -> None:
    model = request.getfixturevalue(which)
    examples = _examples(model)
    scored = score_examples(model, examples, batch_size=2, progress=False)
    batch = Collator(model.tokenizer.pad_token_id, model.backbone.is_encoder_decoder)(examples)
    pos = model.backbone.positions(batch, with_logits=False)
    with torch.no_grad():
        full = torch.sigmoid(model.head.full_logits(pos.hidden).float())  # (N, V)
    expected = full[torch.arange(len(pos.targets)), pos.targets]
    for b, ts in enumerate(scored):
        sel = pos.row == b
        np.testing.assert_array_equal(ts.ids, pos.targets[sel].numpy())
        np.testing.assert_allclose(np.exp(ts.sigmoid_log), expected[sel].numpy(), rtol=1e-5)


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_softmax_logprob_equals_hf_loss(which, request) -> None:
    model = request.getfixturevalue(which)
    examples = _examples(model)
    records = score_pairs(model, SOURCES, CANDS, batch_size=3, progress=False)
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


def test_entropy_is_positive_and_matches_direct_computation(causal) -> None:
    examples = _examples(causal)
    scored = score_examples(causal, examples[:1], progress=False)[0]
    ids = torch.tensor([examples[0]["input_ids"]])
    with torch.no_grad():
        logits = causal.backbone.model(input_ids=ids).logits[0].double()  # (T, V)
    p = torch.softmax(logits, -1)
    direct = -(p * p.log()).sum(-1)  # position t predicts token t + 1
    labelled = [t - 1 for t, lab in enumerate(examples[0]["labels"]) if lab != -100]
    np.testing.assert_allclose(scored.entropy, direct[labelled].numpy(), rtol=1e-5)
    assert np.all(scored.entropy > 0)


def test_batching_keeps_input_order_and_values(causal) -> None:
    examples = _examples(causal)
    one = score_examples(causal, examples, batch_size=1, progress=False)
    many = score_examples(causal, examples, max_tokens=40, progress=False)
    for a, b in zip(one, many, strict=True):
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_allclose(a.sigmoid_log, b.sigmoid_log, atol=1e-5)
        np.testing.assert_allclose(a.softmax_log, b.softmax_log, atol=1e-5)


def test_backbone_only_has_no_sigmoid_columns(causal) -> None:
    rec = score_pairs(causal.backbone, SOURCES[:1], CANDS[:1], progress=False)[0]
    assert "sigmoid" not in rec and "softmax" in rec and "boostedprob_min" in rec
    with_head = score_pairs(causal, SOURCES[:1], CANDS[:1], progress=False)[0]
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


# ------------------------------------------------------------------ aggregation


def test_sequence_scores_in_log_space() -> None:
    lp = np.log(np.array([0.5, 0.25, 0.8]))
    out = sequence_scores("m", lp)
    assert out["m"] == pytest.approx(0.1)
    assert out["m_logprob"] == pytest.approx(math.log(0.1))
    assert out["m_mean_log"] == pytest.approx(math.log(0.1) / 3)
    assert out["m_min"] == pytest.approx(0.25)
    long = sequence_scores("m", np.full(5000, -1.0))  # product underflows, the log does not
    assert long["m"] == 0.0 and long["m_logprob"] == pytest.approx(-5000.0)


def test_word_grouping_on_the_tiny_tokenizer(tiny_tokenizer) -> None:
    text = "the big dog eats  bread.\nNow"
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    # hand-checked: the | Ġbig | Ġdog | Ġeats | Ġ | Ġbread | . | Ċ | N | ow
    assert tiny_tokenizer.convert_ids_to_tokens(ids) == [
        "the",
        "Ġbig",
        "Ġdog",
        "Ġeats",
        "Ġ",
        "Ġbread",
        ".",
        "Ċ",
        "N",
        "ow",
    ]
    words = words_of(tiny_tokenizer, ids + [tiny_tokenizer.eos_token_id], text)
    assert [(w.text, w.tokens) for w in words] == [
        ("the", [0]),
        ("big", [1]),
        ("dog", [2]),
        ("eats", [3]),
        ("bread.", [4, 5, 6]),
        ("Now", [7, 8, 9]),
    ]
    probs = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.5, 0.5, 0.1])
    assert word_scores(words, probs) == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.06, 0.05])
    assert word_scores(words, probs, "min") == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.3, 0.2])


def test_word_spans_fall_back_to_decoding(tiny_tokenizer) -> None:
    ids = tiny_tokenizer("the dog", add_special_tokens=False)["input_ids"]
    spelled, spans = token_spans(tiny_tokenizer, ids, text=None)
    assert spelled == "the dog" and spans == [(0, 3), (3, 7)]
    assert group_words(spelled, spans) == [[0], [1]]
    bos_first = [tiny_tokenizer.bos_token_id, *ids]  # seq2seq labels start with <s>
    assert [w.tokens for w in words_of(tiny_tokenizer, bos_first, "the dog")] == [[1], [2]]


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_sigmoid_only_scoring_equals_full_scoring(which, request) -> None:
    model = request.getfixturevalue(which)
    examples = _examples(model)
    full = score_examples(model, examples, batch_size=3, progress=False)
    only = score_examples(model, examples, batch_size=2, sigmoid_only=True, progress=False)
    for a, b in zip(full, only, strict=True):
        np.testing.assert_allclose(a.sigmoid_log, b.sigmoid_log, rtol=1e-6, atol=1e-7)
        assert b.softmax_log is None and b.entropy is None
    with pytest.raises(TypeError):
        score_examples(model.backbone, examples, sigmoid_only=True)


def test_entropy_handles_masked_tokens() -> None:
    z = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    z[1, :10] = -math.inf  # masked tokens: p = 0, log p = -inf
    logp = torch.log_softmax(z, -1)
    p = logp.exp()
    direct = -torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)
    torch.testing.assert_close(softmax_entropy(logp), direct)
