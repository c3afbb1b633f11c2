"""Head-guided decoding (``head_weight``, ``head_mask_below``; scoring/guidance.py)."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.backbone import on_head_input
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_outputs, score_generated
from sigmoid_head.scoring.streaming import OutputEvent, stream_generate

SOURCES = [{"source": "el perro come"}, {"source": "la casa grande es roja hoy"},
           {"source": "un gato"}]
GREEDY = DecodingConfig(max_new_tokens=8)
SAMPLING = DecodingConfig(max_new_tokens=8, do_sample=True, temperature=1.5,
                          num_return_sequences=3, seed=4)


@pytest.fixture(scope="module")
def causal(tiny_causal_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_causal_path, seed=2)


@pytest.fixture(scope="module")
def seq2seq(tiny_seq2seq_path, perturbed_model) -> SigmoidHeadModel:
    return perturbed_model(tiny_seq2seq_path, seed=2)


def _prompts(model) -> list[list[int]]:
    return prompt_ids(SOURCES, model.tokenizer, is_encoder_decoder=model.backbone.is_encoder_decoder)


def _guided(cfg: DecodingConfig, **kw) -> DecodingConfig:
    return dataclasses.replace(cfg, **kw)


def _hf_generate(model, prompt: list[int], cfg: DecodingConfig) -> list[list[int]]:
    """Plain Hugging Face ``generate`` for one prompt: its outputs, cut after the first EOS."""
    backbone = model.backbone
    ids = torch.tensor([prompt])
    out = backbone.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                  pad_token_id=model.tokenizer.pad_token_id, **cfg.generate_kwargs())
    rows = out[:, 1:] if backbone.is_encoder_decoder else out[:, ids.shape[1]:]
    eos = model.tokenizer.eos_token_id
    cut = []
    for row in rows.tolist():
        cut.append(row[: row.index(eos) + 1] if eos in row else row)
    return cut


def _step_vectors(model, prompt: list[int], output: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, V) LM log-softmax and (T, V) head log-sigmoid at the steps that chose ``output``,
    from one plain forward pass over the whole sequence."""
    backbone, seen = model.backbone, []
    with torch.no_grad(), on_head_input(backbone.model, lambda h: seen.append(h)):
        if backbone.is_encoder_decoder:
            start = backbone.model.config.decoder_start_token_id
            res = backbone.model(input_ids=torch.tensor([prompt]),
                                 decoder_input_ids=torch.tensor([[start] + output[:-1]]))
            logits, hidden = res.logits[0], seen[-1][0]  # (T, V), (T, d)
        else:
            res = backbone.model(input_ids=torch.tensor([prompt + output[:-1]]))
            at = slice(len(prompt) - 1, len(prompt) + len(output) - 1)
            logits, hidden = res.logits[0, at], seen[-1][0, at]
        return F.log_softmax(logits.float(), -1), F.logsigmoid(model.head.full_logits(hidden).float())


def _forced_eos(model, g, cfg: DecodingConfig) -> bool:
    """Whether ``g`` ends on the EOS that the model's own rule forces at max length (Marian's
    ``forced_eos_token_id``, a processor that runs before the head's, which then keeps it)."""
    forced = model.backbone.model.generation_config.forced_eos_token_id
    return forced is not None and len(g.output) == cfg.max_new_tokens and g.output[-1] == forced


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("cfg", [GREEDY, SAMPLING], ids=["greedy", "sampling"])
def test_weight_zero_is_plain_generation_byte_for_byte(which, cfg, request):
    model = request.getfixturevalue(which)
    prompts = _prompts(model)
    off = _guided(cfg, head_weight=0.0, head_mask_below=0.0)
    outs = generate_outputs(model, prompts, off, batch_size=1, progress=False)
    torch.manual_seed(cfg.seed)  # generate_outputs seeds the same way, inputs in order
    plain = [row for p in prompts for row in _hf_generate(model, p, cfg)]
    assert [g.output for g in outs] == plain


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
def test_each_guided_greedy_token_is_the_argmax_of_the_mixed_scores(which, request):
    """Step by step, from an independent forward pass: the chosen token maximises
    log softmax + w * log sigmoid, and the head's probabilities of the chosen tokens rise."""
    model, w = request.getfixturevalue(which), 3.0
    prompts = _prompts(model)
    plain = generate_outputs(model, prompts, GREEDY, batch_size=1, progress=False)
    guided = generate_outputs(model, prompts, _guided(GREEDY, head_weight=w), batch_size=1,
                              progress=False)
    assert [g.output for g in guided] != [g.output for g in plain]
    for p, g in zip(prompts, guided, strict=True):
        lm, head = _step_vectors(model, p, g.output)
        mixed = lm + w * head  # (T, V)
        chosen = mixed.gather(1, torch.tensor(g.output)[:, None]).squeeze(1)
        if _forced_eos(model, g, GREEDY):
            mixed, chosen = mixed[:-1], chosen[:-1]
        assert bool((chosen >= mixed.max(1).values - 1e-4).all())
    mean_p = [np.mean([np.exp(g.scores.sigmoid_log).mean() for g in outs]) for outs in (plain, guided)]
    assert mean_p[1] > mean_p[0] + 0.1, mean_p


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("cfg", [GREEDY, SAMPLING], ids=["greedy", "sampling"])
def test_a_large_weight_follows_the_heads_known_preference(which, cfg, request, tiny_causal_path,
                                                           tiny_seq2seq_path):
    """A head with a bias that prefers one token everywhere makes every chosen token that one."""
    path = tiny_causal_path if which == "causal" else tiny_seq2seq_path
    model = SigmoidHeadModel.from_base(str(path), bias=True, device="cpu")
    liked = model.tokenizer(" dog", add_special_tokens=False)["input_ids"][0]
    with torch.no_grad():
        model.head.bias.fill_(-30.0)
        model.head.bias[liked] = 30.0
    prompts = _prompts(model)
    plain = generate_outputs(model, prompts, cfg, progress=False)
    assert any(t != liked for g in plain for t in g.output)
    for kw in ({"head_weight": 10.0}, {"head_mask_below": 0.5}):
        outs = generate_outputs(model, prompts, _guided(cfg, **kw), progress=False)
        for g in outs:
            n = cfg.max_new_tokens - _forced_eos(model, g, cfg)
            assert g.output[:n] == [liked] * n and len(g.output) == cfg.max_new_tokens, kw


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("cfg", [GREEDY, SAMPLING], ids=["greedy", "sampling"])
def test_masking_never_emits_a_token_the_head_rejects(which, cfg, request):
    model, p = request.getfixturevalue(which), 0.85
    prompts = _prompts(model)
    free = generate_outputs(model, prompts, cfg, progress=False)
    assert min(np.exp(g.scores.sigmoid_log).min() for g in free) < p  # the mask has work to do
    outs = generate_outputs(model, prompts, _guided(cfg, head_mask_below=p), progress=False)
    for g in outs:  # the head's probability of every chosen token, read during generation
        probs = np.exp(g.scores.sigmoid_log)
        if _forced_eos(model, g, cfg):
            probs = probs[:-1]
        assert probs.min() >= p - 1e-6, g.output


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("cfg", [GREEDY, SAMPLING], ids=["greedy", "sampling"])
def test_guided_outputs_are_scored_as_force_decoding_scores_them(which, cfg, request):
    """The scores read during guided generation are the LM's and the head's own."""
    model = request.getfixturevalue(which)
    outs = generate_outputs(model, _prompts(model), _guided(cfg, head_weight=2.0, head_mask_below=0.3),
                            batch_size=2, progress=False)
    forced = copy.deepcopy(outs)
    for g in forced:
        g.scores = None
    score_generated(model, forced, batch_size=2)
    for a, b in zip(outs, forced, strict=True):
        np.testing.assert_array_equal(a.scores.ids, b.scores.ids)
        for key in ("sigmoid_log", "softmax_log", "boostedprob", "entropy"):
            np.testing.assert_allclose(getattr(a.scores, key), getattr(b.scores, key), rtol=1e-4,
                                       atol=1e-5, err_msg=key)


def test_streaming_guides_as_generate_does(causal):
    cfg = _guided(GREEDY, head_weight=3.0, head_mask_below=0.2)
    streamed = [e.generated.output for e in stream_generate(causal, SOURCES, cfg)
                if isinstance(e, OutputEvent)]
    assert streamed == [g.output for g in generate_outputs(causal, _prompts(causal), cfg,
                                                           batch_size=1, progress=False)]


def test_guidance_needs_a_head_and_valid_settings(causal):
    with pytest.raises(ValueError, match="needs a Sigmoid Head"):
        generate_outputs(causal.backbone, _prompts(causal), _guided(GREEDY, head_weight=1.0),
                         progress=False)
    for bad in ({"head_weight": -1.0}, {"head_mask_below": 1.0}, {"head_mask_below": -0.1}):
        with pytest.raises(ValueError, match="head_weight"):
            DecodingConfig(**bad)


@pytest.mark.parametrize("which", ["causal", "seq2seq"])
@pytest.mark.parametrize("kw", [{"head_weight": 0.5}, {"head_weight": 3.0},
                                {"head_weight": 1.0, "head_mask_below": 0.6},
                                {"head_mask_below": 0.97}, {"head_weight": 1e4}],
                         ids=["w0.5", "w3", "w1+mask", "strict-mask", "huge-w"])
def test_greedy_guidance_scoring_candidates_only_chooses_what_the_full_mix_chooses(
        which, kw, request, monkeypatch):
    """A greedy step scores the head on the CANDIDATES best tokens when they bound the winner
    and on the whole vocabulary otherwise: the outputs equal the full-vocabulary path's."""
    from sigmoid_head.scoring import decoding, guidance

    model = request.getfixturevalue(which)
    prompts = _prompts(model)
    cfg = _guided(GREEDY, max_new_tokens=12, **kw)
    made = []
    real_init = guidance.HeadGuidance.__init__

    def keep(self, *a, **k):
        real_init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(guidance.HeadGuidance, "__init__", keep)
    fast = generate_outputs(model, prompts, cfg, batch_size=2, progress=False)
    assert made and all(g.argmax_only for g in made)
    fast_full_steps = sum(g.full_steps for g in made)
    monkeypatch.setattr(decoding, "argmax_only", lambda *a, **k: False)
    made.clear()
    full = generate_outputs(model, prompts, cfg, batch_size=2, progress=False)
    assert made and not any(g.argmax_only for g in made)
    assert [g.output for g in fast] == [g.output for g in full]
    steps = sum(g.full_steps for g in made)  # every step of the full path scores everything
    if kw.get("head_weight", 0) < 100 and kw.get("head_mask_below", 0) < 0.9:
        assert fast_full_steps < steps / 4, (fast_full_steps, steps)
    else:  # candidates rarely bound the winner: the fallback has to carry these
        assert fast_full_steps > 0


def test_sampling_and_beams_score_the_whole_vocabulary(causal):
    from sigmoid_head.scoring.guidance import argmax_only

    assert argmax_only(False, 1, {"min_new_tokens": 3})
    assert not argmax_only(True, 1, {})
    assert not argmax_only(False, 3, {})
    assert not argmax_only(False, 1, {"penalty_alpha": 0.6, "top_k": 4})
