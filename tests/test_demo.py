"""The demo's candidates: the word swap's recorded error span is where the new word sits."""

from __future__ import annotations

from sigmoid_head.demo import candidates


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
