"""Readers and metrics for human-labelled sets (issue 38): WMT word level with gaps and
source tags, Google's MQM TSV, Mu-SHROOM. Slices of the real files where their licence
lets us commit them (tests/data/human_qe/README.md); a synthetic file in Mu-SHROOM's
layout (the repository states no licence); the real files when a local clone is named."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import matthews_corrcoef

from sigmoid_head.evaluation.gold_formats import whitespace_words
from sigmoid_head.evaluation.gold_mqm import (
    merge_spans,
    mqm_weight,
    read_google_mqm,
    strip_marks,
)
from sigmoid_head.evaluation.gold_shroom import (
    char_probs,
    iou,
    probs_from_words,
    read_mushroom,
    shroom_scores,
    spearman,
)
from sigmoid_head.evaluation.gold_wmt import (
    NO_SOURCE_SCORES,
    gap_metrics,
    gap_scores,
    read_long_tags,
    read_wmt_word_level,
    run_spans,
    source_metrics,
)

DATA = Path(__file__).parent / "data" / "human_qe"
ROEN = DATA / "mlqe_roen"


# ----------------------------------------------------------------------------- WMT
def test_wmt21_long_layout_reads_words_gaps_and_source_tags() -> None:
    items = read_wmt_word_level(
        ROEN / "test21.tok.mt",
        ROEN / "task2_wordlevel_mt.tags",
        gap_tags=ROEN / "task2_wordlevel_gaps.tags",
        source=ROEN / "test21.tok.src",
        source_tags=ROEN / "task2_wordlevel_src.tags",
    )
    assert len(items) == 30
    for it in items:
        n = len(whitespace_words(it.text))
        assert len(it.word_bad) == n and len(it.gap_tags) == n + 1
        assert len(it.source_bad) == len(it.source.split())
    table = read_long_tags(ROEN / "task2_wordlevel_mt.tags")["mt"]
    assert sum(map(sum, table.values())) == sum(sum(it.word_bad) for it in items) > 0
    assert sum(sum(it.gap_tags) for it in items) > 0  # the slice has BAD gaps
    assert sum(sum(it.source_bad) for it in items) > 0
    # the first sentence's tags as the file lists them, in word order
    first = [ln.split("\t") for ln in (ROEN / "task2_wordlevel_mt.tags").read_text().splitlines()]
    assert [int(c[6] == "BAD") for c in first if c[3] == "0"] == items[0].word_bad


def test_plain_tags_with_interleaved_gaps_and_source_tags() -> None:
    items = read_wmt_word_level(
        ROEN / "test20.mt",
        ROEN / "test20.tags",
        source=ROEN / "test20.src",
        source_tags=ROEN / "test20.source_tags",
    )
    raw = (ROEN / "test20.tags").read_text().splitlines()
    for it, line in zip(items, raw, strict=True):
        tags = [int(t == "BAD") for t in line.split()]
        assert it.gap_tags == tags[0::2] and it.word_bad == tags[1::2]


def test_tag_count_mismatch_names_the_sentence(tmp_path: Path) -> None:
    (tmp_path / "a.mt").write_text("one two three\n")
    (tmp_path / "a.tags").write_text("OK BAD\n")
    with pytest.raises(ValueError, match="sentence 0: 2 MT tags for 3 words"):
        read_wmt_word_level(tmp_path / "a.mt", tmp_path / "a.tags")


def test_run_spans_one_span_per_run_of_bad_words() -> None:
    text = "a b c d e"
    spans = run_spans(text, [1, 1, 0, 1, 1])
    assert [(s["start"], s["end"]) for s in spans] == [(0, 3), (6, 9)]


def test_gap_metrics_match_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    word_ok = [rng.random(n) for n in (5, 9, 3)]
    gold = [(rng.random(n + 1) < 0.3).astype(int) for n in (5, 9, 3)]
    gold[0][0] = 1
    scores = [gap_scores(w) for w in word_ok]
    out = gap_metrics(scores, gold, threshold=0.4)
    s, g = np.concatenate(scores), np.concatenate(gold)
    assert out["gap_mcc"] == pytest.approx(matthews_corrcoef(g, s < 0.4))
    assert out["gap_mcc_all_ok"] == 0.0 and out["n_gaps"] == g.size
    assert scores[0][-1] == 1.0 and gap_scores([0.5], end_ok=0.2)[-1] == 0.2


def test_source_tags_without_source_scores_say_so_plainly() -> None:
    items = read_wmt_word_level(
        ROEN / "test20.mt",
        ROEN / "test20.tags",
        source=ROEN / "test20.src",
        source_tags=ROEN / "test20.source_tags",
    )
    msg = source_metrics(None, items, 0.5)
    assert isinstance(msg, str) and msg.startswith(NO_SOURCE_SCORES)
    scores = [1.0 - np.asarray(it.source_bad, dtype=float) for it in items]
    assert source_metrics(scores, items, 0.5)["src_mcc"] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- MQM
def test_strip_marks_gives_offsets_into_the_clean_text() -> None:
    text, spans = strip_marks("I <v>want</v> you to <v>take</v> it")
    assert text == "I want you to take it"
    assert [text[s:e] for s, e in spans] == ["want", "take"]


def test_google_mqm_slice_reads_segments_spans_and_scores() -> None:
    path = DATA / "mqm_ted_zhen" / "mqm_ted_zhen.head60.tsv"
    items = read_google_mqm(path)
    rows = [ln.split("\t") for ln in path.read_text().splitlines()[1:]]
    assert len(items) == len({(r[0], r[3]) for r in rows})
    for it in items:
        assert "<v>" not in it.text
        for s in it.spans:
            assert 0 <= s["start"] < s["end"] <= len(it.text)
    by_key = {(it.system, it.seg_id): it for it in items}
    first = by_key[("Borderline", "84")]  # four Major errors of one rater
    assert first.mqm == -20.0 and len(first.rater_spans["rater3"]) == 4
    assert [first.text[s["start"] : s["end"]] for s in first.rater_spans["rater3"]][
        0
    ] == "take a moment"
    assert by_key[("DIDI-NLP", "84")].mqm == 0.0 and by_key[("DIDI-NLP", "84")].spans == []
    # an omission has no place in the target: counted, not a span
    assert sum(len(it.omissions) for it in items) >= 1
    # every system's translation of one source segment shares a group
    assert len({it.group for it in items if it.seg_id == "84"}) == 1


def test_google_mqm_several_raters_average_and_merge(tmp_path: Path) -> None:
    head = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    rows = [
        (
            "S",
            "d",
            "1",
            "7",
            "r1",
            "src",
            "<v>The cat</v> sat.",
            "Accuracy/Mistranslation",
            "Major",
        ),
        ("S", "d", "1", "7", "r1", "src", "The cat sat<v>.</v>", "Fluency/Punctuation", "Minor"),
        ("S", "d", "1", "7", "r2", "src", "The <v>cat sat</v>.", "Fluency/Grammar", "Minor"),
        ("S", "d", "1", "7", "r3", "src", "The cat sat.", "No-error", "No-error"),
    ]
    p = tmp_path / "m.tsv"
    p.write_text(head + "".join("\t".join(r) + "\n" for r in rows))
    (it,) = read_google_mqm(p)
    assert it.mqm == pytest.approx(-(5.1 + 1.0 + 0.0) / 3)
    assert [(s["start"], s["end"], s["severity"]) for s in it.spans] == [
        (0, 11, "major"),
        (11, 12, "minor"),
    ]
    assert set(it.rater_spans) == {"r1", "r2", "r3"} and it.rater_spans["r3"] == []


def test_mqm_weights_and_bad_header(tmp_path: Path) -> None:
    assert mqm_weight("Non-translation!", "Major") == 25.0
    assert mqm_weight("Source error", "Major") == 5.0  # as Google's per-segment file
    assert mqm_weight("Source error", "Minor") == 1.0
    assert mqm_weight("Style/Awkward", "Neutral") == 0.0
    assert merge_spans([]) == []
    p = tmp_path / "x.tsv"
    p.write_text("a\tb\n1\t2\n")
    with pytest.raises(ValueError, match="not Google's MQM TSV"):
        read_google_mqm(p)


def test_strip_marks_nested_unclosed_and_stray() -> None:
    assert strip_marks("a <v>b <v>c</v> d</v> e") == ("a b c d e", [(2, 7)])
    assert strip_marks("a <v>b c") == ("a b c", [(2, 5)])  # unclosed: to the end
    assert strip_marks("a b</v> c") == ("a b c", [(0, 3)])  # stray: from the start
    assert strip_marks("<v>a</v> b</v> c") == ("a b c", [(0, 3)])
    with pytest.raises(ValueError, match="unbalanced"):
        strip_marks("a <v>b", strict=True)
    with pytest.raises(ValueError, match="unbalanced"):
        strip_marks("a</v> <v>b", strict=True)


def test_google_mqm_real_rows_match_googles_own_segment_scores() -> None:
    """Four real segments: source marks stripped, the unclosed mark a span, Google's scores."""
    folder = DATA / "mqm_ted_zhen"
    items = {
        (it.system, it.seg_id): it for it in read_google_mqm(folder / "mqm_ted_zhen.marks.tsv")
    }
    lines = (folder / "mqm_ted_zhen.marks.avg_seg_scores.tsv").read_text().splitlines()[1:]
    google = {(c[0], c[2]): float(c[1]) for c in (ln.split() for ln in lines)}
    assert len(google) == 4 and {k: it.mqm for k, it in items.items()} == google
    for it in items.values():
        assert "<v>" not in it.source + it.text and "</v>" not in it.source + it.text
    assert items[("MiSS", "91")].source.endswith("因为太空可以想鼓一样振动。")
    unclosed = items[("MiSS", "827")]
    assert unclosed.omissions == [] and len(unclosed.spans) == 1
    assert unclosed.text[unclosed.spans[0]["start"] : unclosed.spans[0]["end"]] == unclosed.text
    assert len(items[("SMU", "85")].omissions) == 1  # marked in the source only
    with pytest.raises(ValueError, match=r"marks\.tsv:\d+: unbalanced"):
        read_google_mqm(folder / "mqm_ted_zhen.marks.tsv", strict=True)


def _mqm_file(tmp_path: Path, rows: list[tuple[str, ...]]) -> Path:
    head = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    p = tmp_path / "m.tsv"
    p.write_text(head + "".join("\t".join(r) + "\n" for r in rows))
    return p


def test_google_mqm_lower_case_no_error_and_segments_keyed_by_document(tmp_path: Path) -> None:
    p = _mqm_file(
        tmp_path,
        [
            ("S", "d1", "1", "7", "r1", "a", "One.", "no-error", "no-error"),
            ("S", "d2", "2", "7", "r1", "b", "<v>Two</v>.", "Fluency/Grammar", "Major"),
        ],
    )
    first, second = read_google_mqm(p)
    assert (first.doc, first.mqm, first.omissions, first.source) == ("d1", 0.0, [], "a")
    assert (second.doc, second.mqm, second.source) == ("d2", -5.0, "b")


def test_google_mqm_refuses_rows_whose_sources_differ(tmp_path: Path) -> None:
    p = _mqm_file(
        tmp_path,
        [
            ("S", "d", "1", "7", "r1", "x <v>y</v>", "T.", "Accuracy/Omission", "Minor"),
            ("S", "d", "1", "7", "r2", "x z", "T.", "No-error", "No-error"),
        ],
    )
    with pytest.raises(ValueError, match=r"m\.tsv:3: source differs"):
        read_google_mqm(p)


# ----------------------------------------------------------------------------- Mu-SHROOM
def test_mushroom_layout_reads_hard_and_soft_labels() -> None:
    items = read_mushroom(DATA / "mushroom_layout" / "synthetic.en.jsonl")
    assert [len(it.spans) for it in items] == [1, 0, 2]
    assert items[0].text[items[0].spans[0]["start"] : items[0].spans[0]["end"]] == "Charles Dickens"
    probs = char_probs(len(items[0].text), items[0].soft_labels)
    assert probs[27] == 0.9 and probs[0] == 0.0 and probs[47] == 0.3


def test_iou_and_spearman_definitions() -> None:
    assert iou([], []) == 1.0 and iou([(0, 4)], []) == 0.0
    assert iou([(0, 4)], [(2, 6)]) == pytest.approx(2 / 6)
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = np.round(rng.random(40), 1), np.round(rng.random(40), 1)  # ties
        assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert spearman(np.zeros(5), np.zeros(5)) == 1.0
    assert spearman(np.zeros(5), np.arange(5.0)) == 0.0


def test_perfect_prediction_scores_one_on_both_shroom_metrics() -> None:
    items = read_mushroom(DATA / "mushroom_layout" / "synthetic.en.jsonl")
    spans = [it.spans for it in items]
    probs = [char_probs(len(it.text), it.soft_labels) for it in items]
    assert shroom_scores(items, spans, probs).mean(0).tolist() == [1.0, 1.0]
    words = [{"start": 0, "end": 3, "sigmoid": 0.25}]
    assert probs_from_words("abcd", words, "sigmoid").tolist() == [0.75, 0.75, 0.75, 0.0]


# ----------------------------------------------------------------------------- real files
MIRRORS = os.environ.get("SIGMOID_HEAD_HUMAN_QE_CLONES")


@pytest.mark.skipif(not MIRRORS, reason="set SIGMOID_HEAD_HUMAN_QE_CLONES to local clones")
def test_real_mushroom_english_test_split_reads() -> None:  # pragma: no cover - local only
    import subprocess

    repo = Path(MIRRORS) / "Helsinki-NLP+mu-shroom" / "repo"
    text = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "show",
            "HEAD:splits/test_labeled/v1/mushroom.en-tst.v1.extra.jsonl",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    p = Path(os.environ.get("TMPDIR", "/tmp")) / "mushroom.en-tst.jsonl"
    p.write_text(text)
    items = read_mushroom(p)
    assert len(items) == 154 and sum(len(it.spans) for it in items) > 0


def test_new_formats_are_registered_and_detected() -> None:
    from sigmoid_head.evaluation.gold_formats import FORMATS, detect_format, read_gold_items

    assert {"google-mqm", "mushroom"} <= set(FORMATS)
    mqm = DATA / "mqm_ted_zhen" / "mqm_ted_zhen.head60.tsv"
    shroom = DATA / "mushroom_layout" / "synthetic.en.jsonl"
    assert detect_format(mqm) == "google-mqm" and detect_format(shroom) == "mushroom"
    assert len(read_gold_items(mqm)) == len(read_google_mqm(mqm))
    assert len(read_gold_items(shroom)) == 3
