"""eval_self_study's per-token features, checked against a brute-force forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recipes.bible import eval_self_study as study


@pytest.fixture(scope="module")
def features(tiny_seq2seq_path, perturbed_model, scored_pairs):
    model = perturbed_model(tiny_seq2seq_path)
    records = [{"source": s, "candidate": c} for s, c in zip(*scored_pairs, strict=True)]
    render = {"prompt_template": "{source}", "use_chat_template": False}
    return model, records, study.token_study(model.backbone, {"h": model}, records, render, batch=3)


def test_token_features_match_brute_force(features):
    model, records, tok = features
    from sigmoid_head.data.prompts import make_examples

    seq = tok["seq"]
    assert sorted(set(seq.tolist())) == list(range(len(records)))
    examples = make_examples(records, model.backbone.tokenizer, is_encoder_decoder=True)
    for i, ex in enumerate(examples):  # one record at a time: no padding
        labels = torch.tensor([ex["labels"]])
        with torch.no_grad():
            out = model.backbone.model(input_ids=torch.tensor([ex["input_ids"]]), labels=labels,
                                       output_hidden_states=True)
        logp = torch.log_softmax(out.logits[0].double(), -1)  # (T, V)
        hidden = out.decoder_hidden_states[-1][0]  # (T, d)
        with torch.no_grad():
            head = torch.sigmoid(model.head.full_logits(hidden).double())  # (T, V)
        t = labels[0]
        rows = seq == i
        assert rows.sum() == t.numel()
        np.testing.assert_allclose(tok["softmax"][rows], logp.gather(1, t[:, None])[:, 0].numpy(), atol=1e-4)
        valid = torch.log((logp.exp() * head).sum(-1)).numpy()
        np.testing.assert_allclose(tok["validmass:h"][rows], valid, atol=1e-4)
        np.testing.assert_allclose(tok["headmax:h"][rows], torch.log(head.amax(-1)).numpy(), atol=1e-4)
        np.testing.assert_allclose(study.log_sigmoid(tok["logit:h"][rows]),
                                   torch.log(head.gather(1, t[:, None])[:, 0]).numpy(), atol=1e-4)


def test_aggregate_reads_every_method(features):
    _, records, tok = features
    seq = study.aggregate(tok, len(records))
    for m in ("softmax", "boostedprob", "sigmoid:h", "rankpres:h", "validmass:h", "headmax:h"):
        counts = np.bincount(tok["seq"])
        v = study.token_log_scores(tok)[m]
        np.testing.assert_allclose(seq[f"{m}@prod"], np.bincount(tok["seq"], weights=v))
        np.testing.assert_allclose(seq[f"{m}@mean"], seq[f"{m}@prod"] / counts)
    # the expected validity of a sampled token is at most 1 and at least the chosen token's share
    assert (tok["validmass:h"] <= 1e-9).all()
    assert (tok["validmass:h"] >= tok["softmax"] + study.log_sigmoid(tok["logit:h"]) - 1e-6).all()


def test_full_vocab_limits_the_whole_vocabulary_scores(features):
    """Heads left out of ``full_vocab`` keep their token scores but get no rankpres/validmass/headmax."""
    model, records, tok = features
    render = {"prompt_template": "{source}", "use_chat_template": False}
    heads = {"h": model, "g": model}
    part = study.token_study(model.backbone, heads, records, render, batch=3, full_vocab={"g"})
    assert "logit:h" in part and "rankpres:h" not in part and "validmass:h" not in part and "headmax:h" not in part
    for k in ("rankpres", "validmass", "headmax", "logit"):
        np.testing.assert_allclose(part[f"{k}:g"], tok[f"{k}:h"], atol=1e-6)
    np.testing.assert_allclose(part["logit:h"], tok["logit:h"], atol=1e-6)
    none = study.token_study(model.backbone, heads, records, render, batch=3, full_vocab=set())
    assert not [k for k in none if k.startswith(("rankpres:", "validmass:", "headmax:"))]
    seq = study.aggregate(part, len(records))
    assert set(study.combos(seq, "h")) == {"geo(sigmoid:h, softmax)", "geo(sigmoid:h, entropy)"}
    assert "geo(validmass:g, entropy)" in study.combos(seq, "g")


def test_summary_chooses_on_dev_only():
    """The aggregation and the best head/baseline come from the dev split even where test disagrees."""
    rng = np.random.default_rng(0)
    g = rng.random(200)

    def noisy(scale):
        return g + rng.normal(0, scale, g.size)

    dev = {"seq": {"softmax@mean": noisy(0.3), "entropy@mean": noisy(2.0), "sigmoid:h@min": noisy(0.1),
                   "sigmoid:h@mean": noisy(1.0), "length": noisy(0.1)}, "gold": {"chrf": g}}
    test = {"seq": {"softmax@mean": noisy(2.0), "entropy@mean": noisy(0.1), "sigmoid:h@min": noisy(2.0),
                    "sigmoid:h@mean": noisy(0.1), "length": noisy(0.1)}, "gold": {"chrf": g}}
    s = study.dev_chosen_summary({"dev": dev, "test": test}, n_boot=100)
    assert s["rows"]["sigmoid:h"]["aggregation"] == "sigmoid:h@min"
    assert s["best_baseline"] == "softmax" and s["best_head"] == "sigmoid:h" and "length" not in s["rows"]
    assert s["paired"]["delta"] == pytest.approx(
        study.pearson(test["seq"]["sigmoid:h@min"], g) - study.pearson(test["seq"]["softmax@mean"], g))


RAUQ_RECORDS = [{"source": "el perro come el pan", "candidate": "the dog eats the bread"},
                {"source": "la casa grande", "candidate": "the big house"},
                {"source": "una mujer lee", "candidate": "a woman reads today"}]
CAUSAL = {"prompt_template": "{source}\n", "use_chat_template": False}


def test_token_study_adds_rauq_and_leaves_the_other_arrays(tiny_causal_path, perturbed_model) -> None:
    from sigmoid_head.data.prompts import make_examples
    from sigmoid_head.scoring.force_decode import score_examples
    from sigmoid_head.scoring.rauq import RauqConfig

    model = perturbed_model(tiny_causal_path)
    backbone, heads = model.backbone, {"x": model}
    plain = study.token_study(backbone, heads, RAUQ_RECORDS, CAUSAL, batch=2)
    rauq = RauqConfig(alpha=0.5)
    with_rauq = study.token_study(backbone, heads, RAUQ_RECORDS, CAUSAL, batch=2, rauq=rauq)
    assert set(with_rauq) == set(plain) | {"rauq"}
    for k, v in plain.items():
        np.testing.assert_allclose(with_rauq[k], v, rtol=1e-5, atol=1e-6, err_msg=k)
    examples = make_examples(RAUQ_RECORDS, backbone.tokenizer, is_encoder_decoder=False, **CAUSAL)
    lib = score_examples(backbone, examples, batch_size=3, rauq=rauq, progress=False)
    np.testing.assert_allclose(with_rauq["rauq"], np.concatenate([ts.rauq_log for ts in lib]), rtol=1e-6)
    seq = study.aggregate(with_rauq, len(RAUQ_RECORDS))
    assert {"rauq@prod", "rauq@mean", "rauq@min"} <= set(seq)
    np.testing.assert_allclose(seq["rauq@mean"], [ts.rauq_log.mean() for ts in lib], rtol=1e-6)


def test_rauq_is_a_baseline_of_the_summary_and_a_column_of_the_combined_table() -> None:
    rng = np.random.default_rng(1)
    g = rng.random(100)
    split = {"seq": {"softmax@mean": g + rng.normal(0, 2.0, g.size), "rauq@mean": g + rng.normal(0, 0.1, g.size),
                     "sigmoid:h@mean": g + rng.normal(0, 1.0, g.size)}, "gold": {"chrf": g}}
    s = study.dev_chosen_summary({"dev": split, "test": split}, n_boot=50)
    assert s["best_baseline"] == "rauq" and s["best_head"] == "sigmoid:h"
    vs = {b: {"delta": 0.1, "p_value": 0.5} for b in ("softmax@mean", "entropy@mean", "boostedprob@mean")}
    row = {"weight_on_head": 0.5, "dev_pearson": 0.2, "test_pearson": (0.1, 0.0, 0.2), "vs": vs}
    report = {"saturation": {}, "pearson_chrf": {"dev": {}, "test": {}}}
    plain = study.markdown({**report, "combined": {"best_baseline_on_dev": "softmax@mean", "c": row}})
    assert "rauq" not in plain and "|---|---|---|---|---|---|---|\n" in plain
    row = {**row, "vs": {**vs, "rauq@mean": {"delta": -0.2, "p_value": 0.01}}}
    text = study.markdown({**report, "combined": {"best_baseline_on_dev": "softmax@mean", "c": row}})
    assert "vs rauq@mean |" in text and "| -0.200, p = 0.010 (two-sided) |" in text
