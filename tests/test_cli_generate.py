"""cli/generate.py: sigmoid-head generate with baselines; its outputs scored again give the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_generate_seq2seq_with_mc_and_judge(tiny_seq2seq_path, texts, tmp_path, cli_pairs) -> None:
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
    assert [r["source"] for r in rows] == cli_pairs[0]
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


def test_generate_with_rauq(head_dir, texts, tmp_path) -> None:
    gen = tmp_path / "gen.jsonl"
    cli_main(["generate", "-s", str(texts[0]), "--max-new-tokens", "5", "--do-sample", "--with-tokens",
              "--rauq", "--to-json", str(gen), "--head", str(head_dir), "--quiet", "--device", "cpu"])
    rows = _rows(gen)
    for r in rows:
        per_token = [t["rauq"] for t in r["tokens"]]
        assert len(per_token) == r["n_tokens"] and all(0 < c <= 1 for c in per_token)
        assert r["rauq_mean_log"] == pytest.approx(float(np.mean(np.log(per_token))), rel=1e-6)


def test_generate_guided_by_the_head(head_dir, tiny_causal_path, texts, tmp_path, capsys) -> None:
    gen = tmp_path / "gen.jsonl"
    common = ["generate", "-s", str(texts[0]), "--head", str(head_dir), "--max-new-tokens", "6",
              "--do-sample", "--temperature", "3", "--with-tokens", "--quiet", "--device", "cpu"]
    assert cli_main([*common, "--to-json", str(tmp_path / "free.jsonl")]) == 0
    free = [t["sigmoid"] for r in _rows(tmp_path / "free.jsonl") for t in r["tokens"]]
    assert min(free) < 0.55  # sampling hot, the head would reject some tokens
    assert cli_main([*common, "--head-weight", "2", "--head-mask-below", "0.55",
                     "--to-json", str(gen)]) == 0
    tokens = [t["sigmoid"] for r in _rows(gen) for t in r["tokens"]]
    assert tokens and min(tokens) >= 0.55  # none of them chosen
    code = cli_main(["generate", "-s", str(texts[0]), "--model", str(tiny_causal_path),
                     "--head-weight", "2", "--to-json", str(tmp_path / "no_head.jsonl"), "--quiet",
                     "--device", "cpu"])
    assert code == 2 and "needs a Sigmoid Head" in capsys.readouterr().err
