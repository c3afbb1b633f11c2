"""evaluation/evaluate.py: the report of evaluate_scores, the length-normalised score on both
scales (``_mean_log``, ``_geo_mean``), orientation, the recorded mix of ``combined``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.evaluation.evaluate import derive_columns, evaluate_scores, orient
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
    # the length-normalised score comes with every score file as the geometric mean,
    # <m>_geo_mean = exp(<m>_mean_log), BCE included; the log itself is not a default row
    raw, labels = read_score_columns(scores), np.array([float(g > 0.5) for g in gold])
    for x in ("sigmoid", "softmax", "boostedprob"):
        assert by[f"{x}_geo_mean"]["pearson"] == pytest.approx(pearson(np.exp(raw[f"{x}_mean_log"]), labels))
        assert "bce" in by[f"{x}_geo_mean"]
        assert f"{x}_mean_log" not in by


def test_mean_log_is_the_log_and_geo_mean_its_exponential(tmp_path) -> None:
    """Named, ``softmax_mean_log`` is evaluated as the file holds it (a log: rank and
    correlation metrics, no BCE), ``softmax_geo_mean`` as its exponential."""
    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores)
    raw = read_score_columns(scores)
    rows, _ = evaluate_scores(scores, gold, ci=False,
                              methods=["softmax_mean_log", "softmax_geo_mean"])
    by = {r["method"]: r for r in rows}
    assert list(by) == ["softmax_mean_log", "softmax_geo_mean"]
    assert by["softmax_mean_log"]["pearson"] == pytest.approx(pearson(raw["softmax_mean_log"], gold))
    assert by["softmax_geo_mean"]["pearson"] == pytest.approx(pearson(np.exp(raw["softmax_mean_log"]), gold))
    assert by["softmax_mean_log"]["pearson"] != pytest.approx(by["softmax_geo_mean"]["pearson"])
    assert by["softmax_mean_log"]["spearman"] == pytest.approx(by["softmax_geo_mean"]["spearman"])
    binary = (gold > 0.5).astype(float)
    rows, _ = evaluate_scores(scores, binary, ci=False, methods=["softmax_mean_log", "softmax_geo_mean"])
    by = {r["method"]: r for r in rows}
    assert "bce" not in by["softmax_mean_log"] and "bce" in by["softmax_geo_mean"]


def test_derive_columns_reads_old_names_and_never_converts_twice() -> None:
    cols = derive_columns({"softmax_mean_log": np.log([0.5, 0.25]), "sigmoid_geomean": np.array([0.9, 0.1]),
                           "boostedprob_geomean": np.array([9.0, 9.0]),
                           "boostedprob_mean_log": np.log([0.3, 0.2]), "softmax_logprob": np.array([-3.0, -4.0]),
                           "rauq_geo_mean": np.array([0.4, 0.6])})
    assert set(cols) == {f"{m}_{a}" for m in ("softmax", "sigmoid", "boostedprob", "rauq")
                         for a in ("mean_log", "geo_mean")} | {"softmax_logprob"}
    assert cols["softmax_mean_log"].tolist() == pytest.approx(np.log([0.5, 0.25]))  # the log, kept
    assert cols["softmax_geo_mean"].tolist() == pytest.approx([0.5, 0.25])
    assert cols["sigmoid_geo_mean"].tolist() == pytest.approx([0.9, 0.1])  # an old geo-mean column
    assert cols["sigmoid_mean_log"].tolist() == pytest.approx(np.log([0.9, 0.1]))
    assert cols["boostedprob_geo_mean"].tolist() == pytest.approx([0.3, 0.2])  # today's name wins
    # a file holding the geometric mean already: kept, not exponentiated a second time
    assert cols["rauq_geo_mean"].tolist() == [0.4, 0.6]
    assert cols["rauq_mean_log"].tolist() == pytest.approx(np.log([0.4, 0.6]))
    assert cols["softmax_logprob"].tolist() == [-3.0, -4.0]  # log-valued: left as it is
    with pytest.raises(ValueError, match="softmax_geo_mean holds values outside"):
        derive_columns({"softmax_geo_mean": np.array([-0.5, -0.1])})


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
    assert "softmax_geo_mean" in [r["method"] for r in got]
    for a, b in zip(got, want, strict=True):
        nums = [k for k, v in b.items() if isinstance(v, float)]
        assert [a[k] for k in nums] == pytest.approx([b[k] for k in nums])
    # the old name meant the geometric mean: the same numbers under today's name for them
    named, _ = evaluate_scores(old, gold, ci=False, methods=["softmax_geomean", "softmax_mean_log"])
    assert [r["method"] for r in named] == ["softmax_geo_mean", "softmax_mean_log"]
    by = {r["method"]: r for r in want}
    assert named[0]["pearson"] == pytest.approx(by["softmax_geo_mean"]["pearson"])


def test_orientation_negates_uncertainties() -> None:
    cols = {"entropy_mean": np.array([1.0, 2.0]), "sigmoid": np.array([0.5, 0.2])}
    out = orient(cols, ["sigmoid", "entropy_mean"])
    assert list(out) == ["sigmoid", "-entropy_mean"]
    assert out["-entropy_mean"].tolist() == [-1.0, -2.0]
    assert orient(cols, ["-entropy_mean"])["-entropy_mean"].tolist() == [-1.0, -2.0]
    with pytest.raises(ValueError, match="no scores for method 'mc_softmax'"):
        orient(cols, ["mc_softmax"])


def test_evaluate_names_the_mix_recorded_beside_the_score_file(tmp_path, capsys) -> None:
    from sigmoid_head.evaluation.combination import DEFAULTS, mix_line, mix_record_path
    from sigmoid_head.scoring.corpus_output import record_mix

    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores)
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    scores.write_text("".join(json.dumps({**r, "combined": r["sigmoid"] * 0.9}) + "\n" for r in rows))
    (tmp_path / "gold.txt").write_text("\n".join(map(str, gold)) + "\n")
    args = ["evaluate", "--scores", str(scores), "--gold", str(tmp_path / "gold.txt"),
            "--metrics", "pearson", "--no-ci"]
    assert cli_main(args) == 0
    assert capsys.readouterr().out.endswith("combined: mix not recorded (older score file)\n")

    record_mix(str(scores), DEFAULTS["generate"], "generate", len(rows), True)
    record = json.loads(mix_record_path(scores).read_text())
    assert record["weight"] == 0.1 and record["baseline"] == "softmax_mean_log"
    assert record["source"] == "default" and record["chosen_on"] == DEFAULTS["generate"].chosen_on
    try:  # --out-dir draws plots (the plots extra)
        import matplotlib  # noqa: F401

        plots = True
    except ImportError:
        plots = False
    assert cli_main([*args, *(("--out-dir", str(tmp_path / "report")) if plots else ())]) == 0
    line = mix_line(DEFAULTS["generate"], "generate")
    assert line.startswith("combined = 0.1 x sigmoid_mean_log + 0.9 x softmax_mean_log (log space) (the default")
    assert f"\n{line}\n" in capsys.readouterr().out
    if plots:
        assert line in (tmp_path / "report" / "results.md").read_text()
    # no line without combined among the rows shown
    _, table = evaluate_scores(scores, gold, ci=False, methods=["sigmoid"])
    assert "combined" not in table

    record_mix(str(scores), DEFAULTS["generate"], "generate", len(rows) + 1, True)  # another file's
    _, table = evaluate_scores(scores, gold, ci=False)
    assert "is not of this file" in table and line not in table
    record_mix(str(scores), None, "score", len(rows), False)  # a later run without combined
    assert not mix_record_path(scores).exists()


def test_an_extra_score_file_with_a_mean_log_is_shown_as_its_geometric_mean(tmp_path) -> None:
    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores)
    extra = tmp_path / "other.jsonl"
    logs = np.log(np.clip(gold, 0.05, 1.0))
    extra.write_text("".join(json.dumps({"other_mean_log": float(v), "kiwi": float(g)}) + "\n"
                             for v, g in zip(logs, gold, strict=True)))
    rows, _ = evaluate_scores({"sigmoid": np.clip(gold, 0, 1)}, gold, ci=False, extra_scores=[extra])
    assert [r["method"] for r in rows] == ["sigmoid", "other_mean_log", "kiwi"]  # not a method
    from sigmoid_head.registry.methods import Method, register, unregister

    register(Method("other", reads="lm_logits", token_values=None))
    try:
        rows, _ = evaluate_scores({"sigmoid": np.clip(gold, 0, 1)}, gold, ci=False, extra_scores=[extra])
    finally:
        unregister("other")
    assert [r["method"] for r in rows] == ["sigmoid", "other_geo_mean", "kiwi"]
    assert rows[1]["pearson"] == pytest.approx(pearson(np.exp(logs), gold))


def test_the_default_table_fits_100_columns_and_width_0_keeps_one(tmp_path, capsys) -> None:
    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores)
    (tmp_path / "gold.txt").write_text("\n".join(map(str, gold)) + "\n")
    args = ["evaluate", "--scores", str(scores), "--gold", str(tmp_path / "gold.txt"),
            "--n-boot", "20"]
    assert cli_main(args) == 0
    parts = capsys.readouterr().out
    assert max(len(line) for line in parts.splitlines()) <= 100
    assert cli_main([*args, "--width", "0"]) == 0
    whole = capsys.readouterr().out
    assert max(len(line) for line in whole.splitlines()) > 100  # the table it splits is wider
    headers = [line for line in parts.splitlines() if line.startswith("method")]
    assert len(headers) > 1  # the method column repeated in every part
    whole_header = next(line for line in whole.splitlines() if line.startswith("method"))
    for metric in whole_header.split()[1:]:  # every column is in one of the parts
        assert any(metric in h.split() for h in headers)


def test_intervals_from_few_items_are_flagged(tmp_path) -> None:
    scores = tmp_path / "scores.jsonl"
    gold = _fake_scores(scores, n=4)
    _, table = evaluate_scores(scores, gold, metrics=["pearson"], n_boot=50)
    assert "note: only 4 items (fewer than 30): the bootstrap intervals are rough" in table
    _, table = evaluate_scores(scores, gold, metrics=["pearson"], ci=False)
    assert "note:" not in table  # no intervals, nothing to flag
    big = tmp_path / "big.jsonl"
    gold = _fake_scores(big, n=40)
    _, table = evaluate_scores(big, gold, metrics=["pearson"], n_boot=50)
    assert "note:" not in table
    groups = [i // 10 for i in range(40)]  # 4 sources of 10 items: the sources are resampled
    _, table = evaluate_scores(big, gold, metrics=["pearson"], n_boot=50, groups=groups)
    assert "note: only 4 sources (fewer than 30)" in table
