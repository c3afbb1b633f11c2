"""cli/generate.py: sigmoid-head generate with baselines; its outputs scored again give the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.model import SigmoidHeadModel

SOURCES = ["el perro come el pan", "la casa", "el niño lee un libro", "una mujer", "el gato"]
CANDS = ["the dog eats the bread", "the home", "the boy reads a book", "a woman", "a car"]


@pytest.fixture(scope="module")
def head_dir(tiny_causal_path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("head")
    SigmoidHeadModel.from_base(str(tiny_causal_path), device="cpu").save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("texts")
    (d / "src.txt").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    (d / "mt.txt").write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    return d / "src.txt", d / "mt.txt"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_generate_seq2seq_with_mc_and_judge(tiny_seq2seq_path, texts, tmp_path) -> None:
    out = tmp_path / "gen.jsonl"
    cli_main(
        [
            "generate",
            "-s",
            str(texts[0]),
            "--model",
            str(tiny_seq2seq_path),
            "--max-new-tokens",
            "4",
            "--mc-samples",
            "2",
            "--self-judge",
            "--to-json",
            str(out),
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    rows = _rows(out)
    assert [r["source"] for r in rows] == SOURCES
    assert {"candidate", "finished", "softmax", "mc_softmax", "self_judge"} <= set(rows[0])


def test_generate_then_score_the_outputs_again(head_dir, texts, tmp_path) -> None:
    gen = tmp_path / "gen.jsonl"
    cli_main(
        [
            "generate",
            "-s",
            str(texts[0]),
            "--head",
            str(head_dir),
            "--do-sample",
            "--max-new-tokens",
            "3",
            "--to-json",
            str(gen),
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    rows = _rows(gen)
    assert all(r["n_tokens"] <= 3 for r in rows) and "sigmoid" in rows[0]
    again = tmp_path / "again.jsonl"
    cli_main(
        [
            "score",
            "--input",
            str(gen),
            "--head",
            str(head_dir),
            "--to-json",
            str(again),
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    assert len(_rows(again)) == len(rows)
