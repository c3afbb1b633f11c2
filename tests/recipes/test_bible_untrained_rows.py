"""recipes/bible/untrained_rows.py: gibberish candidates, the dev choice and the tables."""

from __future__ import annotations

import random
import unicodedata

import pytest

from recipes.bible import untrained_rows as ur


@pytest.mark.parametrize("script", sorted(ur.SCRIPTS))
def test_script_words_are_letters_of_that_script_and_long_enough(script, tiny_tokenizer):
    text = ur.script_words(random.Random(0), script, 12, tiny_tokenizer)
    assert len(tiny_tokenizer(text, add_special_tokens=False)["input_ids"]) >= 12
    letters = [c for c in text if not c.isspace()]
    assert letters and all(unicodedata.name(c).split(" ")[0] == script for c in letters)


def test_candidates_per_verse(tiny_tokenizer):
    verses = [{"source": f"src {i}", "target": f"the dog eats the bread number {i} today"}
              for i in range(4)]
    cands = ur.candidates(verses, 0, "dev", tiny_tokenizer)
    kinds = [c["kind"] for c in cands if c["item"] == 0]
    assert kinds[:2] == ["reference", "next verse"] and kinds[-2:] == ["letters", "drift"]
    drift = next(c for c in cands if c["item"] == 1 and c["kind"] == "drift")
    assert drift["candidate"].startswith("the dog eats the") and drift["script"] in ur.SCRIPTS
    assert all(c["label"] == (c["kind"] == "reference") for c in cands)


def _rows(split: str, good: str) -> list[dict]:
    """Two verses: method ``good`` ranks each reference above its negatives, ``bad`` below."""
    rows = []
    for item in range(2):
        for kind, label in (("reference", 1), ("letters", 0), ("drift", 0), ("sampled", 0),
                            ("next verse", 0), ("word swap", 0)):
            rows.append({"split": split, "item": item, "kind": kind, "label": label,
                         "n_tokens": 10, "n_untrained": 9 if kind == "letters" else 1,
                         **{f"{m}@mean": (-1.0 if label else -3.0) * (1 if m == good else -1)
                            for m in ("softmax", "boostedprob", "sigmoid:paper", "sigmoid:a",
                                      "sigmoid:b")}})
    return rows


def test_pairwise_auc_and_the_dev_choice():
    rows = _rows("dev", "sigmoid:b")
    assert ur.pairwise(rows, "sigmoid:b@mean", ur.GIBBERISH) == 1.0
    assert ur.pairwise(rows, "sigmoid:a@mean", ur.GIBBERISH) == 0.0
    assert ur.auc(rows, "sigmoid:b@mean", ur.REGULAR) == 1.0
    assert ur.choose_on_dev(rows) == "sigmoid:b"  # never the paper, never a baseline


def test_tables_read_the_choice_from_dev_only():
    text = ur.tables(_rows("dev", "sigmoid:a") + _rows("test", "sigmoid:b"), n_boot=50)
    assert "`sigmoid:a`" in text.splitlines()[0]
    assert "| head, a **(dev choice)** | 2.718 | 20.086 | 20.086 | 20.086 | 0.000 | 0.000 | 0.000 | 0.000 |" \
        in text  # the test figures of the method chosen on dev, which ranks badly on test
