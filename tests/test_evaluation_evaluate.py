"""evaluation/evaluate.py: the report of evaluate_scores, geometric means, orientation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.evaluation.evaluate import evaluate_scores, orient, probability_form
from sigmoid_head.evaluation.metrics import pearson
from sigmoid_head.evaluation.readers import read_score_columns

SOURCES = ["el perro come el pan", "la casa", "el niño lee un libro", "una mujer", "el gato"]
CANDS = ["the dog eats the bread", "the home", "the boy reads a book", "a woman", "a car"]


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
    pytest.importorskip("matplotlib", reason="needs the plots extra (matplotlib)")  # scatter.png
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
        assert by[f"{x}_mean_log"]["pearson"] == pytest.approx(pearson(np.exp(raw[f"{x}_mean_log"]), labels))
        assert "bce" in by[f"{x}_mean_log"]


def test_probability_form_reads_old_names_and_never_overwrites() -> None:
    cols = probability_form({"softmax_mean_log": np.log([0.5, 0.25]), "sigmoid_geomean": np.array([0.9, 0.1]),
                             "boostedprob_geomean": np.array([9.0, 9.0]),
                             "boostedprob_mean_log": np.log([0.3, 0.2]), "softmax_logprob": np.array([-3.0, -4.0])})
    assert set(cols) == {"softmax_mean_log", "sigmoid_mean_log", "boostedprob_mean_log", "softmax_logprob"}
    assert cols["softmax_mean_log"].tolist() == pytest.approx([0.5, 0.25])
    assert cols["sigmoid_mean_log"].tolist() == pytest.approx([0.9, 0.1])  # an old geo-mean column
    assert cols["boostedprob_mean_log"].tolist() == pytest.approx([0.3, 0.2])  # today's name wins
    assert cols["softmax_logprob"].tolist() == [-3.0, -4.0]  # log-valued: left as it is


def test_score_file_of_an_earlier_release_is_evaluated_under_todays_names(tmp_path) -> None:
    """A score file written with ``<method>_geomean`` columns, and methods named the old way,
    give the same rows as today's file."""
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    gold = _fake_scores(new)
    rows = [json.loads(line) for line in new.read_text().splitlines()]
    for r in rows:
        for m in ("sigmoid", "softmax", "boostedprob"):
            r[f"{m}_geomean"] = float(np.exp(r.pop(f"{m}_mean_log")))
    old.write_text("".join(json.dumps(r) + "\n" for r in rows))
    want, _ = evaluate_scores(new, gold, ci=False)
    got, _ = evaluate_scores(old, gold, ci=False)
    assert [r["method"] for r in got] == [r["method"] for r in want]
    assert "softmax_mean_log" in [r["method"] for r in got]
    for a, b in zip(got, want, strict=True):
        nums = [k for k, v in b.items() if isinstance(v, float)]
        assert [a[k] for k in nums] == pytest.approx([b[k] for k in nums])
    named, _ = evaluate_scores(old, gold, ci=False, methods=["softmax_geomean"])
    assert named[0]["method"] == "softmax_mean_log"


def test_orientation_negates_uncertainties() -> None:
    cols = {"entropy_mean": np.array([1.0, 2.0]), "sigmoid": np.array([0.5, 0.2])}
    out = orient(cols, ["sigmoid", "entropy_mean"])
    assert list(out) == ["sigmoid", "-entropy_mean"]
    assert out["-entropy_mean"].tolist() == [-1.0, -2.0]
    assert orient(cols, ["-entropy_mean"])["-entropy_mean"].tolist() == [-1.0, -2.0]
    with pytest.raises(ValueError, match="no scores for method 'mc_softmax'"):
        orient(cols, ["mc_softmax"])
