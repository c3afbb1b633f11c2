"""The head folder as one unit: the extras ``calibrate`` fits (calibration.json,
error_spans.json, combination.json) are named by head_files, carried by
``save_pretrained``/``from_pretrained`` (``model.extras``), pushed with the head, listed
on its card, pulled back at a pinned revision, and applied by ``score`` through the model.

The Hub is the stand-in of test_hub.py; the head is the committed 0.1.0 one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_cli import FIXTURE, _pairs
from test_hub import REPO, StandInHub, _env, hub  # noqa: F401 (hub is a fixture)

from sigmoid_head.cli import main
from sigmoid_head.head import files as head_files
from sigmoid_head.head.model import SigmoidHeadModel

MAIN = Path(__file__).resolve().parent / "data" / "head_calibrated_main"
EXTRAS = ("calibration.json", "error_spans.json", "combination.json")
"""The extras main's calibrate wrote when the fixture was made."""
ALL_EXTRAS = (*EXTRAS, "quality_model.json", "word_model.json")


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def _score(head: str, tmp: Path, name: str) -> list[dict]:
    src, cand = _pairs(tmp)
    out = tmp / name
    assert main(["score", "-s", str(src), "-t", str(cand), "--head", head, "--model",
                 str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--with-tokens",
                 "--to-json", str(out)]) == 0
    return _rows(out)


@pytest.fixture
def calibrated_by_main(tmp_path: Path) -> Path:
    """The 0.1.0 head with the extras that main's calibrate wrote before this change."""
    head = tmp_path / "main-head"
    shutil.copytree(FIXTURE / "head", head)
    for name in EXTRAS:
        shutil.copy(MAIN / name, head / name)
    return head


def test_head_files_names_every_file_of_a_head_folder() -> None:
    assert set(head_files.HEAD_FILES) == {"head_config.json", "head.safetensors", *ALL_EXTRAS,
                                          "README.md"}
    from sigmoid_head.evaluation import calibration, combination, spans

    assert (calibration.CALIBRATION_NAME, spans.SPANS_NAME, combination.COMBINATION_NAME) == EXTRAS


def test_a_head_calibrated_by_the_previous_release_loads_and_scores_the_same(
        calibrated_by_main: Path, tmp_path: Path) -> None:
    model = SigmoidHeadModel.from_pretrained(calibrated_by_main, str(FIXTURE / "base"), device="cpu")
    assert sorted(model.extras) == sorted(EXTRAS)
    assert model.extras["combination.json"]["baseline"] == "neg_entropy"
    got = _score(str(calibrated_by_main), tmp_path, "now.jsonl")
    want = _rows(MAIN / "expected_rows.jsonl")
    assert [r["errors"] for r in got] == [r["errors"] for r in want]
    assert any(r["errors"] for r in got)  # the spans rule was applied
    for g, w in zip(got, want, strict=True):
        assert set(g) == set(w)
        for key in ("sigmoid", "softmax", "combined", "sigmoid_platt", "sigmoid_isotonic"):
            assert g[key] == pytest.approx(w[key], rel=1e-5), key


def test_save_pretrained_carries_the_extras_and_drops_stale_ones(
        calibrated_by_main: Path, tmp_path: Path) -> None:
    model = SigmoidHeadModel.from_pretrained(calibrated_by_main, str(FIXTURE / "base"), device="cpu")
    copy = model.save_pretrained(tmp_path / "copy")
    again = SigmoidHeadModel.from_pretrained(copy, model.backbone)
    assert again.extras == model.extras
    fresh = SigmoidHeadModel.from_base(model.backbone)
    fresh.save_pretrained(copy)  # a new head in the folder: the old head's extras go
    assert not any((copy / name).exists() for name in EXTRAS)
    assert SigmoidHeadModel.from_pretrained(copy, model.backbone).extras == {}


def test_calibrate_push_pull_score_gives_identical_outputs(hub, tmp_path: Path,  # noqa: F811
                                                           monkeypatch) -> None:
    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    dev = _score(str(head), tmp_path, "dev.jsonl")
    gold = tmp_path / "gold.txt"
    gold.write_text("1\n0\n1\n")
    assert main(["calibrate", "--head", str(head), "--scores", str(tmp_path / "dev.jsonl"),
                 "--gold", str(gold)]) == 0
    assert (head / "calibration.json").is_file() and (head / "combination.json").is_file()
    (head / "error_spans.json").write_text(json.dumps({"threshold": 0.5, "min_words": 1}))
    from sigmoid_head.evaluation.quality_model import QualityModel

    QualityModel(("softmax_mean_log", "sigmoid_mean_log"), (-2.0, -1.0), (0.5, 0.4), (1.0, 0.5),
                 0.1, 1.0).save(head)
    from sigmoid_head.evaluation.word_model import WordModel

    WordModel(("word:sigmoid", "left:softmax"), (-1.0, -3.0), (0.5, 1.0), (-1.0, -0.5), 0.1, 1.0, 0.3).save(head)
    local = _score(str(head), tmp_path, "local.jsonl")
    assert local != dev and "sigmoid_platt" in local[0] and "learned_quality" in local[0]
    assert "learned_word_errors" in local[0] and "learned_word" in local[0]["words"][0]

    env = _env(tmp_path, HF_ENDPOINT=hub.url, HF_TOKEN="hf_test_token")
    cli = shutil.which("sigmoid-head", path=str(Path(sys.executable).parent))
    push = subprocess.run([cli, "push", str(head), REPO], env=env, capture_output=True,
                          text=True, timeout=300)
    assert push.returncode == 0, push.stderr
    files = StandInHub.repos[REPO]["files"]
    assert set(files) == set(head_files.HEAD_FILES)
    for name in ALL_EXTRAS:
        assert files[name] == (head / name).read_bytes()
        assert f"`{name}`".encode() in files["README.md"]  # the card lists it
    pinned = StandInHub.repos[REPO]["sha"]

    # pull at the pinned revision into a Hub cache, then score from it offline
    import huggingface_hub.constants as hc
    from huggingface_hub import snapshot_download

    cache = tmp_path / "hub-cache"
    snapshot_download(REPO, revision=pinned, endpoint=hub.url, cache_dir=cache,
                      token="hf_test_token")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(cache))
    pulled = SigmoidHeadModel.from_pretrained(REPO, str(FIXTURE / "base"), device="cpu",
                                              revision=pinned)
    assert sorted(pulled.extras) == sorted(ALL_EXTRAS)
    assert pulled.extras == SigmoidHeadModel.from_pretrained(head, pulled.backbone).extras
    (cache / f"models--{REPO.replace('/', '--')}" / "refs").mkdir(exist_ok=True)
    (cache / f"models--{REPO.replace('/', '--')}" / "refs" / "main").write_text(pinned)
    assert _score(REPO, tmp_path, "hub.jsonl") == local

    # pushing a head without extras removes the old ones from the repository
    for name in ALL_EXTRAS:
        (head / name).unlink()
    push = subprocess.run([cli, "push", str(head), REPO], env=env, capture_output=True,
                          text=True, timeout=300)
    assert push.returncode == 0, push.stderr
    assert not set(ALL_EXTRAS) & set(StandInHub.repos[REPO]["files"])
    assert torch.equal(pulled.head.weight, SigmoidHeadModel.from_pretrained(
        head, pulled.backbone).head.weight)


# Issue 26, item 5: every number of a head folder is checked, naming the file and the field.

def _mutated(head_dir, tmp_path, tensors=None, config=None):
    """A copy of ``head_dir`` with tensors and config fields replaced (weights hash cleared)."""
    from safetensors.torch import load_file, save_file

    out = tmp_path / "bad-head"
    shutil.copytree(head_dir, out)
    state = load_file(str(out / "head.safetensors"))
    for name, make in (tensors or {}).items():
        state[name] = make(state["weight"])
    save_file({k: v.contiguous() for k, v in state.items()}, str(out / "head.safetensors"))
    data = json.loads((out / "head_config.json").read_text())
    data.update(config or {}, weights_sha256=None)
    (out / "head_config.json").write_text(json.dumps(data))
    return out


def _nan_column(w):
    w = w.clone()
    w[:, 3] = float("nan")
    return w


def _one_inf(w):
    w = w.clone()
    w[7, 1] = float("inf")
    return w


BAD_TENSORS = [  # (tensors, config fields, what the message names)
    ({"weight": _nan_column}, {}, "weight holds a NaN or infinite value (row 0, column 3)"),
    ({"weight": _one_inf}, {}, "weight holds a NaN or infinite value (row 7, column 1)"),
    ({"weight": lambda w: w.to(torch.int32)}, {}, "weight has dtype int32"),
    ({"weight": lambda w: w > 0}, {}, "weight has dtype bool"),
    ({"bias": lambda w: torch.zeros(7)}, {"bias": True}, "bias shape (7,)"),
    ({"bias": lambda w: torch.zeros(w.shape[0], 2)}, {"bias": True}, "bias shape"),
    ({"bias": lambda w: torch.full((w.shape[0],), float("nan"))}, {"bias": True}, "bias holds a NaN"),
    ({}, {"bias": True}, "no bias tensor"),
    ({"token_counts": lambda w: torch.zeros(3)}, {}, "token_counts shape (3,)"),
    ({"token_counts": lambda w: -torch.ones(w.shape[0])}, {}, "negative counts"),
]
BAD_CONFIG = [
    ({"bias": "no"}, "bias must be true or false"),
    ({"rank": "0"}, "rank must be an integer >= 0"),
    ({"rank": True}, "rank must be an integer >= 0"),
    ({"base_model": 5}, "base_model must be a non-empty string"),
    ({"fingerprint": [1]}, "fingerprint must be a non-empty string"),
    ({"is_encoder_decoder": "false"}, "is_encoder_decoder must be true or false"),
    ({"base_revision": 3}, "base_revision must be a string or null"),
    ({"library_version": 1.0}, "library_version must be a string"),
]


@pytest.mark.parametrize(("tensors", "config", "named"), BAD_TENSORS,
                         ids=[c[2].split(" (")[0] for c in BAD_TENSORS])
def test_bad_weights_are_refused_naming_the_file_and_tensor(head_dir, tmp_path, tensors,
                                                            config, named):
    from sigmoid_head.head.folder import load_head_files

    folder = _mutated(head_dir, tmp_path, tensors, config)
    with pytest.raises(ValueError) as err:
        load_head_files(folder)
    assert str(folder / "head.safetensors") in str(err.value) and named in str(err.value)


@pytest.mark.parametrize(("config", "named"), BAD_CONFIG, ids=[c[1] for c in BAD_CONFIG])
def test_config_fields_of_the_wrong_type_are_refused(head_dir, tmp_path, config, named):
    from sigmoid_head.head.folder import load_head_files

    folder = _mutated(head_dir, tmp_path, config=config)
    with pytest.raises(ValueError, match="corrupt head config") as err:
        load_head_files(folder)
    assert str(folder / "head_config.json") in str(err.value) and named in str(err.value)
