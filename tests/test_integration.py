"""The real path: train a head from the CLI on SmolLM2-135M-Instruct and real Bible text."""

import gzip
import json
from pathlib import Path

import pytest
import torch

from sigmoid_head.cli import main
from sigmoid_head.head.model import SigmoidHeadModel

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "sigmoid_head" / "bible_sample"
PROMPT = "Rewrite this verse in modern English:\n{source}"

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # make test-slow


def _subset(src: Path, dst: Path, n: int) -> Path:
    with gzip.open(src, "rt", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()][:n]
    dst.write_text("".join(lines), encoding="utf-8")
    return dst


def test_cli_trains_a_head_on_smollm2_with_falling_loss(tmp_path):
    # 48 pairs, 8 epochs through the hidden-state cache: the body runs once per pair (the
    # test's cost), the later epochs train the head on cached states (120 pairs and 3 epochs
    # took twice as long here for the same fall of the validation loss)
    train_file = _subset(SAMPLE / "para_train.jsonl.gz", tmp_path / "train.jsonl", 48)
    val_file = _subset(SAMPLE / "para_dev.jsonl.gz", tmp_path / "dev.jsonl", 16)
    out = tmp_path / "head"
    argv = ["train", "--train-file", str(train_file), "--validation-file", str(val_file),
            "--output-dir", str(out), "--use-chat-template", "--prompt-template", PROMPT,
            "--max-length", "160", "--batch-size", "4", "--max-steps", "96", "--lr", "1e-3",
            "--eval-every", "48", "--patience", "0", "--epochs", "8", "--cache-hidden", "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    config = json.loads((out / "head_config.json").read_text())
    hist = config["training"]["history"]
    assert [h["step"] for h in hist] == [0, 48, 96]
    assert hist[1]["val_loss"] < hist[0]["val_loss"] and hist[2]["val_loss"] < hist[1]["val_loss"]
    assert hist[2]["val_loss"] < 0.7 * hist[0]["val_loss"], hist
    assert config["base_model"] == "smollm2-135m-instruct"
    assert config["training"]["negatives"] == "token_freq" and config["training"]["avoid_dominant"]

    model = SigmoidHeadModel.from_pretrained(out)  # the base model comes from the config
    initial = model.backbone.output_weight().float()
    changed = (model.head.weight != initial).any(1)
    assert bool(changed[model.token_counts > 0].all())
    assert model.backbone.model.get_output_embeddings().weight.requires_grad is False
    # the backbone is the untouched embedded checkpoint
    fresh = SigmoidHeadModel.from_base(None)
    assert torch.equal(fresh.backbone.output_weight(), model.backbone.output_weight())
