"""recipes/bible/rerank_study.py: the MT items, golds on both references, another head's scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recipes.bible import rerank_study as rs


def test_mt_items_keep_short_verses_with_both_references(tmp_path: Path) -> None:
    verses = [{"es": f"fuente {i}", "kjv": f"kjv {i}", "web": " ".join(["w"] * (10 if i != 1 else 41))}
              for i in range(4)]
    (tmp_path / "dev.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verses))
    items = rs.mt_items(tmp_path, "dev", 2)
    assert [it["source"] for it in items] == ["fuente 0", "fuente 2"]  # verse 1 has 41 words
    assert items[0]["references"] == ["kjv 0", verses[0]["web"]] and items[0]["target"] == "kjv 0"


def test_golds_count_a_match_with_either_reference() -> None:
    pytest.importorskip("sacrebleu", reason="needs the eval extra (sacrebleu)")  # chrF
    rows = [{"candidate": "And God said, Let there be light.", "reference": "Then God spoke of light.",
             "references": ["Then God spoke of light.", "And God said, Let there be light."]},
            {"candidate": "And God said, Let there be light.", "reference": "Then God spoke of light."}]
    rs.add_golds(rows)
    assert rows[0]["chrf"] == pytest.approx(1.0) and rows[0]["bleu"] == pytest.approx(1.0)
    assert rows[1]["chrf"] < 0.6  # one reference only: the other wording is not rewarded


def _row(candidate: str, head: float) -> dict:
    return {"candidate": candidate, "entropy_mean": 1.0, "combined_log": head, "softmax_min": -1.0,
            "sigmoid_min": head}


def test_another_runs_head_scores_join_under_its_label(tmp_path: Path) -> None:
    rows = [_row("a", -0.5), _row("b", -0.1)]
    other = [_row("a", -2.0), _row("b", -3.0)]
    (tmp_path / "candidates_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in other))
    got = rs.also_scores(rows, "prior", tmp_path, "test")
    assert set(got) == {"prior:sigmoid_min", "prior:combined"}  # head-side scores only
    assert np.array_equal(got["prior:sigmoid_min"], [-2.0, -3.0])
    (tmp_path / "candidates_test.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in [_row("a", 0.0), _row("c", 0.0)]))
    with pytest.raises(SystemExit, match="other candidates"):
        rs.also_scores(rows, "prior", tmp_path, "test")


def test_dominant_share_counts_tokens_boostedprob_lifts() -> None:
    rows = [{"tokens": [{"boostedprob": 0.9, "softmax": 0.5, "n_dominant": 2},   # lifted: dominant
                        {"boostedprob": 0.7, "softmax": 0.7, "n_dominant": 1},   # alone, >= 0.5
                        {"boostedprob": 0.1, "softmax": 0.1, "n_dominant": 1}]}]  # not dominant
    assert rs.dominant_share(rows) == pytest.approx(2 / 3)
