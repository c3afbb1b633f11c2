"""train --self-generated: the head also learns good/bad labels of the model's own outputs."""

import json
import random

import pytest
import torch

from sigmoid_head.data.prompt_format import PromptFormat
from sigmoid_head.data.self_labels import word_labels
from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train
from sigmoid_head.training.self_generated import load_self_examples


def _self_file(path, pairs, seed):
    """Outputs made from the references with one word in two swapped for another pair's
    word, tagged against the reference (the swapped words BAD)."""
    rng = random.Random(seed)
    vocab = sorted({w for p in pairs for w in p["target"].split()})
    rows = []
    for p in pairs:
        out = [w if rng.random() < 0.5 else rng.choice(vocab) for w in p["target"].split()]
        target = " ".join(out)
        rows.append({"source": p["source"], "target": target,
                     "word_labels": word_labels(target, [p["target"]])})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def self_files(pairs_maker, tmp_path):
    return (_self_file(tmp_path / "self_train.jsonl", pairs_maker(120, seed=5), 1),
            _self_file(tmp_path / "self_val.jsonl", pairs_maker(40, seed=6), 2))


def _self_bce(model, path):
    """Mean BCE of a head's scores of the labelled tokens of a self file."""
    from sigmoid_head.data.batching import Collator, pad_id
    from sigmoid_head.training.self_term import SelfData, self_validation

    ex = load_self_examples(path, model.tokenizer,
                            PromptFormat(model.backbone.is_encoder_decoder))
    data = SelfData([], ex, 1.0, 16, 0)
    collate = Collator(pad_id(model.tokenizer), model.backbone.is_encoder_decoder)
    return self_validation(model.head, model, data, collate, torch.autocast("cpu", enabled=False))


@pytest.mark.parametrize("fixture", ["tiny_causal_path", "tiny_seq2seq_path"])
def test_self_term_teaches_the_labels_the_paper_loss_does_not(fixture, request, train_config,
                                                             train_history, tiny_pairs_jsonl,
                                                             self_files, tmp_path):
    path = request.getfixturevalue(fixture)
    self_train, self_val = self_files
    kw = dict(negatives="token_freq", max_steps=30, untrained_prior=0.0)  # the paper's setting
    paper = train(train_config(path, tiny_pairs_jsonl, tmp_path / "paper", **kw))
    mixed = train(train_config(path, tiny_pairs_jsonl, tmp_path / "self", self_generated=str(self_train),
                               self_validation_file=str(self_val), self_weight=1.0, **kw))
    hist = train_history(tmp_path / "self")
    assert {"val_paper", "val_self"} <= set(hist[0])
    assert hist[-1]["val_self"] < 0.8 * hist[0]["val_self"], hist
    # the selection loss is the objective trained: both parts, the self one weighted
    assert all(h["val_loss"] == pytest.approx(h["val_paper"] + h["val_self"]) for h in hist)
    # on held-out self-labelled outputs the self-trained head is the better judge
    assert _self_bce(mixed, self_val) < 0.9 * _self_bce(paper, self_val)


def test_without_self_data_training_is_unchanged(train_config, tiny_causal_path, tiny_pairs_jsonl,
                                                self_files, tmp_path):
    a = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "a", max_steps=6))
    b = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "b", max_steps=6))
    c = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "c", max_steps=6,
                           self_generated=str(self_files[0]), self_weight=0.3))
    assert torch.equal(a.head.weight, b.head.weight)
    assert not torch.equal(a.head.weight, c.head.weight)


def test_self_term_weight_scales_its_effect(train_config, tiny_causal_path, tiny_pairs_jsonl,
                                           self_files, tmp_path):
    start = None
    moved = []
    for w in (0.1, 3.0):
        m = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / str(w), max_steps=6,
                               self_generated=str(self_files[0]), self_weight=w,
                               validation_fraction=0.0, eval_every=None))
        if start is None:
            ref = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "ref", max_steps=6,
                                     validation_fraction=0.0, eval_every=None))
            start = ref.head.weight.detach().clone()
        moved.append(float((m.head.weight.detach() - start).norm()))
    # Adam rescales gradients, so not in proportion, but a larger weight moves the head further
    assert moved[1] > 1.2 * moved[0] > 0


def test_self_settings_are_checked(tmp_path):
    base = dict(train_file="t.jsonl", output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="memory"):
        TrainConfig(**base, self_generated="s.jsonl", data_engine="datasets")
    with pytest.raises(ValueError, match="needs self_generated"):
        TrainConfig(**base, self_validation_file="v.jsonl")
    with pytest.raises(ValueError, match="self_weight"):
        TrainConfig(**base, self_generated="s.jsonl", self_weight=0.0)


def test_cli_train_self_generated(tiny_causal_path, tiny_pairs_jsonl, self_files, tmp_path, capsys):
    from sigmoid_head.cli import main

    out = tmp_path / "head"
    def args(out, self_file):
        return ["train", "--train-file", str(tiny_pairs_jsonl), "--model", str(tiny_causal_path),
                "--output-dir", str(out), "--max-steps", "3", "--no-progress", "--device", "cpu",
                "--self-generated", str(self_file), "--self-weight", "0.5"]

    assert main(args(out, self_files[0])) == 0
    rec = json.loads((out / "head_config.json").read_text())["training"]
    assert rec["self_generated"] == str(self_files[0]) and rec["self_weight"] == 0.5
    assert "val_self" in rec["history"][0]
    # the self file may not be overwritten by the head's own files
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "head_config.json").write_text((self_files[0]).read_text())
    assert main(args(clash, clash / "head_config.json")) == 2
    assert "--self-generated" in capsys.readouterr().err
