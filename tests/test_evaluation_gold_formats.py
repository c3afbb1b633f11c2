"""Readers of WMT word tags, ESA/MQM spans and RAGTruth spans: each fixture read, evaluated,
and compared with figures worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sigmoid_head.evaluation.gold_eval import evaluate_gold, format_gold_report
from sigmoid_head.evaluation.gold_formats import (
    detect_format,
    read_gold_items,
    read_span_jsonl,
    read_wmt_tags,
    whitespace_words,
)

DATA = Path(__file__).parent / "data" / "qe_formats"


def record(text: str, scores: list[float], method: str = "sigmoid") -> dict:
    """A score record of ``text`` whose whitespace words have the given scores."""
    words = whitespace_words(text)
    assert len(words) == len(scores)
    return {"candidate": text, "words": [{"word": text[s:e], "start": s, "end": e, method: p}
                                         for (s, e), p in zip(words, scores, strict=True)]}


def prf(p: float, r: float) -> float:
    return 2 * p * r / (p + r)


def test_formats_are_detected() -> None:
    assert detect_format(DATA / "wmt_word_tags" / "dev.tags") == "wmt-tags"
    assert detect_format(DATA / "esa" / "wmt24_esa_sample.jsonl") == "esa"
    assert detect_format(DATA / "mqm" / "mqm_sample.jsonl") == "mqm"
    assert detect_format(DATA / "ragtruth" / "response.jsonl") == "ragtruth"


def test_wmt_tags_with_and_without_gaps_read_the_same_words() -> None:
    folder = DATA / "wmt_word_tags"
    gaps = read_wmt_tags(folder / "dev.tags", source=folder / "dev.src")
    plain = read_wmt_tags(folder / "dev.word_tags", folder / "dev.mt")
    assert [it.word_bad for it in gaps] == [it.word_bad for it in plain] == [
        [0] * 5, [0, 0, 1, 0], [0, 1, 0, 1, 0]]
    assert gaps[2].gap_tags == [0, 1, 0, 0, 0, 0] and plain[2].gap_tags is None
    assert [(s["start"], s["end"]) for s in gaps[2].spans] == [(4, 8), (12, 18)]
    assert gaps[0].group == gaps[2].group != gaps[1].group  # one source, two translations


def test_wmt_tags_round_trip_matches_the_hand_computation() -> None:
    items = read_gold_items(DATA / "wmt_word_tags" / "dev.tags")
    rows = [record(it.text, s) for it, s in zip(items, [
        [0.9, 0.8, 0.9, 0.7, 0.9], [0.9, 0.6, 0.2, 0.9], [0.9, 0.3, 0.8, 0.6, 0.9]], strict=True)]
    res = evaluate_gold(rows, items, n_boot=50)
    m = {k: v[0] for k, v in res["methods"]["sigmoid"].items()}
    # BAD predicted below 0.5: sleep, home; gold BAD: sleep, home, little; 14 words
    assert m["mcc"] == pytest.approx(22 / math.sqrt(2 * 3 * 11 * 12), abs=1e-12)
    assert m["f1_bad"] == pytest.approx(4 / 5, abs=1e-12)
    assert m["roc_auc"] == pytest.approx(32.5 / 33, abs=1e-12)  # 0.6 ties one OK word
    assert m["ap"] == pytest.approx(1 / 3 + 1 / 3 + (1 / 3) * (3 / 4), abs=1e-12)
    assert (m["char_p"], m["char_r"]) == pytest.approx((1.0, 9 / 15), abs=1e-12)
    assert (m["mpp_p"], m["mpp_r"], m["mpp_f1"]) == pytest.approx((1.0, 2 / 3, 0.8), abs=1e-12)
    assert res["n_words"] == 14 and res["n_bad_words"] == 3


ESA_SCORES = [[0.9, 0.9, 0.9, 0.9, 0.9, 0.1], [0.9] * 6, [0.9, 0.9, 0.2],
              [0.9, 0.4, 0.9, 0.9, 0.9, 0.9]]


def test_esa_reads_wmt24_fields_and_keeps_omissions_apart() -> None:
    items = read_span_jsonl(DATA / "esa" / "wmt24_esa_sample.jsonl")
    assert len(items) == 4 and items[0].group == items[1].group
    zh = items[2]
    assert [zh.text[s["start"]:s["end"]] for s in zh.spans] == ["🐱", "咖啡"]
    assert zh.omissions == [{"severity": "minor", "category": None}]
    assert items[3].text[items[3].spans[0]["start"]:items[3].spans[0]["end"]] == "au lait"


def test_esa_round_trip_matches_the_hand_computation() -> None:
    items = read_gold_items(DATA / "esa" / "wmt24_esa_sample.jsonl", "esa")
    rows = [record(it.text, s) for it, s in zip(items, ESA_SCORES, strict=True)]
    res = evaluate_gold(rows, items, n_boot=50)
    m = {k: v[0] for k, v in res["methods"]["sigmoid"].items()}
    # predicted spans: "Hund." (gold "Hund"), "和咖啡。" (gold "咖啡" and "🐱"), "au" (gold "au lait")
    assert (m["char_p"], m["char_r"], m["char_f1"]) == pytest.approx((8 / 11, 8 / 13, 2 / 3), abs=1e-12)
    p, r = (4 / 5 + 2 / 4 + 1) / 3, (1 + 1 + 0 + 1 / 3) / 4
    assert (m["mpp_p"], m["mpp_r"], m["mpp_f1"]) == pytest.approx((p, r, prf(p, r)), abs=1e-12)
    # words: BAD Hund., 🐱, 和咖啡。, au, lait,; predicted BAD Hund., 和咖啡。, au; 21 words
    assert m["mcc"] == pytest.approx(48 / math.sqrt(3 * 5 * 16 * 18), abs=1e-12)
    assert m["f1_bad"] == pytest.approx(6 / 8, abs=1e-12)
    sev = {k: {n: v[0] for n, v in d.items()} for k, d in res["by_severity"].items()}
    assert sev["major"] == {"char_recall": 1.0, "spans_hit": 1.0, "n_spans": 2.0}
    assert sev["minor"] == pytest.approx({"char_recall": 2 / 7, "spans_hit": 0.5, "n_spans": 2.0})
    assert res["omissions"] == 1 and res["by_category"] == {}


def test_severity_weighting_weighs_gold_spans_by_severity() -> None:
    items = read_gold_items(DATA / "esa" / "wmt24_esa_sample.jsonl")
    rows = [record(it.text, s) for it, s in zip(items, ESA_SCORES, strict=True)]
    m = evaluate_gold(rows, items, severity_weighted=True, n_boot=20)["methods"]["sigmoid"]
    # major = 5, minor = 1; every predicted span here is "minor"
    assert m["mpp_r"][0] == pytest.approx((5 + 5 + 0 + 1 / 3) / 12, abs=1e-12)
    assert m["mpp_p"][0] == pytest.approx((4 / 5 + 2 / 4 + 1) / 3, abs=1e-12)
    res = evaluate_gold(rows, items, severity_weighted=True, n_boot=20)
    assert "MPP weighted by severity" in format_gold_report(res)


def test_mqm_reports_recall_per_category() -> None:
    items = read_gold_items(DATA / "mqm" / "mqm_sample.jsonl")
    assert [it.group for it in items][0] == items[1].group != items[2].group
    scores = [[0.9, 0.9, 0.9, 0.9, 0.1, 0.1], [0.9] * 5, [0.9, 0.9, 0.9, 0.9, 0.9, 0.9]]
    rows = [record(it.text, s) for it, s in zip(items, scores, strict=True)]
    res = evaluate_gold(rows, items, n_boot=20)
    cat = {k: {n: v[0] for n, v in d.items()} for k, d in res["by_category"].items()}
    # predicted: "unterschrieben unterschrieben." covers the grammar span; nothing else
    assert cat["Fluency/Grammar"] == {"char_recall": 1.0, "spans_hit": 1.0, "n_spans": 1.0}
    assert cat["Accuracy/Mistranslation"]["char_recall"] == 0.0
    assert cat["Accuracy/Omission"]["spans_hit"] == 0.0
    assert "Recall by category" in format_gold_report(res)


def test_ragtruth_round_trip_and_records_errors_row() -> None:
    items = read_gold_items(DATA / "ragtruth" / "response.jsonl")
    assert [it.group for it in items] == ["s1", "s1", "s2"]
    assert items[2].spans[0]["category"] == "Evident Baseless Info"
    rows = []
    for it in items:
        r = record(it.text, [0.9] * len(whitespace_words(it.text)))
        r["errors"] = [{"start": s["start"], "end": s["start"] + 2} for s in it.spans]
        rows.append(r)
    res = evaluate_gold(rows, items, n_boot=20)
    e = {k: v[0] for k, v in res["methods"]["errors"].items()}
    assert "mcc" not in e
    # "19" of "1999" (2 of 4 characters), "it" of a 24-character span
    assert (e["char_p"], e["char_r"]) == pytest.approx((1.0, 4 / 28), abs=1e-12)
    assert e["mpp_r"] == pytest.approx((2 / 4 + 2 / 24) / 2, abs=1e-12)


def test_bad_inputs_are_rejected(tmp_path) -> None:
    (tmp_path / "a.mt").write_text("one two\n", encoding="utf-8")
    (tmp_path / "a.tags").write_text("OK OK OK OK\n", encoding="utf-8")
    with pytest.raises(ValueError, match="4 tags for 2 MT words"):
        read_wmt_tags(tmp_path / "a.tags")
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps({"tgt": "short", "esa_spans": [{"start_i": 2, "end_i": 9}]}) + "\n")
    with pytest.raises(ValueError, match="not inside"):
        read_span_jsonl(bad)
    with pytest.raises(ValueError, match="gold format"):
        detect_format(tmp_path / "a.mt")


def test_error_spans_follow_the_words_own_offsets() -> None:
    from sigmoid_head.evaluation.spans import SpanConfig, find_errors

    text = "no yes no"
    words = [{"word": "no", "start": 0, "end": 2, "sigmoid": 0.9},
             {"word": "yes", "start": 3, "end": 6, "sigmoid": 0.9},
             {"word": "no", "start": 7, "end": 9, "sigmoid": 0.01}]
    (err,) = find_errors(text, words, SpanConfig(threshold=0.1))
    assert (err["start"], err["end"]) == (7, 9)
    words[2]["start"], words[2]["end"] = 6, 9  # offsets win over searching the text
    assert find_errors(text, words, SpanConfig(threshold=0.1))[0]["text"] == " no"


def test_a_gold_word_takes_its_weakest_scored_piece() -> None:
    from sigmoid_head.evaluation.gold_eval import gold_word_scores

    rec = {"candidate": "Hund. ja", "words": [
        {"word": "Hund", "start": 0, "end": 4, "sigmoid": 0.2},
        {"word": ".", "start": 4, "end": 5, "sigmoid": 0.9}]}
    assert gold_word_scores(rec, "sigmoid").tolist() == [0.2, 1.0]  # "ja" was not scored


def test_word_runs_are_remembered_by_content_not_by_record() -> None:
    """The runs are cached by candidate and offsets: the same record again, or a copy, gives
    the same runs; the same text with other offsets is searched again."""
    from sigmoid_head.evaluation.gold_eval import gold_word_scores, word_runs

    rec = {"candidate": "Hund. ja", "words": [
        {"word": "Hund", "start": 0, "end": 4, "sigmoid": 0.2},
        {"word": ".", "start": 4, "end": 5, "sigmoid": 0.9}]}
    first = word_runs(rec)
    assert first == ((0, 1), ()) and word_runs({**rec}) == first
    moved = {"candidate": rec["candidate"], "words": [{**rec["words"][0]},
                                                      {**rec["words"][1], "start": 6, "end": 8}]}
    assert word_runs(moved) == ((0,), (1,))
    assert gold_word_scores(moved, "sigmoid").tolist() == [0.2, 0.9]
    assert gold_word_scores(rec, "sigmoid").tolist() == [0.2, 1.0]


def test_wmt2021_long_tags_read_as_their_plain_lines(tmp_path) -> None:
    """WMT 2021's gold (one tag a row) reads as the same words written one line a sentence."""
    roen = Path(__file__).parent / "data" / "human_qe" / "mlqe_roen"
    long = tmp_path / "test.tags"
    long.write_bytes((roen / "task2_wordlevel_mt.tags").read_bytes())
    (tmp_path / "test.mt").write_bytes((roen / "test21.tok.mt").read_bytes())
    assert detect_format(long) == "wmt-tags"
    items = read_gold_items(long)
    # the plain layout written independently from the long rows' columns
    per: dict[int, list[str]] = {}
    for line in long.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if cols[2] == "mt":
            per.setdefault(int(cols[3]), []).append(cols[6])
    texts = (roen / "test21.tok.mt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "plain.tags").write_text("\n".join(" ".join(per[k]) for k in range(len(texts))) + "\n")
    plain = read_wmt_tags(tmp_path / "plain.tags", tmp_path / "test.mt")
    assert len(items) == len(texts) == 30
    assert [it.word_bad for it in items] == [it.word_bad for it in plain]
    assert sum(map(sum, (it.word_bad for it in items))) > 0
    assert [it.spans for it in items] == [it.spans for it in plain]
    # a long file naming a sentence the MT file lacks, or a word id that is not a number
    (tmp_path / "short.mt").write_text("\n".join(texts[:5]) + "\n")
    with pytest.raises(ValueError, match="MT tags for sentence 29 but .* has 5 lines"):
        read_wmt_tags(long, tmp_path / "short.mt")
    bad = tmp_path / "bad.tags"
    bad.write_text("ro-en\tREFERENCE\tmt\t0\tx\tIn\tOK\n")
    with pytest.raises(ValueError, match="bad.tags:1: sentence and word ids must be whole numbers"):
        read_wmt_tags(bad, tmp_path / "test.mt")
