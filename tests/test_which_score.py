"""One answer to "which score" (issue 39): every output names the mix that made
``combined``; ``evaluate`` and the page show ``combined`` and the minima by default; a
fitted mix is saved only when it beats the default on the dev data; the saved error-span
setting is the method with the best dev F1; and the help texts agree with the code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main
from sigmoid_head.evaluation.combination import (
    DEFAULTS,
    RERANK_SELECT,
    Combination,
    fit_combination,
    mix_line,
)


def _rows(n: int = 40, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = (rng.random(n) > 0.5).astype(float)
    rows = []
    for g in gold:
        rows.append(
            {
                "sigmoid_mean_log": float(-1.5 + 0.8 * g + 0.3 * rng.standard_normal()),
                "softmax_mean_log": float(-1.0 + 0.1 * rng.standard_normal()),
                "softmax_min": float(np.exp(-3 + 0.2 * rng.standard_normal())),
                "boostedprob_mean_log": float(-1.0 + 0.1 * rng.standard_normal()),
                "entropy_mean": float(2 + 0.1 * rng.standard_normal()),
            }
        )
    return rows, gold


def test_mix_line_names_baseline_weight_and_where() -> None:
    line = mix_line(DEFAULTS["score"], "score")
    assert line.startswith("combined = 0.7 x sigmoid_mean_log + 0.3 x softmax_min (log space)")
    assert "the default of score, chosen on dev books" in line
    fitted = Combination(0.4, "softmax_mean_log", "30 dev items (roc_auc 0.900)")
    assert "the head's combination.json, fitted on 30 dev items" in mix_line(fitted, "score")


def test_fit_says_whether_it_beats_the_default() -> None:
    rows, gold = _rows()
    comb, info = fit_combination(rows, gold)
    assert info["default"]["command"] == "score"
    assert info["beats_default"] == (
        info["per_baseline"][comb.baseline]["value"] > info["default"]["value"]
    )
    assert info["beats_default"]  # a fit on the same dev data cannot do worse than the default
    # a fit on data where the default is as good as anything: not "better"
    rows = [
        {**r, "sigmoid_mean_log": -1.0, "softmax_min": float(np.exp(-1 - 2 * g))}
        for r, g in zip(rows, 1 - gold, strict=True)
    ]
    _, info = fit_combination(rows, gold)
    assert info["default"]["value"] == pytest.approx(1.0) and not info["beats_default"]


def test_calibrate_keeps_the_default_when_the_fit_is_no_better(tmp_path: Path) -> None:
    import shutil

    from test_cli import FIXTURE

    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    rows, gold = _rows()
    rows = [
        {
            **r,
            "candidate": "x",
            "sigmoid_mean_log": -1.0,
            "softmax": 0.5,
            "softmax_min": float(np.exp(-1 - 2 * g)),
        }
        for r, g in zip(rows, 1 - gold, strict=True)
    ]
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "gold.txt").write_text("".join(f"{int(g)}\n" for g in gold))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(
            [
                "calibrate",
                "--head",
                str(head),
                "--scores",
                str(tmp_path / "dev.jsonl"),
                "--gold",
                str(tmp_path / "gold.txt"),
                "--methods",
                "softmax",
            ]
        ) in (0, 2)
    text = out.getvalue()
    assert not (head / "combination.json").exists()
    assert "combined score not saved" in text and "the head keeps the default" in text


def test_span_method_is_chosen_on_dev_among_all() -> None:
    from sigmoid_head.evaluation.spans import fit_span_method

    # softmax's word scores mark the error word, sigmoid's do not
    rows, gold = [], []
    for i in range(6):
        words = ["the", "dog", f"w{i}", "runs"]
        bad = i % 3
        rows.append(
            {
                "candidate": " ".join(words),
                "words": [
                    {
                        "word": w,
                        "sigmoid": 0.5,
                        "softmax": 0.01 if k == bad else 0.9,
                        "start": sum(len(x) + 1 for x in words[:k]),
                        "end": sum(len(x) + 1 for x in words[:k]) + len(w),
                    }
                    for k, w in enumerate(words)
                ],
            }
        )
        start = sum(len(x) + 1 for x in words[:bad])
        gold.append([(start, start + len(words[bad]))])
    chosen, fitted = fit_span_method(rows, gold)
    assert set(fitted) == {"sigmoid", "softmax"}
    assert chosen.method == "softmax" and chosen.dev["f1"] > fitted["sigmoid"].dev["f1"]


def test_evaluate_shows_combined_and_the_minima_by_default() -> None:
    from sigmoid_head.evaluation.evaluate import default_methods

    methods = default_methods()
    assert methods[0] == "combined"
    assert {"sigmoid_min", "softmax_min", "boostedprob_min", "softmax_geo_mean"} <= set(methods)
    assert "softmax_mean_log" not in methods  # the log: evaluated when named


def test_the_page_has_a_combined_row() -> None:
    from sigmoid_head.evaluation.html import _sequence_table

    row = {
        "sigmoid": 0.5,
        "softmax": 0.4,
        "sigmoid_min": 0.2,
        "softmax_min": 0.1,
        "sigmoid_mean_log": -0.5,
        "softmax_mean_log": -0.7,
        "combined": 0.4321,
    }
    table = _sequence_table(row, ["sigmoid", "softmax"])
    assert '<tr class="combined"><th>combined</th>' in table and "0.432" in table
    # the length-normalised score as a number in [0, 1], under the name of that number
    assert "<th>geo_mean</th>" in table and "mean_log" not in table
    assert f"<td>{np.exp(-0.5):.3g}</td>" in table and "<td>-0.5</td>" not in table


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_help_texts_agree(capsys) -> None:
    rerank = _help("rerank", capsys)
    assert f"default: {RERANK_SELECT}" in rerank and "geo-mean, chosen on dev" not in rerank
    for command in ("score", "generate", "rerank"):
        text = _help(command, capsys)
        assert "combined, the recommended score" in text, command
        assert DEFAULTS[command].describe() in text, command
    # one way to show a prompt default: a Python literal
    assert "'{source}\\n'" in _help("train", capsys)
    assert "'{source}\\n'" in _help("score", capsys)
    demo = _help("demo", capsys)
    assert "``" not in demo and ":func:" not in demo


def test_one_new_output_is_singular(tmp_path: Path, capsys) -> None:
    from test_cli import FIXTURE

    (tmp_path / "s.txt").write_text("el perro\n")
    (tmp_path / "t.txt").write_text("the dog\n")
    assert (
        main(
            [
                "score",
                "-s",
                str(tmp_path / "s.txt"),
                "-t",
                str(tmp_path / "t.txt"),
                "--head",
                str(FIXTURE / "head"),
                "--model",
                str(FIXTURE / "base"),
                "--device",
                "cpu",
                "--to-json",
                str(tmp_path / "o.jsonl"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1 new output in" in out
    # the summary names the mix that made combined
    assert "combined = 0.7 x sigmoid_mean_log + 0.3 x softmax_min (log space) (the default of score" in out


def test_score_records_its_mix_and_evaluate_names_it(tmp_path: Path, capsys) -> None:
    from test_cli import FIXTURE

    from sigmoid_head.evaluation.combination import mix_record_path

    (tmp_path / "s.txt").write_text("el perro\nla casa\nel gato come\n")
    (tmp_path / "t.txt").write_text("the dog\nthe house\nthe cat eats\n")
    (tmp_path / "gold.txt").write_text("0.9\n0.2\n0.6\n")
    out = tmp_path / "o.jsonl"
    assert main(["score", "-s", str(tmp_path / "s.txt"), "-t", str(tmp_path / "t.txt"),
                 "--head", str(FIXTURE / "head"), "--model", str(FIXTURE / "base"),
                 "--device", "cpu", "--quiet", "--to-json", str(out)]) == 0
    line = mix_line(DEFAULTS["score"], "score")
    assert line in capsys.readouterr().out
    record = json.loads(mix_record_path(out).read_text())
    assert (record["line"], record["weight"], record["baseline"]) == (line, 0.7, "softmax_min")
    assert main(["evaluate", "--scores", str(out), "--gold", str(tmp_path / "gold.txt"),
                 "--metrics", "spearman", "--no-ci"]) == 0
    text = capsys.readouterr().out
    assert text.endswith(f"{line}\n") and "softmax_geo_mean" in text
    # the same scores moved without their record: evaluate says so
    moved = tmp_path / "moved.jsonl"
    moved.write_bytes(out.read_bytes())
    assert main(["evaluate", "--scores", str(moved), "--gold", str(tmp_path / "gold.txt"),
                 "--metrics", "spearman", "--no-ci"]) == 0
    assert capsys.readouterr().out.endswith("combined: mix not recorded (older score file)\n")


def test_demo_without_matplotlib_skips_its_figures(causal, tmp_path, monkeypatch, capsys) -> None:
    from sigmoid_head.demo import run as demo
    from sigmoid_head.scoring.force_decode import score_records

    verses = [
        {"source": f"el perro {i}", "target": t}
        for i, t in enumerate(
            [
                "the dog eats bread today",
                "the cat sleeps on the mat now",
                "a big house stands there",
                "the red car goes fast",
                "my friend reads books",
            ]
        )
    ]
    cands = demo.candidates(verses, seed=0)
    scored = [
        {**c, **s}
        for c, s in zip(
            cands, score_records(causal, cands, with_tokens=True, progress=False), strict=True
        )
    ]
    (tmp_path / "head").mkdir()
    demo.explain(causal, scored, [dict(c) for c in scored], tmp_path, plots=False)
    assert not (tmp_path / "calibration.png").exists()
    monkeypatch.setattr(demo, "can_plot", lambda: False)
    assert "pip install 'sigmoid-head[plots]'" in demo.PLOTS_SKIPPED
