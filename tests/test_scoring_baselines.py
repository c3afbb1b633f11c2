"""scoring/baselines.py: self-judge by hand, MC entropy from its samples, CometKiwi hint."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.backbone import load_backbone
from sigmoid_head.scoring.baselines import (
    COMET_HINT,
    comet_kiwi,
    judge_prompts,
    mc_sequence_entropy,
    self_judge,
    yes_no_ids,
)
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_outputs, score_generated


@pytest.fixture(scope="module")
def causal(tiny_causal_path) -> SigmoidHeadModel:
    model = SigmoidHeadModel.from_base(load_backbone(str(tiny_causal_path), device="cpu"))
    with torch.no_grad():
        model.head.weight.mul_(3.0)  # a head unlike the LM's
    return model


def test_yes_no_ids_of_the_tiny_tokenizer(tiny_tokenizer) -> None:
    # hand-checked first tokens: Yes->Y, yes->y, " Yes"->Ġ, " yes"->Ġy, YES->Y;
    # No->N, no->no, " No"->Ġ, " no"->Ġn, NO->N; "Ġ" is claimed by both and dropped
    tok = tiny_tokenizer.convert_tokens_to_ids
    yes, no = yes_no_ids(tiny_tokenizer)
    assert yes == sorted(tok(["Y", "y", "Ġy"]))
    assert no == sorted(tok(["N", "no", "Ġn"]))


def test_self_judge_equals_hand_computation(causal) -> None:
    tok = causal.tokenizer
    sources, cands = ["el perro come", "la casa"], ["the dog eats", "a red car"]
    scores = self_judge(causal, sources, cands, batch_size=1)
    assert all(0.0 <= s <= 1.0 for s in scores)
    yes, no = yes_no_ids(tok)
    for s, c, got in zip(sources, cands, scores, strict=True):
        question = (
            f"Here is a request and a response to it.\n\nRequest:\n{s}\n\nResponse:\n{c}"
            "\n\nIs the response correct and of good quality? Answer with Yes or No."
        )
        text = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
        ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            p = torch.softmax(causal.backbone.model(input_ids=ids).logits[0, -1].double(), -1)
        expected = p[yes].sum() / (p[yes].sum() + p[no].sum())
        assert got == pytest.approx(expected.item(), rel=1e-5)
    batched = self_judge(causal, sources, cands, batch_size=2)  # right padding is harmless
    assert batched == pytest.approx(scores, rel=1e-5)


def test_self_judge_plain_prompt_and_seq2seq(causal, tiny_seq2seq_path) -> None:
    ids = judge_prompts(
        causal.tokenizer, ["x"], ["y"], template="{source}={candidate}", use_chat_template=False
    )[0]
    assert ids == causal.tokenizer("x=y\nAnswer:")["input_ids"]
    s2s = load_backbone(str(tiny_seq2seq_path), device="cpu")
    scores = self_judge(s2s, ["el perro", "la casa grande"], ["the dog", "the big house"])
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_mc_entropy_is_deterministic_and_matches_the_samples(causal) -> None:
    prompts = prompt_ids(
        [{"source": "el perro"}, {"source": "la casa"}], causal.tokenizer, is_encoder_decoder=False
    )
    a = mc_sequence_entropy(causal, prompts, 3, seed=5, max_new_tokens=4, progress=False)
    b = mc_sequence_entropy(causal, prompts, 3, seed=5, max_new_tokens=4, progress=False)
    c = mc_sequence_entropy(causal, prompts, 3, seed=6, max_new_tokens=4, progress=False)
    assert a == b and a != c
    assert set(a[0]) == {"mc_softmax", "mc_sigmoid"}
    assert all(v < 0 for row in a for v in row.values())
    cfg = DecodingConfig(max_new_tokens=4, do_sample=True, top_k=0, num_return_sequences=3, seed=5)
    samples = generate_outputs(causal, prompts, cfg, batch_size=8, progress=False)
    score_generated(causal, samples)  # an independent pass over the same samples
    for i in range(2):
        mine = [g for g in samples if g.input_index == i]
        soft = np.mean([g.scores.softmax_log.sum() for g in mine])
        sig = np.mean([g.scores.sigmoid_log.sum() for g in mine])
        assert a[i]["mc_softmax"] == pytest.approx(soft, rel=1e-4)
        assert a[i]["mc_sigmoid"] == pytest.approx(sig, rel=1e-4)


@pytest.mark.skipif(importlib.util.find_spec("comet") is not None, reason="comet installed")
def test_comet_kiwi_without_comet_says_how_to_install(tmp_path) -> None:
    with pytest.raises(ImportError) as err:
        comet_kiwi(["a"], ["b"], tmp_path / "model.ckpt")
    assert str(err.value) == COMET_HINT and "sigmoid-head[comet]" in COMET_HINT
