"""recipes/human_qe/build_labelled.py: the pooled English-target tags (on synthetic archives)."""

from __future__ import annotations

import importlib

PAIRS = ("ro-en", "et-en", "ne-en", "si-en", "ru-en")


def _archives() -> dict[str, dict[str, list[str]]]:
    """Five pairs' train archives and one dev archive, as curve_data._files returns them."""
    files: dict[str, dict[str, list[str]]] = {}
    for n, pair in enumerate(PAIRS):
        src = [f"{pair} source {k}" for k in range(12)]
        mt = [f"the output {k} of {pair}" for k in range(12)]
        tags = ["OK BAD OK OK OK"] * 12
        if pair == "et-en":
            src[3] = "held out sentence"  # equals a dev source of another pair: dropped
            src[5] = "ro-en source 0"  # repeats a ro-en source: dropped
            tags[7] = "OK OK OK OK OK OK OK OK OK OK OK"  # with gap tags: 5 words, 11 tags
        files[f"data/post-editing/train/{pair}-train.tar.gz"] = {
            "train.src": src, "train.mt": mt, "train.tags": tags}
        if n == 0:
            files["data/post-editing/dev/ro-en-dev.tar.gz"] = {"dev.src": ["Held-out sentence!"]}
    return files


def test_pooled_tags_drop_held_out_and_repeats_and_split_per_pair(monkeypatch):
    build = importlib.import_module("recipes.human_qe.build_labelled")
    curve_data = importlib.import_module("recipes.human_qe.curve_data")
    monkeypatch.setattr(curve_data, "_files", lambda clones: _archives())
    splits, dropped = build.build_mlqe_en_pool(None)
    assert dropped == {"sentences matching a dev or test sentence": 1, "repeated sources": 1}
    rows = splits["train"] + splits["dev"]
    assert len(rows) == 5 * 12 - 2
    # every 10th kept sentence of each pair: et-en's 10th kept one is its 12th (two dropped)
    assert {r["id"] for r in splits["dev"]} == {
        "roen-train-9", "eten-train-11", "neen-train-9", "sien-train-9", "ruen-train-9"}
    by_id = {r["id"]: r for r in rows}
    first = by_id["roen-train-0"]
    assert first["tgt"] == "the output 0 of ro-en"
    bad = [first["tgt"][s["start"]:s["end"]] for s in first["mqm_spans"]]
    assert bad == ["output"]  # the one BAD word, as its characters
    assert by_id["eten-train-7"]["mqm_spans"] == []  # gap tags dropped, all OK
    assert "eten-train-3" not in by_id and "eten-train-5" not in by_id
