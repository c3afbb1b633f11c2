"""The combined score's defaults are chosen on dev (only) and measured on test."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from recipes.bible import default_combination as dc


def _suite(folder: Path, seed: int, n: int = 400) -> None:
    """An eval_other_suite.py output whose labels follow 0.75 * head + 0.25 * softmax@min."""
    rng = np.random.default_rng(seed)
    head, soft_min = rng.normal(size=n), rng.normal(size=n)
    labels = (0.75 * head + 0.25 * soft_min + 0.05 * rng.normal(size=n) > 0).astype(int)
    folder.mkdir()
    np.savez(folder / "sequence_scores.npz", **{
        "sigmoid:h@mean": head, "softmax@min": soft_min, "softmax@mean": rng.normal(size=n),
        "boostedprob@mean": rng.normal(size=n), "entropy@mean": rng.normal(size=n)})
    (folder / "candidates.json").write_text(json.dumps([{"label": int(y), "item": i // 4}
                                                        for i, y in enumerate(labels)]))


def test_choice_is_made_on_dev_and_the_test_gain_is_measured(tmp_path: Path) -> None:
    _suite(tmp_path / "dev", 0)
    _suite(tmp_path / "test", 1)
    r = dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=200)
    assert (r["choice"]["baseline"], r["choice"]["weight"]) == ("softmax_min", pytest.approx(0.75, abs=0.1))
    assert r["choice"]["best_baseline_alone"] == "softmax_min"
    pb = r["test"]["heads"]["h"]["vs_baseline"]
    assert pb["delta"] > 0.2 and pb["p_value"] < 0.05  # the mix beats the weak baseline alone
    assert f"w = {r['choice']['weight']:.2f} on the head, baseline `softmax_min`" in dc.markdown({"eval_other": r})


def test_test_books_do_not_move_the_choice(tmp_path: Path) -> None:
    _suite(tmp_path / "dev", 0)
    _suite(tmp_path / "test", 1)
    _suite(tmp_path / "other_test", 7)
    a = dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=50)["choice"]
    b = dc.eval_other(tmp_path / "dev", tmp_path / "other_test", n_boot=50)["choice"]
    assert a == b


def test_checks_apply_the_dev_choice_unchanged(tmp_path: Path) -> None:
    for name, seed in (("dev", 0), ("test", 1), ("llm", 2)):
        _suite(tmp_path / name, seed)
    r = dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=50, checks=[("llm", tmp_path / "llm")])
    assert set(r["test"]) == {"", "llm"}
    assert r["choice"] == dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=50)["choice"]
    assert "Test books (llm)" in dc.markdown({"eval_other": r})


def test_several_runs_choose_together_and_each_is_measured(tmp_path: Path) -> None:
    """Repeated --other: every dev suite counts once in the choice; each test suite is measured."""
    for name, seed in (("dev", 0), ("test", 1), ("dev2", 3), ("test2", 4)):
        _suite(tmp_path / name, seed)
    r = dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=50, also=[(tmp_path / "dev2", tmp_path / "test2")])
    assert set(r["test"]) == {"test", "test2"}
    loaded = [(dict(np.load(tmp_path / d / "sequence_scores.npz")),
               np.array([c["label"] for c in json.loads((tmp_path / d / "candidates.json").read_text())], float))
              for d in ("dev", "dev2")]
    assert r["choice"] == dc.choose(loaded, dc.roc_auc)
    assert r["choice"] != dc.choose(loaded[:1], dc.roc_auc)  # the second run moved the choice
    alone = dc.eval_other(tmp_path / "dev2", tmp_path / "test2", n_boot=50)
    assert r["test"]["test2"]["heads"]["h"]["head_alone"] == alone["test"]["heads"]["h"]["head_alone"]
    text = dc.markdown({"eval_other": r})
    assert "Test books (test)" in text and "Test books (test2)" in text


def test_committed_data_give_the_same_report_as_the_run_folders(tmp_path: Path, monkeypatch) -> None:
    from recipes.bible import tables

    _suite(tmp_path / "dev", 0)
    _suite(tmp_path / "test", 1)
    data = tmp_path / "data"
    for split in ("dev", "test"):
        tables.save(tables.from_suite(tmp_path / split) | {"name": f"toy_{split}"}, data)
    monkeypatch.setattr(dc, "DATA", data)
    from_runs = dc.eval_other(tmp_path / "dev", tmp_path / "test", n_boot=50)
    from_data = dc.eval_other(Path("toy_dev"), Path("toy_test"), n_boot=50, from_data=True)
    assert dc.markdown({"eval_other": from_data}) == dc.markdown({"eval_other": from_runs})
    assert from_data["choice"]["weight"] == pytest.approx(0.75, abs=0.1)


def test_the_report_from_committed_data_is_checked_against_its_file(tmp_path: Path, monkeypatch) -> None:
    from recipes.bible import tables

    data = tmp_path / "data"
    for split, seed in (("dev", 0), ("test", 1)):
        _suite(tmp_path / split, seed)
        tables.save(tables.from_suite(tmp_path / split) | {"name": f"toy_{split}"}, data)
    monkeypatch.setattr(dc, "DATA", data)
    out = tmp_path / "report.md"
    argv = ["--packed", "--other", "toy_dev", "toy_test", "--boot", "50", "--out", str(out)]
    assert dc.main(argv) == 0
    text = out.read_text()
    assert "--packed --other toy_dev toy_test" in text and "--check" not in text.split("`;")[0]
    assert dc.main([*argv, "--check"]) == 0
    line = next(x for x in text.splitlines() if x.startswith("| ") and "[" in x)
    edited = line.replace(line.split("|")[2], " 0.999 [0.998, 1.000] ")
    out.write_text(text.replace(line, edited))  # a hand-edited number
    assert dc.main([*argv, "--check"]) == 1
    assert out.read_text() != text  # --check wrote nothing
    out.write_text(text)
    report = out.with_suffix(".json")
    report.write_text(report.read_text().replace('"delta": ', '"delta": 1', 1))  # the JSON edited
    assert dc.main([*argv, "--check"]) == 1


def test_the_committed_report_matches_the_committed_data(monkeypatch) -> None:
    """docs/results/default_combination.md is rebuilt from docs/results/data by the command it
    names; a hand-edited number there fails here (about 10 s)."""
    root = Path(__file__).resolve().parents[2]
    report = root / "docs" / "results" / "default_combination.md"
    command = report.read_text(encoding="utf-8").split("by `python -m recipes.bible.default_combination ", 1)[1]
    argv = shlex.split(command.split("`", 1)[0])
    monkeypatch.chdir(root)
    assert dc.main([*argv, "--check"]) == 0


def test_the_library_defaults_are_the_committed_dev_choice() -> None:
    """DEFAULTS["score"] and DEFAULTS["generate"] are what default_combination.py chose on the
    dev books, as committed in docs/results/default_combination.json (a rebuild that moves
    the choice must move the defaults too)."""
    from sigmoid_head.evaluation.combination import DEFAULTS

    root = Path(__file__).resolve().parents[2]
    report = json.loads((root / "docs" / "results" / "default_combination.json").read_text(encoding="utf-8"))
    for command, part in (("score", "eval_other"), ("generate", "eval_self")):
        choice = report[part]["choice"]
        assert DEFAULTS[command].baseline == choice["baseline"], command
        assert DEFAULTS[command].weight == pytest.approx(choice["weight"]), command
