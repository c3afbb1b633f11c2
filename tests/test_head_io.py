"""A head written by sigmoid-head 0.1.0 still loads and scores exactly as it did then.

The fixture (tests/data/head_v0_1_0, made by its make_fixture.py) holds a tiny random
base model, a head trained and saved by 0.1.0 (its head_config.json ``training`` is the
flat TrainConfig dict of that release) and the scores 0.1.0 gave on four records.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.force_decode import score_records

FIXTURE = Path(__file__).resolve().parent / "data" / "head_v0_1_0"


ADDED_SINCE = {"start", "end"}
"""Fields added to token and word records after 0.1.0 (character offsets)."""


def _assert_close(got, want, where: str = "") -> None:
    if isinstance(want, dict):
        assert set(got) - ADDED_SINCE == set(want), where
        for k in want:
            _assert_close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9), f"{where}: {got} != {want}"
    else:
        assert got == want, where


@pytest.fixture(scope="module")
def legacy() -> SigmoidHeadModel:
    return SigmoidHeadModel.from_pretrained(FIXTURE / "head", str(FIXTURE / "base"), device="cpu")


def test_legacy_head_loads_with_its_settings(legacy) -> None:
    assert legacy.config.library_version == "0.1.0"
    assert legacy.config.bias and legacy.head.bias is not None
    assert legacy.config.training["prompt_template"] == "Translate: {source}\n"
    assert legacy.token_counts is not None and float(legacy.token_counts.sum()) > 0


def test_legacy_head_scores_as_before(legacy) -> None:
    expected = json.loads((FIXTURE / "expected_scores.json").read_text(encoding="utf-8"))
    got = score_records(legacy, expected["records"], with_tokens=True, progress=False)
    _assert_close(got, expected["scores"])
