"""scoring/rauq.py: RAUQ's recurrence on hand-made numbers, its layer rule, the attention capture,
and RAUQ in the one scoring path (force-decoding) on tiny random models.

The match with LM-Polygraph's own RAUQ on the same outputs of the real SmolLM2 is in
tests/test_integrations_polygraph.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sigmoid_head.data.prompts import make_examples
from sigmoid_head.lm.backbone import Backbone, load_backbone
from sigmoid_head.scoring.force_decode import score_examples, score_records
from sigmoid_head.scoring.rauq import (
    RauqConfig,
    attention_modules,
    capture_self_attention,
    default_layers,
    rauq_log_confidence,
    rauq_positions,
)

# one sequence of 3 tokens, 2 layers x 2 heads; attn[j, l, h] is the weight of the query
# predicting token j on the token before it (j = 0 has none: its value must not count)
P = [0.5, 0.8, 0.4]
ATTN = [
    [[0.99, 0.0], [0.3, 0.3]],  # j = 0: would make head 0 of layer 0 the most attentive
    [[0.2, 0.9], [1.0, 1.0]],
    [[0.6, 0.1], [1.0, 1.0]],
]


def _hand(p, a, alpha):
    c = [p[0]]
    for j in range(1, len(p)):
        c.append(alpha * p[j] + (1 - alpha) * a[j] * c[-1])
    return c


def _run(p, attn, lengths, alpha):
    f64 = torch.float64
    log_c, layer = rauq_log_confidence(torch.tensor(p, dtype=f64).log(), torch.tensor(attn, dtype=f64),
                                       torch.tensor(lengths), alpha)
    return log_c.numpy(), layer.numpy()


def test_recurrence_on_hand_computed_numbers() -> None:
    log_c, layer = _run([P], [ATTN], [3], 0.5)
    # layer 0: head 1 (mean 0.5 over j = 1, 2 beats head 0's 0.4): c = 0.5, 0.625, 0.23125
    # layer 1: heads tie, the first is taken: c = 0.5, 0.65, 0.525; layer 0 is less confident
    assert layer.tolist() == [0]
    np.testing.assert_allclose(np.exp(log_c[0]), [0.5, 0.625, 0.23125], rtol=1e-12)
    assert np.exp(log_c[0]) == pytest.approx(_hand(P, [0, 0.9, 0.1], 0.5), rel=1e-12)


def test_the_least_confident_layer_is_chosen() -> None:
    attn = [[row[0], [0.0, 0.0]] for row in ATTN]  # layer 1 never attends back
    log_c, layer = _run([P], [attn], [3], 0.5)
    assert layer.tolist() == [1]
    np.testing.assert_allclose(np.exp(log_c[0]), [0.5, 0.4, 0.2], rtol=1e-12)  # alpha * p


def test_alpha_one_is_the_probability_and_alpha_zero_the_attention_product() -> None:
    log_c, _ = _run([P], [ATTN], [3], 1.0)
    np.testing.assert_allclose(log_c[0], np.log(P), rtol=1e-12)
    log_c, _ = _run([P], [ATTN], [3], 0.0)
    # layer 0 head 1: 0.5, 0.5 * 0.9, 0.45 * 0.1; layer 1 head 0: 0.5, 0.5, 0.5
    np.testing.assert_allclose(np.exp(log_c[0]), [0.5, 0.45, 0.045], rtol=1e-12)


def test_padding_past_a_length_changes_nothing() -> None:
    alone, _ = _run([P], [ATTN], [3], 0.3)
    junk = [[[0.0, 1.0], [0.0, 0.0]]] * 2  # would pick other heads and drive c to 0
    batch, _ = _run([P + [1e-9, 1e-9], [0.9] * 5], [ATTN + junk, ATTN + junk], [3, 5], 0.3)
    np.testing.assert_allclose(batch[0, :3], alone[0], rtol=1e-12)
    one, _ = _run([[0.7, 0.1]], [ATTN[:2]], [1], 0.3)
    assert one[0, 0] == pytest.approx(math.log(0.7))  # one token: its probability


def test_flat_positions_equal_the_padded_batch() -> None:
    torch.manual_seed(0)
    lengths = [4, 1, 3]
    row = torch.repeat_interleave(torch.arange(3), torch.tensor(lengths))
    log_p = -torch.rand(8, dtype=torch.float64) * 3
    attn = torch.rand(8, 2, 3)
    flat = rauq_positions(log_p, attn, row, 3, 0.2)
    for b, n in enumerate(lengths):
        sel = row == b
        log_c, _ = rauq_log_confidence(log_p[sel][None], attn[sel][None], torch.tensor([n]), 0.2)
        torch.testing.assert_close(flat[sel], log_c[0], rtol=1e-12, atol=0)


def test_default_layers_are_polygraphs_middle_third_within_the_model() -> None:
    assert default_layers(30) == list(range(10, 21))
    for n in range(3, 65):  # polygraph 0.7.0: range(n // 3, int(np.ceil(n / 3 * 2) + 1))
        assert default_layers(n) == list(range(n // 3, int(np.ceil(n / 3 * 2) + 1))), n
    assert default_layers(2) == [0, 1] and default_layers(1) == [0]  # polygraph indexes past the end


def test_config_defaults_and_checks() -> None:
    assert RauqConfig().weight == 0.2 and RauqConfig(instruct=True).weight == 0.5
    assert RauqConfig(alpha=0.7, instruct=True).weight == 0.7
    assert RauqConfig(layers=[3, 1]).layer_ids(4) == [3, 1]
    with pytest.raises(ValueError, match="alpha"):
        RauqConfig(alpha=1.5)
    with pytest.raises(ValueError, match="layer 4 does not exist"):
        RauqConfig(layers=(4,)).layer_ids(4)


# ----------------------------------------------------------------------------- on tiny models


@pytest.fixture(scope="module")
def causal(tiny_causal_path) -> Backbone:
    return load_backbone(str(tiny_causal_path), device="cpu")


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_path) -> Backbone:
    return load_backbone(str(tiny_gpt2_path), device="cpu")


RECORDS = [{"source": "el perro come", "candidate": "the dog eats the bread today"},
           {"source": "la casa", "candidate": "the house"},
           {"source": "un gato grande", "candidate": "a big cat"}]


def _eager_attentions(backbone: Backbone, ids: list[int]) -> torch.Tensor:
    """(L, H, S, S) attention weights of one sequence from transformers' own output."""
    model = backbone.model
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True)
    finally:
        model.set_attn_implementation(before)
    return torch.stack([a[0] for a in out.attentions]), torch.log_softmax(out.logits[0].float(), -1)


@pytest.mark.parametrize("name", ["causal", "gpt2"])
def test_rauq_from_score_examples_equals_transformers_attentions(name, request) -> None:
    backbone = request.getfixturevalue(name)
    before = backbone.model.config._attn_implementation
    examples = make_examples(RECORDS, backbone.tokenizer, is_encoder_decoder=False,
                             prompt_template="{source}\n")
    cfg = RauqConfig(alpha=0.4)
    scored = score_examples(backbone, examples, batch_size=2, rauq=cfg, progress=False)
    assert backbone.model.config._attn_implementation == before  # switched back
    for ex, ts in zip(examples, scored, strict=True):
        attn, logp = _eager_attentions(backbone, ex["input_ids"])
        start = ex["labels"].index(next(t for t in ex["labels"] if t != -100))
        q = torch.arange(start - 1, len(ex["input_ids"]) - 1)  # queries predicting the labels
        layers = cfg.layer_ids(attn.shape[0])
        a = attn[layers][:, :, q, q].permute(2, 0, 1)  # (T, L, H): each query on its own position
        lp = logp[q, torch.tensor(ex["input_ids"])[q + 1]]
        expect, _ = rauq_log_confidence(lp[None], a[None], torch.tensor([len(q)]), 0.4)
        np.testing.assert_allclose(ts.rauq_log, expect[0].numpy(), rtol=1e-5, atol=1e-6)


def test_rauq_leaves_the_other_scores_alone(causal) -> None:
    plain = score_records(causal, RECORDS, prompt_template="{source}\n", progress=False)
    with_rauq = score_records(causal, RECORDS, prompt_template="{source}\n", rauq=RauqConfig(),
                              with_tokens=True, progress=False)
    for a, b in zip(plain, with_rauq, strict=True):
        assert "rauq" not in a
        for k, v in a.items():
            assert b[k] == pytest.approx(v, rel=1e-5, abs=1e-6), k
        assert b["rauq_mean_log"] == pytest.approx(np.mean(np.log([t["rauq"] for t in b["tokens"]])))
        assert 0 < b["rauq_min"] <= b["rauq"] ** (1 / b["n_tokens"]) <= 1
        assert all(0 < w["rauq"] <= 1 for w in b["words"])


def test_the_capture_keeps_one_diagonal_per_selected_layer(causal) -> None:
    ids = make_examples(RECORDS[:1], causal.tokenizer, is_encoder_decoder=False,
                        prompt_template="{source}\n")[0]["input_ids"]
    attn, _ = _eager_attentions(causal, ids)
    with capture_self_attention(causal.model, RauqConfig(layers=(1,))) as rec, torch.no_grad():
        causal.model(torch.tensor([ids]))
    assert rec.layers == [1] and len(rec.calls[0]) == 1
    torch.testing.assert_close(rec.calls[0][0][0], torch.diagonal(attn[1], dim1=-2, dim2=-1))


def test_encoder_decoder_models_are_refused(tiny_seq2seq_path) -> None:
    backbone = load_backbone(str(tiny_seq2seq_path), device="cpu")
    with pytest.raises(ValueError, match="decoder-only"):
        attention_modules(backbone.model)
    examples = make_examples(RECORDS[:1], backbone.tokenizer, is_encoder_decoder=True)
    with pytest.raises(ValueError, match="decoder-only"):
        score_examples(backbone, examples, rauq=RauqConfig(), progress=False)


def test_sigmoid_only_cannot_give_rauq(causal) -> None:
    from sigmoid_head.head.model import SigmoidHeadModel

    model = SigmoidHeadModel.from_base(causal)
    with pytest.raises(ValueError, match="softmax"):
        score_examples(model, [], sigmoid_only=True, rauq=RauqConfig(), progress=False)


def test_generation_steps_that_do_not_add_one_key_each_are_refused() -> None:
    from sigmoid_head.scoring.rauq import AttentionDiagonals

    rec = AttentionDiagonals([0])
    hook = rec.hook(0)
    for keys in (5, 6, 7):  # a prompt of 5, then one new key per step
        hook(None, (), (None, torch.rand(2, 3, 1 if keys > 5 else 5, keys)))
    assert rec.per_step().shape == (2, 3, 1, 3)
    rec.clear()
    for _ in range(3):  # a static cache: the same width at every step
        hook(None, (), (None, torch.rand(2, 3, 1, 8)))
    assert rec.per_step() is None
    with pytest.raises(RuntimeError, match="eager"):
        hook(None, (), (torch.rand(2, 3, 4), None))  # SDPA gives no weights
