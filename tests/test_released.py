"""The paper authors' released-head format: loaded without executing the repository's code."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.head.released import ReleasedHeadError, is_released_head, save_released
from sigmoid_head.scoring.force_decode import score_records

TRAP = """
import pathlib
pathlib.Path(__file__).with_name("EXECUTED").write_text("remote code ran")
raise RuntimeError("remote code must never run")
"""


@pytest.fixture
def released(tiny_causal_path, tmp_path):
    """A head in the released format for the tiny causal model, with code files that
    would leave a marker if anything imported them."""
    base = SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu")
    torch.manual_seed(1)
    weight = base.backbone.output_weight().detach().float() + 0.05 * torch.randn(
        base.backbone.output_weight().shape)
    folder = save_released(weight, tmp_path / "released", str(tiny_causal_path),
                           extra={"transformers_version": "4.51.0"})
    for name in ("configuration_sigmoid_head.py", "modeling_sigmoid_head.py"):
        (folder / name).write_text(TRAP)
    return folder, weight, base


def test_released_head_loads_onto_its_base_model_without_running_code(released):
    folder, weight, base = released
    assert is_released_head(folder)
    shm = SigmoidHeadModel.from_pretrained(folder, device="cpu")
    assert not (folder / "EXECUTED").exists()
    assert torch.equal(shm.head.weight, weight)
    assert shm.config.training["format"] == "sigmoid-confidence released head"
    recs = [{"source": "a b c", "candidate": "d e"}, {"source": "x", "candidate": "y z w"}]
    got = score_records(shm, recs, progress=False)
    # the head's scores: sigmoid of the released rows at the LM head's input
    manual = SigmoidHeadModel(base.backbone, base.head, base.config)
    with torch.no_grad():
        manual.head.weight.copy_(weight)
    want = score_records(manual, recs, progress=False)
    for g, w in zip(got, want, strict=True):
        assert g["sigmoid_logprob"] == pytest.approx(w["sigmoid_logprob"], abs=1e-6)
        assert g["softmax_logprob"] == pytest.approx(w["softmax_logprob"], abs=1e-6)
        assert g["sigmoid_logprob"] != pytest.approx(g["softmax_logprob"], abs=1e-3)


def test_a_released_head_converts_to_the_library_format(released, tmp_path):
    folder, weight, base = released
    shm = SigmoidHeadModel.from_pretrained(folder, base.backbone)
    shm.save_pretrained(tmp_path / "converted")
    again = SigmoidHeadModel.from_pretrained(tmp_path / "converted", base.backbone)
    assert torch.equal(again.head.weight, weight)
    assert again.config.fingerprint == base.config.fingerprint


def test_shape_and_vocabulary_checks(released, tiny_causal_path, tmp_path):
    folder, weight, base = released
    v, d = weight.shape
    bad_rows = save_released(weight[:-3], tmp_path / "rows", str(tiny_causal_path))
    with pytest.raises(ReleasedHeadError, match=f"{v - 3} vocabulary rows but the base model's output layer has {v}"):
        SigmoidHeadModel.from_pretrained(bad_rows, base.backbone)
    bad_cols = save_released(weight[:, :-2], tmp_path / "cols", str(tiny_causal_path))
    with pytest.raises(ReleasedHeadError, match=f"hidden size is {d - 2} but the base model's is {d}"):
        SigmoidHeadModel.from_pretrained(bad_cols, base.backbone)
    declared = save_released(weight, tmp_path / "declared", str(tiny_causal_path),
                             extra={"vocab_size": v + 1})
    with pytest.raises(ReleasedHeadError, match=f"declares vocabulary {v + 1}"):
        SigmoidHeadModel.from_pretrained(declared, base.backbone)
    unnamed = save_released(weight, tmp_path / "unnamed", str(tiny_causal_path))
    cfg = json.loads((unnamed / "config.json").read_text())
    del cfg["base_model"]
    (unnamed / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ReleasedHeadError, match="names no base model"):
        SigmoidHeadModel.from_pretrained(unnamed)


def test_a_tokenizer_with_more_ids_than_head_rows_is_refused(released):
    folder, weight, base = released
    base.backbone.tokenizer.add_special_tokens({"additional_special_tokens": ["<|extra_pad|>"]})
    with pytest.raises(ReleasedHeadError, match="token ids without a row"):
        SigmoidHeadModel.from_pretrained(folder, base.backbone)


def test_a_full_checkpoint_or_a_non_finite_head_is_refused(released, tmp_path):
    folder, weight, base = released
    full = tmp_path / "full"
    full.mkdir()
    (full / "config.json").write_text((folder / "config.json").read_text())
    save_file({"weight": weight, "model.norm.weight": torch.ones(3)}, str(full / "model.safetensors"))
    with pytest.raises(ReleasedHeadError, match="exactly one tensor 'weight'.*holds 2"):
        SigmoidHeadModel.from_pretrained(full, base.backbone)
    nan = weight.clone()
    nan[0, 0] = float("nan")
    with pytest.raises(ReleasedHeadError, match="NaN"):
        SigmoidHeadModel.from_pretrained(save_released(nan, tmp_path / "nan", "x"), base.backbone)


@pytest.mark.parametrize("damage", ["huge_header", "cut", "garbage", "int_dtype"])
def test_an_unreadable_or_integer_released_file_ends_in_one_line(released, damage):
    import struct

    folder, weight, base = released
    path = folder / "model.safetensors"
    data = path.read_bytes()
    if damage == "huge_header":  # the header claims 2^62 bytes
        path.write_bytes(struct.pack("<Q", 2**62) + data[8:])
    elif damage == "cut":
        path.write_bytes(data[:100])
    elif damage == "garbage":
        path.write_bytes(b"garbage")
    else:
        save_file({"weight": weight.to(torch.int32)}, str(path))
    with pytest.raises(ReleasedHeadError) as err:
        SigmoidHeadModel.from_pretrained(folder, base.backbone)
    message = str(err.value)
    assert str(path) in message and "\n" not in message
    assert ("dtype int32" if damage == "int_dtype" else "not a readable safetensors file") in message


@pytest.mark.parametrize(("key", "value", "named"), [
    ("vocab_size", [1], "vocab_size must be an integer"),
    ("hidden_size", "32", "hidden_size must be an integer"),
    ("base_model", 5, "named by a non-empty string"),
    ("auto_map", "sigmoid", None),  # not an object: still read as data, no crash
])
def test_released_config_values_of_the_wrong_type(released, key, value, named):
    folder, _, base = released
    config = json.loads((folder / "config.json").read_text())
    config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    if named is None:
        assert is_released_head(folder)
        return
    with pytest.raises(ReleasedHeadError, match=named):
        SigmoidHeadModel.from_pretrained(folder, None if key == "base_model" else base.backbone)


# Issue 26, item 10: a Trainer checkpoint of the authors' training code.

def _trainer_checkpoint(folder, weight, step=40):
    """What the authors' Trainer writes: model.safetensors with the head's state_dict (one
    ``weight``), trainer_state.json, and pickles that must never be opened."""
    folder.mkdir(parents=True)
    save_file({"weight": weight.contiguous()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "trainer_state.json").write_text(json.dumps(
        {"global_step": step, "best_metric": 0.25, "log_history": []}))
    for name in ("training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (folder / name).write_bytes(b"not to be unpickled")
    return folder


def test_a_trainer_checkpoint_loads_when_the_base_model_is_given(released, tmp_path):
    folder, weight, base = released
    ckpt = _trainer_checkpoint(tmp_path / "output" / "checkpoint-40", weight)
    model = SigmoidHeadModel.from_pretrained(ckpt, base.backbone)
    assert torch.equal(model.head.weight, weight)
    assert model.config.training["format"] == "sigmoid-confidence Trainer checkpoint"
    assert model.config.training["trainer_state"]["global_step"] == 40
    same = SigmoidHeadModel.from_pretrained(folder, base.backbone)
    assert score_records(model, [{"source": "la casa", "candidate": "the house"}],
                         progress=False) == score_records(
        same, [{"source": "la casa", "candidate": "the house"}], progress=False)
    with pytest.raises(ReleasedHeadError, match="Trainer checkpoint.*names no base model"):
        SigmoidHeadModel.from_pretrained(ckpt)
    with pytest.raises(ReleasedHeadError, match="Trainer output folder.*checkpoint-40"):
        SigmoidHeadModel.from_pretrained(tmp_path / "output", base.backbone)


def test_a_trainer_checkpoint_through_the_cli(released, tiny_causal_path, tmp_path, capsys):
    from sigmoid_head.cli import main as cli_main

    _, weight, _ = released
    ckpt = _trainer_checkpoint(tmp_path / "checkpoint-7", weight, step=7)
    src, cand = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text("la casa\n")
    cand.write_text("the house\n")
    out = tmp_path / "o.jsonl"
    assert cli_main(["score", "--head", str(ckpt), "--model", str(tiny_causal_path), "--device",
                     "cpu", "-s", str(src), "-t", str(cand), "--to-json", str(out),
                     "--quiet"]) == 0
    assert "sigmoid" in json.loads(out.read_text())
    assert cli_main(["score", "--head", str(ckpt), "-s", str(src), "-t", str(cand),
                     "--quiet"]) == 2
    assert "names no base model" in capsys.readouterr().err
