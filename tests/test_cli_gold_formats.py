"""``evaluate`` and ``calibrate`` on the QE gold formats, through the command line: the
fixtures of tests/data/qe_formats, hand-made word scores, and real ``score`` output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import FIXTURE
from test_evaluation_gold_formats import DATA, ESA_SCORES, record

from sigmoid_head.cli import main
from sigmoid_head.evaluation.gold_formats import read_gold_items


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _scores(tmp_path: Path, gold: Path, scores: list[list[float]], **kw) -> Path:
    items = read_gold_items(gold, **kw)
    return _write(tmp_path / "scores.jsonl",
                  [record(it.text, s) for it, s in zip(items, scores, strict=True)])


WMT_SCORES = [[0.9, 0.8, 0.9, 0.7, 0.9], [0.9, 0.6, 0.2, 0.9], [0.9, 0.3, 0.8, 0.6, 0.9]]


@pytest.mark.parametrize("tags", ["dev.tags", "dev.word_tags"])
def test_evaluate_wmt_tags_prints_the_hand_computed_table(tmp_path, capsys, tags) -> None:
    gold = DATA / "wmt_word_tags" / tags
    scores = _scores(tmp_path, gold, WMT_SCORES, fmt="wmt-tags", mt=DATA / "wmt_word_tags" / "dev.mt")
    argv = ["evaluate", "--scores", str(scores), "--gold", str(gold), "--gold-format", "wmt-tags",
            "--gold-mt", str(DATA / "wmt_word_tags" / "dev.mt"), "--n-boot", "50",
            "--gold-source", str(DATA / "wmt_word_tags" / "dev.src"),
            "--out-dir", str(tmp_path / "out")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # MCC 22/sqrt(792) = 0.782, F1-BAD 0.8, ROC-AUC 32.5/33 = 0.985, AP 11/12 = 0.917
    assert "| sigmoid | 0.782 [" in out and "| 0.800 [" in out and "0.985 [" in out
    assert "0.917 [" in out and "14 words (3 BAD)" in out and "(2 sources)" in out
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["methods"]["sigmoid"]["mpp_f1"][0] == pytest.approx(0.8)


def test_evaluate_detects_esa_and_reports_per_severity(tmp_path, capsys) -> None:
    gold = DATA / "esa" / "wmt24_esa_sample.jsonl"
    scores = _scores(tmp_path, gold, ESA_SCORES)
    assert main(["evaluate", "--scores", str(scores), "--gold", str(gold), "--no-ci"]) == 0
    out = capsys.readouterr().out
    assert "Recall by severity" in out and "| major | 1.000 | 1.000 | 2 |" in out
    assert "| minor | 0.286 | 0.500 | 2 |" in out  # 2 of 7 characters, 1 of 2 spans
    assert "(+ 1 without a place)" in out and "no intervals" in out and "(3 sources)" in out


def test_evaluate_ragtruth_and_mqm_are_detected(tmp_path, capsys) -> None:
    for gold, n in ((DATA / "ragtruth" / "response.jsonl", 3), (DATA / "mqm" / "mqm_sample.jsonl", 3)):
        items = read_gold_items(gold)
        scores = _write(tmp_path / "s.jsonl", [record(it.text, [0.9] * len(it.text.split()))
                                               for it in items])
        assert main(["evaluate", "--scores", str(scores), "--gold", str(gold), "--n-boot", "20"]) == 0
        assert f"{n} items" in capsys.readouterr().out


def test_evaluate_refuses_scores_of_other_texts(tmp_path, capsys) -> None:
    gold = DATA / "esa" / "wmt24_esa_sample.jsonl"
    rows = [record("something else", [0.5, 0.5])] * 4
    scores = _write(tmp_path / "s.jsonl", rows)
    assert main(["evaluate", "--scores", str(scores), "--gold", str(gold)]) == 2
    assert "differs from the gold text" in capsys.readouterr().err


def test_calibrate_fits_span_settings_from_each_format_then_evaluate_uses_them(tmp_path, capsys) -> None:
    head = tmp_path / "head"
    head.mkdir()
    (head / "head_config.json").write_text("{}")
    gold = DATA / "esa" / "wmt24_esa_sample.jsonl"
    scores = _scores(tmp_path, gold, ESA_SCORES)
    assert main(["calibrate", "--head", str(head), "--scores", str(scores), "--gold-spans",
                 str(gold)]) == 0
    saved = json.loads((head / "error_spans.json").read_text())
    # the best cut keeps "Hund." and "和咖啡。" (0.1, 0.2) and "au" (0.4): 0.4 < t < 0.9
    assert 0.4 < saved["threshold"] < 0.9 and saved["dev"]["f1"] == pytest.approx(2 / 3)
    capsys.readouterr()
    assert main(["evaluate", "--scores", str(scores), "--gold", str(gold), "--head", str(head),
                 "--n-boot", "20"]) == 0
    assert f"sigmoid < {saved['threshold']:g}" in capsys.readouterr().out
    for fmt_gold, sc in ((DATA / "wmt_word_tags" / "dev.tags", WMT_SCORES),
                         (DATA / "ragtruth" / "response.jsonl", None)):
        items = read_gold_items(fmt_gold)
        rows = [record(it.text, s if sc else [0.9] * len(it.text.split()))
                for it, s in zip(items, sc or [None] * len(items), strict=True)]
        assert main(["calibrate", "--head", str(head), "--scores", str(_write(tmp_path / "x.jsonl", rows)),
                     "--gold-spans", str(fmt_gold)]) == 0
    assert json.loads((head / "error_spans.json").read_text())["dev"]["n"] == 3


def test_real_score_output_evaluates_against_esa(tmp_path, capsys) -> None:
    gold = DATA / "esa" / "wmt24_esa_sample.jsonl"
    recs = [json.loads(x) for x in gold.read_text(encoding="utf-8").splitlines()]
    inp = _write(tmp_path / "in.jsonl", [{"source": r["src"], "candidate": r["tgt"]} for r in recs])
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--input", str(inp), "--head", str(FIXTURE / "head"), "--model",
                 str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--with-tokens",
                 "--to-json", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    for r, g in zip(rows, recs, strict=True):
        assert r["candidate"] == g["tgt"]
        for w in r["words"]:
            assert r["candidate"][w["start"]:w["end"]] == w["word"]
    capsys.readouterr()
    assert main(["evaluate", "--scores", str(out), "--gold", str(gold), "--n-boot", "20"]) == 0
    table = capsys.readouterr().out
    assert "| sigmoid |" in table and "| softmax |" in table and "| boostedprob |" in table


def test_gold_format_offers_every_layout_the_readers_know() -> None:
    """``--gold-format`` lists every reader's layout (Google's MQM TSV and Mu-SHROOM were
    reachable only by detection before)."""
    from sigmoid_head.cli import build_parser
    from sigmoid_head.evaluation.gold_formats import FORMATS

    for command in ("evaluate", "calibrate"):
        parser = build_parser([command])
        sub = next(a for a in parser._subparsers._group_actions[0].choices.values()
                   if any("--gold-format" in o.option_strings for o in a._actions))
        action = next(o for o in sub._actions if "--gold-format" in o.option_strings)
        assert set(action.choices) == set(FORMATS) >= {"google-mqm", "mushroom"}, command
