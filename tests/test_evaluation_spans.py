"""Error spans from word scores and their character-level precision/recall/F1."""

from __future__ import annotations

import pytest

from sigmoid_head.evaluation.spans import (
    SpanConfig,
    add_errors,
    find_errors,
    fit_span_config,
    span_prf,
    word_offsets,
)

TEXT = "the big dog eats red bread"
SCORES = [0.9, 0.8, 0.01, 0.05, 0.7, 0.2]  # "dog eats" low, "bread" in between


def _words(scores=SCORES, text=TEXT):
    return [{"word": w, "sigmoid": s} for w, s in zip(text.split(), scores, strict=True)]


def test_word_offsets_left_to_right() -> None:
    assert word_offsets("a b a", ["a", "b", "a", "zz"]) == [(0, 1), (2, 3), (4, 5), None]


def test_adjacent_error_words_make_one_span() -> None:
    errors = find_errors(TEXT, _words(), SpanConfig(threshold=0.1, major_below=0.02))
    assert errors == [{"text": "dog eats", "start": 8, "end": 16, "confidence": 0.99,
                       "severity": "major"}]
    assert TEXT[8:16] == "dog eats"


def test_min_words_drops_short_spans_and_threshold_adds_words() -> None:
    cfg = SpanConfig(threshold=0.3, min_words=2, major_below=0.001)
    errors = find_errors(TEXT, _words(), cfg)
    assert [e["text"] for e in errors] == ["dog eats"]  # "bread" alone is too short
    assert errors[0]["severity"] == "minor"
    cfg.min_words = 1
    assert [e["text"] for e in find_errors(TEXT, _words(), cfg)] == ["dog eats", "bread"]


def test_add_errors_needs_word_scores() -> None:
    rows = [{"candidate": TEXT, "words": _words()}]
    add_errors(rows, SpanConfig(threshold=0.1))
    assert rows[0]["errors"][0]["text"] == "dog eats"
    with pytest.raises(ValueError, match="with-tokens"):
        add_errors([{"candidate": TEXT}], SpanConfig())
    with pytest.raises(ValueError, match="softmax"):
        add_errors([{"candidate": TEXT, "words": _words()}], SpanConfig(method="softmax"))


def test_span_prf_counts_characters_without_whitespace() -> None:
    # gold "dog" (3 chars); predicted "dog eats" (7 non-space chars) -> P 3/7, R 1
    res = span_prf([[(8, 16)]], [[(8, 11)]], [TEXT])
    assert (res["tp"], res["n_pred"], res["n_gold"]) == (3, 7, 3)
    assert res["precision"] == pytest.approx(3 / 7) and res["recall"] == 1.0
    assert res["f1"] == pytest.approx(2 * (3 / 7) / (3 / 7 + 1))
    # a clean candidate with a predicted span only adds false positives
    res2 = span_prf([[(8, 16)], [(0, 3)]], [[(8, 11)], []], [TEXT, TEXT])
    assert (res2["tp"], res2["n_pred"], res2["n_gold"]) == (3, 10, 3)
    assert span_prf([[]], [[]])["f1"] == 0.0


def test_fit_recovers_the_separating_threshold() -> None:
    """Dev items whose corrupted word scores low: the fit finds a threshold that separates."""
    rows, gold = [], []
    for i in range(30):
        scores = [0.9, 0.8 - i / 100, 0.7, 0.6, 0.75, 0.85]
        bad = i % 6
        if i % 3:  # two in three items are corrupted at a known word
            scores[bad] = 0.02 + i / 1000
        words = _words(scores)
        rows.append({"candidate": TEXT, "words": words})
        off = word_offsets(TEXT, [w["word"] for w in words])[bad]
        gold.append([off] if i % 3 else [])
    cfg = fit_span_config(rows, gold, "sigmoid")
    assert 0.05 < cfg.threshold <= 0.6 and cfg.min_words == 1
    assert cfg.dev["f1"] == 1.0 and cfg.dev["n"] == 30


def test_span_config_round_trip(tmp_path) -> None:
    assert SpanConfig.load(tmp_path) is None
    cfg = SpanConfig(method="boostedprob", threshold=0.2, min_words=2, dev={"f1": 0.5})
    cfg.save(tmp_path)
    assert SpanConfig.load(tmp_path) == cfg


def test_fit_measures_each_setting_as_span_prf_does() -> None:
    """The fit's own counting (masks computed once) agrees with span_prf over find_errors,
    on noisy data where the best setting is not perfect, multi-word spans included."""
    import random

    from sigmoid_head.evaluation.spans import predict_spans

    rng = random.Random(0)
    rows, gold = [], []
    for _ in range(40):
        words = [rng.choice(["a", "bb", "ccc", "dd,", "e."]) for _ in range(rng.randint(3, 12))]
        text = "  ".join(words) if rng.random() < 0.3 else " ".join(words)
        rows.append({"candidate": text,
                     "words": [{"word": w, "sigmoid": 10 ** rng.uniform(-4, 0)} for w in words]})
        off = word_offsets(text, words)
        k = rng.randrange(len(words) - 1)
        gold.append([(off[k][0], off[k + 1][1])] if rng.random() < 0.5 else [])
    texts = [r["candidate"] for r in rows]
    for m in ((1, 2, 3), (2,), (3,)):
        cfg = fit_span_config(rows, gold, "sigmoid", min_words=m)
        ref = span_prf(predict_spans(rows, cfg), gold, texts)
        assert cfg.dev == {"n": 40, **{k: round(float(v), 6) for k, v in ref.items()}}
        assert 0 < cfg.dev["f1"] < 1 and cfg.min_words in m


@pytest.mark.parametrize(("data", "named"), [
    ({"threshold": "0.1"}, "threshold: must be a number in (0, 1]"),
    ({"threshold": float("nan")}, "threshold: must be a number in (0, 1]"),
    ({"min_words": 1.5}, "min_words: must be an integer >= 1"),
    ({"min_words": True}, "min_words: must be an integer >= 1"),
    ({"method": 3}, "method: 3 is not a registered method"),
    ({"method": "zzz"}, "method: 'zzz' is not a registered method"),
    ({"major_below": float("nan")}, "major_below: must be a number in [0, 1]"),
    ({"major_below": "x"}, "major_below: must be a number in [0, 1]"),
    ({"dev": "x"}, "dev: must be an object or null"),
])
def test_a_bad_error_span_file_is_refused_naming_the_field(data, named) -> None:
    with pytest.raises(ValueError) as err:
        SpanConfig.from_dict(data, "H/error_spans.json")
    assert str(err.value).startswith(f"H/error_spans.json: {named}")


@pytest.mark.parametrize("span", [(5, 2), (-1, 3), (0, 99), (2, 2), ("a", 3), (1.5, 3), (True, 2)])
def test_gold_spans_must_be_character_ranges(span) -> None:
    rows = [{"candidate": TEXT, "words": _words()}]
    with pytest.raises(ValueError, match=r"item 1: gold span .* is not a character range"):
        fit_span_config(rows, [[span]])
