"""The recipes read the Bible sample themselves (recipes/common/bible_sample.py), with the
demo's prompt and the demo's folder: the studies and the demo describe the same task."""

from __future__ import annotations

import json

from recipes.common import bible_sample
from sigmoid_head.demo import run as demo


def test_the_recipes_prompt_and_sample_are_the_demos() -> None:
    assert bible_sample.PROMPT == demo.PROMPT
    assert bible_sample.sample_dir() == demo.sample_dir()


def test_short_keeps_pairs_within_the_word_limit_on_both_sides() -> None:
    recs = [{"source": "a b", "target": "c"}, {"source": "a", "target": "b c d"},
            {"source": "a b c", "target": "d"}]
    assert bible_sample.short(recs, 2) == [recs[0]]


def test_write_jsonl_writes_one_object_a_line_with_nan_as_null(tmp_path) -> None:
    path = bible_sample.write_jsonl(tmp_path / "x.jsonl", [{"a": 1.5}, {"a": float("nan")}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": 1.5}, {"a": None}]
