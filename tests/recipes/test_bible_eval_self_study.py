"""eval_self_study's per-token features, checked against a brute-force forward pass."""

from __future__ import annotations

import eval_self_study as study
import numpy as np
import pytest
import torch


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
