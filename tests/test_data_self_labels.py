"""Self-labelled outputs: TER-without-shifts word tags, token labels, the data file."""

import json

import pytest

from sigmoid_head.data.batching import IGNORE_INDEX
from sigmoid_head.data.prompt_format import PromptFormat
from sigmoid_head.data.records import DataError
from sigmoid_head.data.self_labels import (
    IGNORE_LABEL,
    align_matches,
    token_labels,
    word_labels,
    words,
)
from sigmoid_head.training.self_generated import load_self_examples


def test_words_split_letters_and_punctuation_with_spans():
    assert words("And God said, Let") == [("And", 0, 3), ("God", 4, 7), ("said", 8, 12),
                                           (",", 12, 13), ("Let", 14, 17)]
    assert words("  ") == []


def test_alignment_is_a_minimum_edit_alignment_and_marks_identical_words():
    hyp = ["the", "man", "went", "to", "the", "city"]
    ref = ["the", "old", "man", "went", "into", "the", "city"]
    matched, edits = align_matches(hyp, ref)
    assert edits == 2  # insert "old", substitute to -> into
    assert matched == {0, 1, 2, 4, 5}  # every word but "to"
    assert align_matches([], ref) == (set(), len(ref))
    assert align_matches(hyp, []) == (set(), len(hyp))
    # a word that appears in the reference out of order is not matched (no shifts)
    assert align_matches(["b", "a"], ["a", "b"])[0] in ({0}, {1})


def test_two_references_union_counts_either_wording_as_good():
    out = "God said: let there be light"
    kjv = "And God said, Let there be light"
    web = "God said, Let light be"
    one = word_labels(out, [web])
    both = word_labels(out, [kjv, web])
    # ':' is in neither; 'there' only in the KJV wording
    assert one == ["OK", "OK", "BAD", "OK", "BAD", "OK", "BAD"]
    assert both == ["OK", "OK", "BAD", "OK", "OK", "OK", "OK"]
    # best: the closest reference's alignment alone (KJV: 2 edits; WEB: more)
    assert word_labels(out, [web, kjv], rule="best") == word_labels(out, [kjv])


def test_case_folding_and_refusals():
    assert word_labels("LET there", ["let there"]) == ["OK", "OK"]
    assert word_labels("LET there", ["let there"], case_sensitive=True) == ["BAD", "OK"]
    with pytest.raises(ValueError, match="rule"):
        word_labels("a", ["a"], rule="worst")
    with pytest.raises(ValueError, match="reference"):
        word_labels("a", [])


def test_token_labels_follow_the_words_a_token_overlaps():
    text = "light, dark"
    labels = ["OK", "BAD", "OK"]  # light , dark
    spans = [(0, 3), (3, 5), (5, 6), (6, 11), (11, 11)]  # lig | ht | , | ' dark' | EOS
    assert token_labels(spans, text, labels) == [1, 1, 0, 1, IGNORE_LABEL]
    # a token across a good and a bad word is bad
    assert token_labels([(0, 6)], text, labels) == [0]
    with pytest.raises(ValueError, match="word labels"):
        token_labels(spans, text, ["OK"])


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("fixture", ["tiny_causal_path", "tiny_seq2seq_path"])
def test_load_self_examples_gives_one_label_per_trained_position(fixture, request, tmp_path):
    from transformers import AutoTokenizer

    path = request.getfixturevalue(fixture)
    tok = AutoTokenizer.from_pretrained(path)
    is_s2s = fixture == "tiny_seq2seq_path"
    target = "the cat sat on the mat"
    tags = word_labels(target, ["the cat sat on a mat"])
    assert tags == ["OK", "OK", "OK", "OK", "BAD", "OK"]
    data = _write(tmp_path / "self.jsonl", [{"source": "le chat", "target": target,
                                             "word_labels": tags, "origin": "greedy"}])
    (ex,) = load_self_examples(data, tok, PromptFormat(is_s2s))
    labels = ex["labels"] if is_s2s else ex["labels"][1:]
    trained = [t for t in labels if t != IGNORE_INDEX]
    assert len(ex["good"]) == len(trained)
    assert ex["good"][-1] == IGNORE_LABEL  # the EOS spells no word
    # the tokens of "the" before "mat" are bad, every other word's tokens good
    spelled = [tok.decode([t]) for t in trained]
    bad = [s for s, g in zip(spelled, ex["good"], strict=True) if g == 0]
    assert "".join(bad).strip() == "the", (spelled, ex["good"])
    assert sum(g == 1 for g in ex["good"]) >= 5


def test_malformed_self_records_name_file_and_line(tiny_causal_path, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_causal_path)
    good = {"source": "a", "target": "the cat", "word_labels": ["OK", "BAD"]}
    cases = [({**good, "word_labels": ["OK"]}, "1 word_labels for the 2 words"),
             ({**good, "word_labels": ["OK", "fine"]}, "OK"),
             ({"source": "a", "word_labels": []}, "target"),
             ({"target": "the cat", "word_labels": ["OK", "BAD"]}, "source")]
    for rec, message in cases:
        data = _write(tmp_path / "bad.jsonl", [good, rec])
        with pytest.raises(DataError, match=message) as err:
            load_self_examples(data, tok, PromptFormat(False))
        assert "bad.jsonl:2" in str(err.value)
