"""Eval Self: scores read during generation equal the scores of force-decoding the outputs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_and_score, generate_outputs, score_generated
from sigmoid_head.scoring.rauq import RauqConfig

SOURCES = [
    {"source": "el perro come"},
    {"source": "la casa grande es roja hoy"},
    {"source": "un gato"},
]


@pytest.fixture(scope="module")
def causal(tiny_causal_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_causal_path, seed=2)


@pytest.fixture(scope="module")
def seq2seq(tiny_seq2seq_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_seq2seq_path, seed=2)


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_gpt2_path, seed=2)


@pytest.fixture(scope="module")
def t5(tiny_t5_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_t5_path, seed=2)


def _prompts(model: SigmoidHeadModel, records=SOURCES) -> list[list[int]]:
    return prompt_ids(
        records, model.tokenizer, is_encoder_decoder=model.backbone.is_encoder_decoder
    )


def _assert_same_as_force_decoding(model: SigmoidHeadModel, outs) -> None:
    forced = copy.deepcopy(outs)
    for g in forced:
        g.scores = None
    score_generated(model, forced, batch_size=2)
    for a, b in zip(outs, forced, strict=True):
        assert len(a.output) == a.scores.ids.size == b.scores.ids.size
        np.testing.assert_array_equal(a.scores.ids, b.scores.ids)
        for key in ("sigmoid_log", "softmax_log", "boostedprob", "entropy"):
            np.testing.assert_allclose(
                getattr(a.scores, key), getattr(b.scores, key), rtol=1e-4, atol=1e-5, err_msg=key
            )
        np.testing.assert_array_equal(a.scores.n_dominant, b.scores.n_dominant)


DECODINGS = {
    "greedy": DecodingConfig(max_new_tokens=6),
    "sampling": DecodingConfig(
        max_new_tokens=6, do_sample=True, temperature=0.7, top_p=0.9, num_return_sequences=2, seed=3
    ),
}


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("decoding", sorted(DECODINGS))
def test_generation_scores_equal_force_decoding(which, decoding, request) -> None:
    model = request.getfixturevalue(which)
    cfg = DECODINGS[decoding]
    outs = generate_outputs(model, _prompts(model), cfg, batch_size=2, progress=False)
    assert [g.input_index for g in outs] == sorted(
        list(range(len(SOURCES))) * cfg.num_return_sequences
    )
    _assert_same_as_force_decoding(model, outs)


@pytest.mark.parametrize("which", ["gpt2", "t5"])
def test_generation_scores_equal_force_decoding_other_architectures(which, request) -> None:
    model = request.getfixturevalue(which)
    outs = generate_outputs(model, _prompts(model), DECODINGS["greedy"], progress=False)
    _assert_same_as_force_decoding(model, outs)


def test_eos_ends_scoring_and_is_scored_itself(causal) -> None:
    prompts = _prompts(causal)
    free = generate_outputs(
        causal, prompts, DecodingConfig(max_new_tokens=6, do_sample=True), progress=False
    )
    eos = free[0].output[2]  # pretend this token is the end of sequence
    cfg = DecodingConfig(max_new_tokens=6, do_sample=True, extra={"eos_token_id": eos})
    outs = generate_outputs(causal, prompts, cfg, progress=False)
    first = outs[0]
    assert first.finished and first.output[-1] == eos
    assert first.output == free[0].output[: first.output.index(eos) + 1]
    for g in outs:
        assert eos not in g.output[:-1]
        assert g.finished == (g.output[-1] == eos)
    _assert_same_as_force_decoding(causal, outs)


def test_beam_search_falls_back_to_force_decoding(seq2seq) -> None:
    cfg = DecodingConfig(max_new_tokens=5, num_beams=3)
    outs = generate_outputs(seq2seq, _prompts(seq2seq), cfg, progress=False)
    assert len(outs) == len(SOURCES)
    assert all(g.scores is not None and g.scores.ids.size == len(g.output) for g in outs)


def _rauq_same_as_force_decoding(model: SigmoidHeadModel, outs, rauq: RauqConfig) -> None:
    forced = copy.deepcopy(outs)
    for g in forced:
        g.scores = None
    score_generated(model, forced, batch_size=2, rauq=rauq)
    for a, b in zip(outs, forced, strict=True):
        assert a.scores.rauq_log.shape == (len(a.output),)
        np.testing.assert_allclose(a.scores.rauq_log, b.scores.rauq_log, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("which", ["causal", "gpt2"])
@pytest.mark.parametrize("decoding", sorted(DECODINGS))
def test_rauq_read_during_generation_equals_force_decoding(which, decoding, request) -> None:
    model = request.getfixturevalue(which)
    rauq = RauqConfig(alpha=0.3)
    outs = generate_outputs(model, _prompts(model), DECODINGS[decoding], batch_size=2, rauq=rauq,
                            progress=False)
    assert model.backbone.model.config._attn_implementation == "sdpa"  # given back
    _rauq_same_as_force_decoding(model, outs, rauq)


def test_rauq_counts_only_the_tokens_up_to_eos(causal) -> None:
    """Rows cut by an early EOS: the steps generated after it (padding) must not count in the
    choice of head and layer (checked to fail when they do, with this seed)."""
    prompts, base = _prompts(causal), {"max_new_tokens": 10, "do_sample": True, "seed": 0}
    first = generate_outputs(causal, prompts, DecodingConfig(**base), progress=False)[0].output
    k = next(i for i in range(3, 10) if first[i] not in first[:i])
    cfg = DecodingConfig(**base, extra={"eos_token_id": first[k]})  # row 0 ends early
    outs = generate_outputs(causal, prompts, cfg, batch_size=3, rauq=RauqConfig(), progress=False)
    assert [len(g.output) for g in outs] == [k + 1, 10, 10]
    _rauq_same_as_force_decoding(causal, outs, RauqConfig())


def test_rauq_after_beam_search_comes_from_force_decoding(causal) -> None:
    cfg = DecodingConfig(max_new_tokens=5, num_beams=3)
    outs = generate_outputs(causal, _prompts(causal), cfg, rauq=RauqConfig(), progress=False)
    assert all(g.scores.rauq_log.shape == (len(g.output),) for g in outs)
    assert all(np.all(g.scores.rauq_log <= 0) for g in outs)


def test_sampling_is_deterministic_under_a_seed(causal) -> None:
    cfg = DecodingConfig(max_new_tokens=5, do_sample=True, seed=7)
    a = generate_outputs(causal, _prompts(causal), cfg, progress=False)
    b = generate_outputs(causal, _prompts(causal), cfg, progress=False)
    assert [g.output for g in a] == [g.output for g in b]
    state = torch.random.get_rng_state()
    generate_outputs(causal, _prompts(causal), cfg, progress=False)
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched


def test_chat_prompt_is_the_generation_prompt(causal) -> None:
    msgs = [{"role": "user", "content": "Translate: el perro"}]
    ids = prompt_ids([{"messages": msgs}], causal.tokenizer, is_encoder_decoder=False)[0]
    text = causal.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert ids == causal.tokenizer(text, add_special_tokens=False)["input_ids"]
    pair = prompt_ids([{"source": "el perro"}], causal.tokenizer, is_encoder_decoder=False)[0]
    assert pair == causal.tokenizer("el perro\n")["input_ids"]


def test_generate_and_score_records(causal) -> None:
    cfg = DecodingConfig(max_new_tokens=4, do_sample=True, num_return_sequences=2)
    rows = generate_and_score(
        causal, ["el perro", "la casa"], cfg, with_tokens=True, progress=False
    )
    assert [r["source"] for r in rows] == ["el perro", "el perro", "la casa", "la casa"]
    for r in rows:
        assert isinstance(r["candidate"], str)
        assert r["n_tokens"] == len(r["tokens"]) == 4  # max_new_tokens: finished iff EOS is last
        assert r["finished"] == (r["tokens"][-1]["token"] == causal.tokenizer.eos_token)
        assert 0 <= r["sigmoid"] <= 1 and r["entropy_mean"] > 0
    bare = generate_and_score(
        causal.backbone, ["el perro"], DecodingConfig(max_new_tokens=3), progress=False
    )
    assert "sigmoid" not in bare[0] and "softmax" in bare[0]
