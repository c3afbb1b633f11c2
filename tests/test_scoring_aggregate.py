"""scoring/aggregate.py: sequence scores in log space, words from tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sigmoid_head.scoring.aggregate import (
    group_words,
    sequence_scores,
    token_spans,
    word_scores,
    words_of,
)

SOURCES = ["el perro come el pan", "la casa", "el niño grande lee un libro hoy", "una mujer"]
CANDS = ["the dog eats the bread", "the house", "the big boy reads a book today", "a woman"]


def test_sequence_scores_in_log_space() -> None:
    lp = np.log(np.array([0.5, 0.25, 0.8]))
    out = sequence_scores("m", lp)
    assert out["m"] == pytest.approx(0.1)
    assert out["m_logprob"] == pytest.approx(math.log(0.1))
    assert out["m_mean_log"] == pytest.approx(math.log(0.1) / 3)
    assert out["m_min"] == pytest.approx(0.25)
    long = sequence_scores("m", np.full(5000, -1.0))  # product underflows, the log does not
    assert long["m"] == 0.0 and long["m_logprob"] == pytest.approx(-5000.0)


def test_word_grouping_on_the_tiny_tokenizer(tiny_tokenizer) -> None:
    text = "the big dog eats  bread.\nNow"
    ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
    # hand-checked: the | Ġbig | Ġdog | Ġeats | Ġ | Ġbread | . | Ċ | N | ow
    assert tiny_tokenizer.convert_ids_to_tokens(ids) == [
        "the",
        "Ġbig",
        "Ġdog",
        "Ġeats",
        "Ġ",
        "Ġbread",
        ".",
        "Ċ",
        "N",
        "ow",
    ]
    words = words_of(tiny_tokenizer, ids + [tiny_tokenizer.eos_token_id], text)
    assert [(w.text, w.tokens) for w in words] == [
        ("the", [0]),
        ("big", [1]),
        ("dog", [2]),
        ("eats", [3]),
        ("bread.", [4, 5, 6]),
        ("Now", [7, 8, 9]),
    ]
    probs = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.5, 0.5, 0.1])
    assert word_scores(words, probs) == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.06, 0.05])
    assert word_scores(words, probs, "min") == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.3, 0.2])


def test_word_spans_fall_back_to_decoding(tiny_tokenizer) -> None:
    ids = tiny_tokenizer("the dog", add_special_tokens=False)["input_ids"]
    spelled, spans = token_spans(tiny_tokenizer, ids, text=None)
    assert spelled == "the dog" and spans == [(0, 3), (3, 7)]
    assert group_words(spelled, spans) == [[0], [1]]
    bos_first = [tiny_tokenizer.bos_token_id, *ids]  # seq2seq labels start with <s>
    assert [w.tokens for w in words_of(tiny_tokenizer, bos_first, "the dog")] == [[1], [2]]
