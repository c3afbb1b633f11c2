"""``sigmoid-head calibrate`` through the installed entry point, then ``score`` and
``generate`` with the calibrated probabilities, error spans and --html it enables
(committed 0.1.0 head; the scoring runs in-process)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from test_cli import FIXTURE, _pairs, run

from sigmoid_head.cli import main


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> tuple[Path, list[str], Path, Path, list[int]]:
    """A copy of the fixture head with calibration.json and error_spans.json fitted on its
    own three pairs; returns (head, model options, sources, candidates, gold spans per pair)."""
    tmp = tmp_path_factory.mktemp("calibrated")
    head = tmp / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp)
    model = ["--head", str(head), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]
    dev = tmp / "dev.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--with-tokens",
                 "--to-json", str(dev)]) == 0
    rows = _rows(dev)
    gold = tmp / "gold.txt"
    gold.write_text("1\n0\n1\n")
    # the known error: the word the head scores lowest; a threshold just above it finds
    # exactly that word, so the fitted settings reach span F1 1 on this dev set
    i, word = min(((i, w) for i, r in enumerate(rows) for w in r["words"]),
                  key=lambda iw: iw[1]["sigmoid"])
    start = rows[i]["candidate"].index(word["word"])
    gold_spans = [[] for _ in rows]
    gold_spans[i] = [[start, start + len(word["word"])]]
    spans = tmp / "spans.jsonl"
    spans.write_text("".join(json.dumps(s) + "\n" for s in gold_spans))
    res = run("calibrate", "--head", str(head), "--scores", str(dev), "--gold", str(gold),
              "--gold-spans", str(spans))
    assert res.returncode == 0, res.stderr
    assert "raw_ece" in res.stdout and "dev span" in res.stdout
    saved = json.loads((head / "error_spans.json").read_text(encoding="utf-8"))
    assert saved["dev"]["f1"] == 1.0 and saved["threshold"] > word["sigmoid"]
    assert (head / "calibration.json").is_file()
    assert "combined score saved" in res.stdout and (head / "combination.json").is_file()
    return head, model, src, cand, [len(s) for s in gold_spans]


def _check_errors(rows: list[dict]) -> None:
    for r in rows:
        assert isinstance(r["errors"], list)
        for e in r["errors"]:
            assert r["candidate"][e["start"]:e["end"]] == e["text"]
            assert e["severity"] in ("minor", "major") and 0 <= e["confidence"] <= 1


def test_score_adds_probabilities_and_spans(calibrated, tmp_path: Path) -> None:
    _, model, src, cand, n_spans = calibrated
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--to-json", str(out)]) == 0
    rows = _rows(out)
    for r in rows:
        assert 0 <= r["sigmoid_platt"] <= 1 and 0 < r["sigmoid_isotonic"] < 1
        assert "tokens" not in r and "words" not in r  # the spans needed them; not asked for
    _check_errors(rows)
    assert [len(r["errors"]) for r in rows] == n_spans  # the dev set itself: its one span


def _combined_by_hand(r: dict, comb: dict) -> float:
    base = {"softmax_min": lambda: math.log(r["softmax_min"]), "neg_entropy": lambda: -r["entropy_mean"],
            "softmax_mean_log": lambda: r["softmax_mean_log"],
            "boostedprob_mean_log": lambda: r["boostedprob_mean_log"]}[comb["baseline"]]()
    return comb["weight"] * r["sigmoid_mean_log"] + (1 - comb["weight"]) * base


def test_score_reports_the_default_combined_score(tmp_path: Path) -> None:
    """Without a fitted combination.json, score and generate report their defaults."""
    src, cand = _pairs(tmp_path)
    model = ["--head", str(FIXTURE / "head"), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]
    assert not (FIXTURE / "head" / "combination.json").exists()
    for cmd, extra in (("score", ["-t", str(cand)]), ("generate", ["--max-new-tokens", "3"])):
        out = tmp_path / f"{cmd}.jsonl"
        assert main([cmd, "-s", str(src), *extra, *model, "--to-json", str(out)]) == 0
        default = {"score": {"weight": 0.70, "baseline": "softmax_min"},
                   "generate": {"weight": 0.10, "baseline": "softmax_mean_log"}}[cmd]
        for r in _rows(out):
            assert r["combined_log"] == pytest.approx(_combined_by_hand(r, default))
            assert r["combined"] == pytest.approx(math.exp(r["combined_log"]))


def test_score_reports_the_fitted_combined_score(calibrated, tmp_path: Path, capsys) -> None:
    head, model, src, cand, _ = calibrated
    comb = json.loads((head / "combination.json").read_text(encoding="utf-8"))
    out = tmp_path / "scores.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--to-json", str(out)]) == 0
    rows = _rows(out)
    for r in rows:
        assert r["combined_log"] == pytest.approx(_combined_by_hand(r, comb))
    assert "combined" in capsys.readouterr().out  # the summary table has its line


def test_calibrate_fits_the_combination_on_quality_scores(tmp_path: Path) -> None:
    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp_path)
    dev = tmp_path / "dev.jsonl"
    assert main(["score", "-s", str(src), "-t", str(cand), "--head", str(head), "--model",
                 str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--to-json", str(dev)]) == 0
    quality = tmp_path / "chrf.txt"  # a continuous quality: minus the entropy, so weight 0 on it
    quality.write_text("".join(f"{-r['entropy_mean'] * 10 + 50}\n" for r in _rows(dev)))
    res = run("calibrate", "--head", str(head), "--scores", str(dev), "--quality", str(quality))
    assert res.returncode == 0, res.stderr
    comb = json.loads((head / "combination.json").read_text(encoding="utf-8"))
    assert (comb["baseline"], comb["weight"]) == ("neg_entropy", 0.0) and "pearson" in comb["chosen_on"]
    assert not (head / "calibration.json").exists()  # --quality fits the combination only


def test_score_html_page_of_every_row_after_a_resume(calibrated, tmp_path: Path,
                                                     monkeypatch, capsys) -> None:
    from sigmoid_head.safe import files as io_utils

    _, model, src, cand, _ = calibrated
    out, page = tmp_path / "scores.jsonl", tmp_path / "page.html"
    args = ["score", "-s", str(src), "-t", str(cand), *model, "--to-json", str(out),
            "--html", str(page), "--batch-size", "1"]
    # rows reach the disk a window at a time (here: windows of one input)
    monkeypatch.setattr("sigmoid_head.scoring.distributed.DEFAULT_WINDOW_BATCHES", 1)

    class Killed(BaseException):
        """Stands for SIGKILL after the first row is on disk."""

    def kill(name: str) -> None:
        if name == "records written":
            raise Killed

    with monkeypatch.context() as m:
        m.setattr(io_utils, "fault_point", kill)
        with pytest.raises(Killed):
            main(args)
    assert not out.exists() and not page.exists()
    assert len(_rows(out.with_name(out.name + ".partial"))) == 1
    capsys.readouterr()
    assert main(args) == 0
    assert "continuing after 1 rows" in capsys.readouterr().out
    rows = _rows(out)
    assert len(rows) == 3 and all("tokens" in r for r in rows)  # the page's rows are written
    html = page.read_text(encoding="utf-8")
    assert html.count('class="item"') == 3 and "sigmoid word score &lt;" in html
    for r in rows:  # every row's candidate is on the page, the resumed one included
        assert r["candidate"].split()[-1] in html


def test_score_html_without_to_json(calibrated, tmp_path: Path) -> None:
    _, model, src, cand, _ = calibrated
    page = tmp_path / "page.html"
    assert main(["score", "-s", str(src), "-t", str(cand), *model, "--html", str(page)]) == 0
    assert page.read_text(encoding="utf-8").count('class="item"') == 3


def test_generate_applies_them_too(calibrated, tmp_path: Path) -> None:
    _, model, src, _, _ = calibrated
    out = tmp_path / "gen.jsonl"
    assert main(["generate", "-s", str(src), *model, "--max-new-tokens", "4",
                 "--to-json", str(out)]) == 0
    rows = _rows(out)
    assert all(0 <= r["sigmoid_platt"] <= 1 for r in rows)
    _check_errors(rows)


@pytest.mark.parametrize("args, message", [
    (["calibrate", "--head", ".", "--scores", "s.jsonl"], "give --gold"),
    (["calibrate", "--head", "head", "--scores", "s.jsonl", "--quality", "q.txt"], "scored items"),
])
def test_user_errors(tmp_path: Path, args, message) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    shutil.copytree(FIXTURE / "head", tmp_path / "head")
    (tmp_path / "s.jsonl").write_text('{"sigmoid_mean_log": -0.1, "softmax_min": 0.5}\n' * 3)
    (tmp_path / "q.txt").write_text("1\n2\n")
    res = run(*args, cwd=tmp_path)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("bad", [[5, 2], [-1, 3], [0, 10_000], ["a", 1]])
def test_calibrate_refuses_a_bad_gold_span_and_writes_nothing(calibrated, tmp_path: Path,
                                                              capsys, bad) -> None:
    """Issue 26, item 5: a gold span that is not a character range of its candidate is
    refused naming file:line, and calibrate writes nothing (it used to have written
    calibration.json and combination.json by then)."""
    fitted, *_ = calibrated
    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    before = sorted(p.name for p in head.iterdir())
    spans = tmp_path / "spans.jsonl"
    spans.write_text("[]\n" + json.dumps([bad]) + "\n[]\n")
    code = main(["calibrate", "--head", str(head), "--scores", str(fitted.parent / "dev.jsonl"),
                 "--gold", str(fitted.parent / "gold.txt"), "--gold-spans", str(spans)])
    err = capsys.readouterr().err
    assert code == 2 and f"{spans}:2: " in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in head.iterdir()) == before
