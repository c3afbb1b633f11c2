"""``sigmoid-head calibrate`` through the installed entry point, then ``score`` with the
calibrated probabilities, error spans and --html it enables (committed 0.1.0 head)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import FIXTURE, _pairs, run

MODEL = ["--head", str(FIXTURE / "head"), "--model", str(FIXTURE / "base"), "--device", "cpu"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def test_calibrate_then_score_adds_probabilities_spans_and_page(tmp_path: Path) -> None:
    import shutil

    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp_path)
    dev = tmp_path / "dev.jsonl"
    model = ["--head", str(head), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]
    res = run("score", "-s", str(src), "-t", str(cand), *model, "--with-tokens", "--to-json", str(dev))
    assert res.returncode == 0, res.stderr
    rows = _rows(dev)
    gold = tmp_path / "gold.txt"
    gold.write_text("1\n0\n1\n")
    spans = tmp_path / "spans.jsonl"  # the first word of the second candidate is "wrong"
    first = rows[1]["words"][0]["word"]
    start = rows[1]["candidate"].index(first)
    spans.write_text("[]\n" + json.dumps([[start, start + len(first)]]) + "\n[]\n")
    res = run("calibrate", "--head", str(head), "--scores", str(dev), "--gold", str(gold),
              "--gold-spans", str(spans))
    assert res.returncode == 0, res.stderr
    assert (head / "calibration.json").is_file() and (head / "error_spans.json").is_file()
    assert "raw_ece" in res.stdout and "dev span" in res.stdout
    out, page = tmp_path / "scores.jsonl", tmp_path / "page.html"
    res = run("score", "-s", str(src), "-t", str(cand), *model, "--to-json", str(out),
              "--html", str(page))
    assert res.returncode == 0, res.stderr
    rows = _rows(out)
    for r in rows:
        assert 0 <= r["sigmoid_platt"] <= 1 and 0 < r["sigmoid_isotonic"] < 1
        assert "tokens" not in r and isinstance(r["errors"], list)
        for e in r["errors"]:
            assert r["candidate"][e["start"]:e["end"]] == e["text"]
            assert e["severity"] in ("minor", "major") and 0 <= e["confidence"] <= 1
    assert page.read_text(encoding="utf-8").count('class="item"') == 3


@pytest.mark.parametrize("args, message", [
    (["calibrate", "--head", ".", "--scores", "s.jsonl"], "give --gold"),
])
def test_user_errors(tmp_path: Path, args, message) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    res = run(*args, cwd=tmp_path)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr
