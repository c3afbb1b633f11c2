"""cli/score.py: sigmoid-head score on text files and JSONL, its errors, and train -> score end to end."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_outputs, score_generated


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_with_head_from_text_files(head_dir, texts, tmp_path, capsys, cli_pairs) -> None:
    out = tmp_path / "scores.jsonl"
    code = cli_main(
        [
            "score",
            "-s",
            str(texts[0]),
            "-t",
            str(texts[1]),
            "--head",
            str(head_dir),
            "--to-json",
            str(out),
            "--quiet",
            "--batch-size",
            "2",
            "--self-judge",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    rows = _rows(out)
    assert [r["candidate"] for r in rows] == cli_pairs[1] and [r["source"] for r in rows] == cli_pairs[0]
    assert all(0 <= r["sigmoid"] <= 1 and 0 <= r["self_judge"] <= 1 for r in rows)
    printed = capsys.readouterr().out
    assert "5 outputs scored" in printed and "sigmoid" in printed


def test_score_jsonl_chat_with_tokens_without_head(tiny_causal_path, tmp_path) -> None:
    inp = tmp_path / "in.jsonl"
    recs = [
        {"messages": [{"role": "user", "content": "Translate: el perro"}], "candidate": "the dog"},
        {"source": "la casa", "candidate": "the house"},
    ]
    inp.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "out.jsonl"
    cli_main(
        [
            "score",
            "--input",
            str(inp),
            "--model",
            str(tiny_causal_path),
            "--chat",
            "--with-tokens",
            "--to-json",
            str(out),
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    rows = _rows(out)
    assert "sigmoid" not in rows[0] and rows[0]["messages"] == recs[0]["messages"]
    assert [w["word"] for w in rows[0]["words"]] == ["the", "dog"]
    assert [t["token"] for t in rows[1]["tokens"]] == ["the", "Ġhouse", "<|im_end|>"]


def test_score_input_errors(head_dir, texts, tmp_path, capsys) -> None:
    short = tmp_path / "short.txt"
    short.write_text("only one\n")
    code = cli_main(["score", "-s", str(texts[0]), "-t", str(short), "--head", str(head_dir)])
    assert code == 2
    err = capsys.readouterr().err
    assert err == f"sigmoid-head score: error: 5 sources ({texts[0]}) but 1 candidates ({short})\n"
    empty = tmp_path / "empty.txt"
    empty.write_text("a\n\nc\nd\ne\n")
    assert cli_main(
            [
                "score",
                "-s",
                str(texts[0]),
                "-t",
                str(empty),
                "--head",
                str(head_dir),
                "--quiet",
                "--device",
                "cpu",
            ]
        ) == 2
    assert f"sigmoid-head score: error: {empty}:2: the candidate is empty" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.slow  # make test-slow
def test_smollm2_train_then_score_end_to_end(tmp_path, capsys) -> None:
    from sigmoid_head.cli import main as sigmoid_head_main

    pairs = [
        ("Thou art my friend.", "You are my friend."),
        ("He hath gone.", "He has gone."),
        ("I know not.", "I don't know."),
        ("Wherefore art thou sad?", "Why are you sad?"),
        ("She doth sing.", "She sings."),
        ("Thy house is great.", "Your house is big."),
        ("Hast thou eaten?", "Have you eaten?"),
        ("They were sore afraid.", "They were very afraid."),
    ]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"source": s, "target": t}) + "\n" for s, t in pairs))
    head = tmp_path / "head"
    # the head comes from the core CLI: `sigmoid-head train ...`
    argv = ["train", "--train-file", str(data), "--output-dir", str(head), "--use-chat-template",
            "--prompt-template", "Rewrite in modern English: {source}", "--max-steps", "3",
            "--batch-size", "4", "--lr", "1e-3", "--validation-fraction", "0", "--no-progress",
            "--device", "cpu"]
    assert sigmoid_head_main(argv) == 0
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": s, "candidate": t}) + "\n" for s, t in pairs[:5]))
    out = tmp_path / "scores.jsonl"
    assert (
        cli_main(
            [
                "score",
                "--input",
                str(inp),
                "--head",
                str(head),
                "--to-json",
                str(out),
                "--quiet",
                "--device",
                "cpu",
                "--with-tokens",
            ]
        )
        == 0
    )
    rows = _rows(out)
    assert len(rows) == 5 and all(0 < r["sigmoid"] <= 1 and r["softmax"] > 0 for r in rows)
    assert rows[0]["tokens"][-1]["token"] == "<|im_end|>"  # chat template from the head's config
    gen = tmp_path / "gen.jsonl"
    src = tmp_path / "src.txt"
    src.write_text("".join(s + "\n" for s, _ in pairs[:2]))
    assert (
        cli_main(
            [
                "generate",
                "-s",
                str(src),
                "--head",
                str(head),
                "--to-json",
                str(gen),
                "--max-new-tokens",
                "12",
                "--quiet",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    made = _rows(gen)
    assert len(made) == 2 and all(r["candidate"] and 0 < r["sigmoid"] <= 1 for r in made)
    # generation-time scores of the real model equal force-decoding its outputs
    model = SigmoidHeadModel.from_pretrained(head, device="cpu")
    prompts = prompt_ids(
        [{"source": s} for s, _ in pairs[:2]],
        model.tokenizer,
        is_encoder_decoder=False,
        use_chat_template=True,
        prompt_template="Rewrite in modern English: {source}",
    )
    outs = generate_outputs(model, prompts, DecodingConfig(max_new_tokens=12), progress=False)
    forced = copy.deepcopy(outs)
    score_generated(model, forced)
    for a, b in zip(outs, forced, strict=True):
        np.testing.assert_allclose(a.scores.sigmoid_log, b.scores.sigmoid_log, atol=1e-4)
        np.testing.assert_allclose(a.scores.softmax_log, b.scores.softmax_log, atol=1e-4)


def test_score_with_rauq_and_its_option_errors(head_dir, texts, tmp_path, capsys,
                                               tiny_seq2seq_path) -> None:
    out = tmp_path / "rauq.jsonl"
    args = ["score", "-s", str(texts[0]), "-t", str(texts[1]), "--quiet", "--device", "cpu"]
    assert cli_main([*args, "--head", str(head_dir), "--rauq", "--rauq-alpha", "0.5",
                     "--rauq-layers", "1", "--with-tokens", "--to-json", str(out)]) == 0
    rows = _rows(out)
    assert all(0 < r["rauq"] <= 1 and r["rauq_mean_log"] <= 0 for r in rows)
    assert all(0 < t["rauq"] <= 1 for r in rows for t in r["tokens"])
    assert "rauq" in capsys.readouterr().out  # a row of the summary
    assert cli_main([*args, "--head", str(head_dir), "--rauq-alpha", "0.5"]) == 2
    assert "--rauq-alpha and --rauq-layers need --rauq" in capsys.readouterr().err
    assert cli_main([*args, "--head", str(head_dir), "--rauq", "--rauq-layers", "7"]) == 2
    assert "RAUQ layer 7 does not exist: the model has 2 layers" in capsys.readouterr().err
    assert cli_main([*args, "--model", str(tiny_seq2seq_path), "--rauq"]) == 2
    assert "decoder-only" in capsys.readouterr().err
