"""evaluation/readers.py: external score files; the one reader (BOM, U+2028)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sigmoid_head.evaluation.readers import read_external_scores, read_score_columns


def test_read_external_scores(tmp_path) -> None:
    jl = tmp_path / "kiwi.jsonl"
    jl.write_text("".join(json.dumps({"comet_kiwi": v, "system": "a"}) + "\n" for v in (0.1, 0.7)))
    assert list(read_external_scores(jl)) == ["comet_kiwi"]
    np.testing.assert_allclose(read_external_scores(jl)["comet_kiwi"], [0.1, 0.7])
    cs = tmp_path / "scores.csv"
    cs.write_text("id,kiwi,name\n1,0.5,x\n2,0.25,y\n")
    assert {k: v.tolist() for k, v in read_external_scores(cs).items()} == {
        "id": [1.0, 2.0],
        "kiwi": [0.5, 0.25],
    }
    tx = tmp_path / "xcomet.txt"
    tx.write_text("0.3\n0.9\n")
    assert read_external_scores(tx, prefix="ext_")["ext_xcomet"].tolist() == [0.3, 0.9]
    with pytest.raises(ValueError, match="missing or not numeric"):
        read_external_scores(cs, fields=["name"])


def test_score_columns_survive_unicode_line_separators(tmp_path) -> None:
    path = tmp_path / "scores.jsonl"
    rows = [{"candidate": "one\u2028two", "sigmoid": 0.5}, {"candidate": "x", "sigmoid": 0.25}]
    path.write_text("\ufeff" + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    assert read_score_columns(path)["sigmoid"].tolist() == [0.5, 0.25]
