"""The model card written for a head on the Hub: metadata the Hub indexes, and sections."""

from __future__ import annotations

import pytest
from huggingface_hub import ModelCard

from sigmoid_head.head.folder import HeadConfig
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.head.model_card import model_card

REPO = "tester/tiny-sigmoid-head"


@pytest.fixture
def head_dir(tiny_causal_path, tmp_path):
    record = {"train_file": "pairs.jsonl", "negatives": "token_freq", "lr": 1e-3, "steps": 40,
              "history": [{"step": 0, "val_loss": 0.9}, {"step": 20, "val_loss": 0.5,
                                                         "train_loss": 0.6},
                          {"step": 40, "val_loss": 0.45, "train_loss": 0.5}]}
    SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").save_pretrained(
        tmp_path / "head", training=record)
    return tmp_path / "head"


def test_model_card_metadata_and_sections(head_dir):
    config = HeadConfig.load(head_dir)
    evaluation = {"sigmoid": {"pearson": 0.41, "roc_auc": 0.8},
                  "softmax": {"pearson": 0.3, "roc_auc": 0.7}}
    text = model_card(config, repo_id=REPO, base_params=1_000_000, evaluation=evaluation)
    card = ModelCard(text)
    assert card.data.library_name == "sigmoid-head"
    assert "quality-estimation" in card.data.tags
    assert card.data.base_model is None  # a local path is not a Hub id
    head_params = config.vocab_size * config.hidden_size
    assert f"{head_params:,} parameters" in text
    assert f"{100 * head_params / 1_000_000:.1f}% more" in text
    assert "| train_file | pairs.jsonl |" in text  # data
    assert "| negatives | token_freq |" in text  # settings
    assert "| 20 | 0.5 | 0.6 |" in text  # the validation curve
    assert "0.9000 -> best 0.4500" in text
    assert "| sigmoid | 0.41 | 0.8 |" in text  # the evaluation table
    assert f'from_pretrained("{REPO}")' in text


def test_model_card_names_a_hub_base_model_and_omits_unknowns():
    config = HeadConfig(base_model="allenai/OLMo-2-0425-1B-SFT", vocab_size=10, hidden_size=4,
                        fingerprint="x")
    text = model_card(config)
    assert ModelCard(text).data.base_model == "allenai/OLMo-2-0425-1B-SFT"
    assert "No validation curve was recorded." in text
    assert "## Evaluation" not in text
    assert "% more" not in text  # no base parameter count given


def test_settings_without_data_or_data_without_settings_render_cleanly():
    config = HeadConfig(base_model="smollm2-135m-instruct", vocab_size=10, hidden_size=4,
                        fingerprint="x", training={"train_file": "x.jsonl"})
    text = model_card(config)
    assert "Settings:" not in text and "| train_file | x.jsonl |" in text
    assert ModelCard(text).data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert "embedded build" in text  # the head fits the dequantized GGUF, not the original


def test_a_low_rank_head_counts_its_update_only():
    config = HeadConfig(base_model="x/y", vocab_size=1000, hidden_size=64, fingerprint="x", rank=8)
    text = model_card(config, base_params=100_000)
    assert f"{8 * (1000 + 64):,} parameters" in text and "rank-8 update" in text


def test_a_base_model_header_claiming_2_62_bytes_leaves_the_count_out(tiny_causal_path, tmp_path):
    import shutil
    import struct

    from sigmoid_head.head.model_card import base_parameter_count

    folder = tmp_path / "base"
    shutil.copytree(tiny_causal_path, folder)
    path = folder / "model.safetensors"
    assert base_parameter_count(str(folder)) > 0
    path.write_bytes(struct.pack("<Q", 2**62) + path.read_bytes()[8:])
    assert base_parameter_count(str(folder)) is None


def test_the_card_states_a_license_and_no_adapter_relation(tiny_causal_path, tmp_path):
    """Issue 26, item 8: license from the user, else the base model's where known (the
    embedded model's; a local checkpoint's README metadata), else none; base_model without
    base_model_relation: adapter (the fingerprint refuses the base model's fine-tunes)."""
    import shutil

    from sigmoid_head.head.model_card import base_license, check_license

    hub_base = HeadConfig(base_model="allenai/OLMo-2-0425-1B-SFT", vocab_size=10, hidden_size=4,
                          fingerprint="x")
    text = model_card(hub_base, license="mit")
    card = ModelCard(text)
    assert card.data.license == "mit" and card.data.base_model == "allenai/OLMo-2-0425-1B-SFT"
    assert "base_model_relation" not in text
    assert ModelCard(model_card(hub_base)).data.license is None
    assert base_license("smollm2-135m-instruct") == "apache-2.0"
    local = tmp_path / "base"
    shutil.copytree(tiny_causal_path, local)
    assert base_license(str(local)) is None
    (local / "README.md").write_text("---\nlicense: bsd-3-clause\n---\n# a model\n")
    assert base_license(str(local)) == "bsd-3-clause"
    with pytest.raises(ValueError, match="--license"):
        check_license("mit\nbase_model: evil")


def test_push_card_only_takes_license(head_dir, capsys):
    from sigmoid_head.cli import main as cli_main

    assert cli_main(["push", str(head_dir), REPO, "--card-only", "--license", "Apache-2.0"]) == 0
    out = capsys.readouterr().out
    assert ModelCard(out).data.license == "apache-2.0"
