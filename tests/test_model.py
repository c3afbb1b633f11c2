"""SigmoidHeadModel: save_pretrained leaves the config alone, .to() / .eval(), the public API."""

from __future__ import annotations

import json

import torch

import sigmoid_head
from sigmoid_head.head.model import SigmoidHeadModel


def test_save_pretrained_with_training_does_not_mutate_the_config(tiny_causal_path, tmp_path):
    shm = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    before = dict(shm.config.training)
    shm.save_pretrained(tmp_path / "h", training={"lr": 0.5})
    assert shm.config.training == before
    saved = json.loads((tmp_path / "h" / "head_config.json").read_text())
    assert saved["training"] == {"lr": 0.5}


def test_to_and_eval_return_the_model_and_reach_both_parts(tiny_causal_path):
    shm = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    shm.head.train()
    shm.backbone.model.train()
    assert shm.eval() is shm
    assert not shm.head.training and not shm.backbone.model.training
    assert shm.to("cpu") is shm
    assert shm.head.weight.device == torch.device("cpu") == shm.backbone.device


def test_public_api_names_resolve_to_the_library_objects():
    from sigmoid_head.evaluation.evaluate import evaluate_scores
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.force_decode import score_records
    from sigmoid_head.scoring.generate import generate_and_score
    from sigmoid_head.training.loop import train

    assert sigmoid_head.score_records is score_records
    assert sigmoid_head.generate_and_score is generate_and_score
    assert sigmoid_head.DecodingConfig is DecodingConfig
    assert sigmoid_head.evaluate_scores is evaluate_scores
    assert sigmoid_head.train is train and callable(sigmoid_head.train)
    assert set(sigmoid_head.__all__) <= set(dir(sigmoid_head))
