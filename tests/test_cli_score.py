"""End to end: ``sigmoid-head score / generate / evaluate`` on the tiny models (and SmolLM2)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.evaluation.evaluate import add_geomeans, evaluate_scores, orient
from sigmoid_head.evaluation.metrics import pearson
from sigmoid_head.evaluation.readers import read_score_columns
from sigmoid_head.model import SigmoidHeadModel
from sigmoid_head.scoring.generate import DecodingConfig, force_decode, generate_outputs

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


def test_score_with_head_from_text_files(head_dir, texts, tmp_path, capsys) -> None:
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
    assert [r["candidate"] for r in rows] == CANDS and [r["source"] for r in rows] == SOURCES
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
    assert err == "sigmoid-head score: error: 5 sources but 1 candidates\n"
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
    assert "sigmoid-head score: error: record 2: the candidate is empty" in capsys.readouterr().err


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


def _fake_scores(path: Path, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(0)
    gold = rng.random(n)
    with path.open("w") as f:
        for g in gold:
            p = float(np.clip(g + 0.1 * rng.standard_normal(), 0.01, 0.99))
            f.write(
                json.dumps(
                    {
                        "candidate": "x",
                        "sigmoid": p,
                        "softmax": p / 2,
                        "boostedprob": p / 1.5,
                        "sigmoid_mean_log": float(np.log(p)) / 3,
                        "softmax_mean_log": float(np.log(p / 2)) / 3,
                        "boostedprob_mean_log": float(np.log(p / 1.5)) / 3,
                        "entropy_mean": 1 - p,
                        "n_tokens": 3,
                        "tokens": [],
                    }
                )
                + "\n"
            )
    return gold


def test_evaluate_writes_the_report(tmp_path, capsys) -> None:
    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores)
    (tmp_path / "gold.txt").write_text("\n".join(map(str, gold)) + "\n")
    (tmp_path / "kiwi.jsonl").write_text("".join(json.dumps({"kiwi": g}) + "\n" for g in gold))
    out = tmp_path / "report"
    cli_main(
        [
            "evaluate",
            "--scores",
            str(scores),
            "--gold",
            str(tmp_path / "gold.txt"),
            "--extra-scores",
            str(tmp_path / "kiwi.jsonl"),
            "--metrics",
            "pearson,spearman",
            "--out-dir",
            str(out),
            "--n-boot",
            "50",
        ]
    )
    table = capsys.readouterr().out
    for name in ("sigmoid", "softmax", "boostedprob", "-entropy_mean", "kiwi", "pearson"):
        assert name in table
    assert {p.name for p in out.iterdir()} == {"results.md", "results.csv", "scatter.png"}
    binary = tmp_path / "gold.jsonl"
    binary.write_text("".join(json.dumps({"label": int(g > 0.5)}) + "\n" for g in gold))
    rows, _ = evaluate_scores(scores, binary, out_dir=tmp_path / "bin", ci=False)
    assert (tmp_path / "bin" / "reliability.png").is_file()
    by = {r["method"]: r for r in rows}
    assert by["-entropy_mean"]["roc_auc"] == pytest.approx(by["sigmoid"]["roc_auc"])
    assert "bce" in by["sigmoid"]
    # length-normalised probabilities come with every score file, BCE included
    raw, labels = read_score_columns(scores), np.array([float(g > 0.5) for g in gold])
    for x in ("sigmoid", "softmax", "boostedprob"):
        assert by[f"{x}_geomean"]["pearson"] == pytest.approx(pearson(np.exp(raw[f"{x}_mean_log"]), labels))
        assert "bce" in by[f"{x}_geomean"]


def test_add_geomeans_never_overwrites() -> None:
    cols = add_geomeans({"softmax_mean_log": np.log([0.5, 0.25]), "sigmoid_geomean": np.array([9.0, 9.0])})
    assert cols["softmax_geomean"].tolist() == pytest.approx([0.5, 0.25])
    assert cols["sigmoid_geomean"].tolist() == [9.0, 9.0]


def test_orientation_negates_uncertainties() -> None:
    cols = {"entropy_mean": np.array([1.0, 2.0]), "sigmoid": np.array([0.5, 0.2])}
    out = orient(cols, ["sigmoid", "entropy_mean"])
    assert list(out) == ["sigmoid", "-entropy_mean"]
    assert out["-entropy_mean"].tolist() == [-1.0, -2.0]
    assert orient(cols, ["-entropy_mean"])["-entropy_mean"].tolist() == [-1.0, -2.0]
    with pytest.raises(ValueError, match="no scores for method 'mc_softmax'"):
        orient(cols, ["mc_softmax"])


@pytest.mark.integration
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
    force_decode(model, forced)
    for a, b in zip(outs, forced, strict=True):
        np.testing.assert_allclose(a.scores.sigmoid_log, b.scores.sigmoid_log, atol=1e-4)
        np.testing.assert_allclose(a.scores.softmax_log, b.scores.softmax_log, atol=1e-4)
