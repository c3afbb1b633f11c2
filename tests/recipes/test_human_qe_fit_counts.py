"""fit_counts --write-kept: the items the trainer keeps, written as they are (issue 58)."""

from __future__ import annotations

import gzip
import importlib


def test_write_kept_writes_the_kept_lines_in_order_and_caps_them(tmp_path):
    fc = importlib.import_module("recipes.human_qe.fit_counts")
    src = tmp_path / "gold.jsonl.gz"
    rows = ['{"id": "a-1", "src": "x"}', '{"id": "b-2", "src": "y"}', '{"id": "c-3", "src": "z"}']
    src.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    out = tmp_path / "kept.jsonl.gz"
    assert fc.write_kept(str(src), [1, 3], str(out)) == 2
    assert gzip.decompress(out.read_bytes()).decode().splitlines() == [rows[0], rows[2]]
    assert fc.write_kept(str(src), [3, 1, 2], str(out), first=2) == 2  # the trainer's cap: the first N kept
    assert gzip.decompress(out.read_bytes()).decode().splitlines() == [rows[2], rows[0]]
    plain = tmp_path / "kept.jsonl"
    fc.write_kept(str(src), [2], str(plain))
    assert plain.read_text() == rows[1] + "\n" and not list(tmp_path.glob("*.tmp"))
