"""TrainConfig: groups by concern, flat construction and access, the flat dict of saved heads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.training.config import (
    DataConfig,
    LoopConfig,
    OptimConfig,
    TrainConfig,
    flat_names,
)
from sigmoid_head.training.negatives import SamplerConfig

LEGACY = Path(__file__).resolve().parent / "data" / "head_v0_1_0" / "head" / "head_config.json"


def test_flat_and_grouped_construction_are_the_same() -> None:
    flat = TrainConfig(train_file="t.jsonl", output_dir="out", lr=1e-3, negatives="token_freq+softmax",
                       dominant_cut="first", max_tokens=512, seed=4)
    grouped = TrainConfig(data=DataConfig(train_file="t.jsonl"),
                          sampler=SamplerConfig(strategy="token_freq+softmax"),
                          dominant=DominantConfig(cut="first"),
                          optim=OptimConfig(lr=1e-3, max_tokens=512),
                          loop=LoopConfig(output_dir="out", seed=4))
    assert flat == grouped
    assert flat.lr == flat.optim.lr == 1e-3 and flat.negatives == flat.sampler.strategy
    assert flat.batch_size is None  # max_tokens overrides batch_size


def test_every_flat_name_round_trips_through_the_dict() -> None:
    config = TrainConfig(train_file="t.jsonl", output_dir="out")
    record = config.to_dict()
    assert list(record) == list(flat_names())
    assert TrainConfig.from_dict({**record, "history": [], "steps": 3}) == config


def test_a_head_saved_by_0_1_0_gives_back_its_settings() -> None:
    training = json.loads(LEGACY.read_text())["training"]
    config = TrainConfig.from_dict(training)
    now, defaults = config.to_dict(), TrainConfig.defaults()
    # settings added since: their defaults, except the untrained prior: a 0.1.0 head was
    # trained without it (0), whatever today's default (None: 0.01 on a full head)
    defaults["untrained_prior"] = 0.0
    defaults["reference_weight"] = 1.0  # None resolves to 1 without labels (0.5 only when mixed)
    assert {k: training.get(k, defaults.get(k)) for k in now} == now
    assert config.prompt_template == "Translate: {source}\n" and config.bias is True


def test_reference_weight_defaults_to_the_dev_choice_only_when_mixed() -> None:
    from sigmoid_head.training.config import MIXED_REFERENCE_WEIGHT

    assert MIXED_REFERENCE_WEIGHT == 0.5  # issue 58: chosen on dev (recipes/human_qe/dev_choices.py)
    mixed = TrainConfig(train_file="t.jsonl", labelled_file="g.tags", output_dir="o")
    assert mixed.reference_weight == 0.5 and mixed.to_dict()["reference_weight"] == 0.5
    assert TrainConfig(train_file="t.jsonl", output_dir="o").reference_weight == 1.0
    assert TrainConfig(labelled_file="g.tags", output_dir="o").reference_weight == 1.0
    assert TrainConfig(train_file="t.jsonl", labelled_file="g.tags", output_dir="o",
                       reference_weight=1.0).reference_weight == 1.0  # given: kept
    optim = OptimConfig()  # a group the caller passes is not changed under it
    assert TrainConfig(train_file="t.jsonl", labelled_file="g.tags", output_dir="o", optim=optim).reference_weight == 0.5
    assert optim.reference_weight is None
    # a saved mixed head gives back the weight it was trained with, whatever today's default
    assert TrainConfig.from_dict({**mixed.to_dict(), "reference_weight": 2.0}).reference_weight == 2.0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(TypeError, match="unknown settings"):
        TrainConfig(train_file="t", output_dir="o", learning_rate=1.0)
    with pytest.raises(TypeError, match="both flat and inside"):
        TrainConfig(data=DataConfig(train_file="t"), train_file="u", output_dir="o")
    with pytest.raises(ValueError, match="set batch_size or max_tokens"):
        TrainConfig(train_file="t", output_dir="o", batch_size=None)
    with pytest.raises(ValueError, match="cut must be one of"):
        TrainConfig(train_file="t", output_dir="o", dominant_cut="middle")
