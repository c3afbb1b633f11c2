"""The demo's candidates: the word swap's recorded error span is where the new word sits."""

from __future__ import annotations

import pytest

from sigmoid_head.demo.run import candidates


def test_word_swaps_record_their_error_location() -> None:
    verses = [{"source": f"s{i}", "target": t} for i, t in enumerate([
        "In the beginning God created the heavens and the earth.",
        "Now the earth was formless and empty.",
        "God said, Let there be light, and there was light.",
        "Jesus wept.",
    ])]
    cands = candidates(verses, seed=0)
    swaps = [c for c in cands if c["kind"] == "word swap"]
    assert swaps and all(c["label"] == 0 for c in swaps)
    for c in swaps:
        (start, end), = c["error_spans"]
        ref = next(x["candidate"] for x in cands
                   if x["kind"] == "reference" and x["source"] == c["source"])
        # the span covers exactly the one word that differs from the reference
        new, old = c["candidate"].split(), ref.split()
        changed = [w for w, o in zip(new, old, strict=True) if w != o]
        assert c["candidate"][start:end] == changed[0] and len(changed) == 1
    assert all(c["error_spans"] == [] for c in cands if c["kind"] == "reference")
    assert all("error_spans" not in c for c in cands if c["kind"] == "next verse")


def test_explain_and_stream_write_what_the_demo_shows(causal, tmp_path) -> None:
    """The demo's steps 3 and 5 on a tiny model: calibration and spans saved with the head,
    the figures, the page and the streamed events."""
    pytest.importorskip("matplotlib", reason="needs the plots extra (matplotlib)")  # the figures
    import json

    from sigmoid_head.demo.run import explain, stream_demo
    from sigmoid_head.scoring.force_decode import score_records

    verses = [{"source": f"el perro {i}", "target": t} for i, t in enumerate([
        "the dog eats bread today", "the cat sleeps on the mat now", "a big house stands there",
        "the red car goes fast", "my friend reads books"])]
    cands = candidates(verses, seed=0)
    scored = [{**c, **s} for c, s in
              zip(cands, score_records(causal, cands, with_tokens=True, progress=False), strict=True)]
    (tmp_path / "head").mkdir()
    test = [dict(c) for c in scored]
    page = explain(causal, scored, test, tmp_path)
    assert {p.name for p in (tmp_path / "head").iterdir()} == {"calibration.json", "error_spans.json"}
    assert all(0 <= c["sigmoid_platt"] <= 1 and isinstance(c["errors"], list) for c in test)
    html = page.read_text(encoding="utf-8")
    saved = json.loads((tmp_path / "head" / "error_spans.json").read_text())
    assert html.count('class="item"') == min(8, len(cands) - 5) + 2
    assert f"{saved['method']} word score" in html
    assert (tmp_path / "calibration.png").read_bytes()[:4] == b"\x89PNG"
    events = [json.loads(x) for x in
              stream_demo(causal, verses[:2], tmp_path / "stream.jsonl").read_text().splitlines()]
    assert {e["input"] for e in events} == {0, 1}
    assert all(0 <= e["sigmoid"] <= 1 and 0 <= e["softmax"] <= 1 for e in events)


def test_combined_scores_and_how_to_read_the_table(causal, tmp_path, capsys) -> None:
    """The demo's combined scores: the default of `score` and one fitted on the dev
    candidates (saved with the head only when it beats the default there, and a line says
    which), every table column in [0, 1], and the reading line naming the baseline chosen
    on dev."""
    import math

    import numpy as np

    from sigmoid_head.demo.run import combine, read_table, table_scores
    from sigmoid_head.evaluation.combination import DEFAULTS, Combination
    from sigmoid_head.scoring.force_decode import score_records

    verses = [{"source": f"el perro {i}", "target": t} for i, t in enumerate([
        "the dog eats bread today", "the cat sleeps on the mat now", "a big house stands there",
        "the red car goes fast", "my friend reads books", "we walk to the old church"])]
    scored = [{**c, **s} for c, s in zip(candidates(verses, seed=0),
                                         score_records(causal, candidates(verses, seed=0), progress=False),
                                         strict=True)]
    dev, test = scored[:9], scored[9:]
    (tmp_path / "head").mkdir()
    fitted = combine(dev, test, tmp_path)
    said = capsys.readouterr().out
    from sigmoid_head.evaluation.combination import fit_combination

    _, info = fit_combination(dev, [c["label"] for c in dev])
    if info["beats_default"]:
        assert Combination.load(tmp_path / "head") == fitted and "saved with the head" in said
    else:
        assert Combination.load(tmp_path / "head") is None and "nothing saved" in said
    for r in dev + test:
        assert r["combined_log"] == DEFAULTS["score"].log_score(r)
        assert r["combined_dev"] == math.exp(fitted.log_score(r))
    cols = table_scores(test)
    assert {"softmax_geo_mean", "sigmoid_geo_mean", "softmax_min", "neg_entropy", "combined", "combined_dev"} <= set(cols)
    assert not any(k.endswith("_mean_log") for k in cols)  # a number in [0, 1] is never named as the log
    assert cols["softmax_geo_mean"] == pytest.approx([math.exp(r["softmax_mean_log"]) for r in test])
    assert all(0 <= v <= 1 for vals in cols.values() for v in vals)
    gold = [c["label"] for c in test]
    text = read_table(dev, {m: np.array(v) for m, v in cols.items()}, gold, fitted, 0)
    assert fitted.describe() in text and "paired bootstrap" in text
    assert "_geo_mean the length-normalised one" in text and "_mean_log the" not in text
    assert text.count(", p = ") == 2  # both combined scores against the dev-chosen baseline
