"""Checks of the committed Bible sample (src/sigmoid_head/bible_sample) and of the cleaning.

No apt or pysword needed: only the builder script's pure functions are used (imported as
``build_data``, see conftest.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from recipes.bible import build_data as bd

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "sigmoid_head" / "bible_sample"
SPLITS = ("train", "dev", "test")
KINDS = ("", "mt_", "para_", "para_rev_")


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict]]:
    return {s: bd.read_jsonl(SAMPLE / f"{s}.jsonl.gz") for s in SPLITS}


# ----------------------------------------------------------------------------
# Cleaning, on raw strings as pysword returns them (clean=False)
# ----------------------------------------------------------------------------

WEB_GEN_1_1 = (
    '<w lemma="strong:H0430">In</w> <w lemma="strong:H0853">the</w> '
    '<w lemma="strong:H7225">beginning</w>, <w lemma="strong:H0430">God</w><note placement="foot">'
    '<reference type="annotateRef">1:1 </reference>The Hebrew word rendered “God” is '
    '“אֱלֹהִ֑ים” (Elohim).</note><w lemma="strong:H1254">created</w> '
    '<w lemma="strong:H0853">the</w> <w lemma="strong:H8064">heavens</w> '
    '<w lemma="strong:H0430">and</w> <w lemma="strong:H0853">the</w> '
    '<w lemma="strong:H0776">earth</w>. '
)


def test_web_footnote_between_words_becomes_a_space():
    assert bd.clean_osis(WEB_GEN_1_1) == "In the beginning, God created the heavens and the earth."


def test_web_footnote_inside_quote_and_before_punctuation():
    raw = (
        '<w lemma="strong:G2443">his</w> <w lemma="strong:G3439">only</w> born</q>'
        '<note placement="foot"><reference type="annotateRef">3:16 </reference>The phrase '
        "“only born” is from the Greek word “μονογενη”.</note>"
        '<q marker="" who="Jesus"><w lemma="strong:G5207">Son</w>, that'
    )
    assert bd.clean_osis(raw) == "his only born Son, that"
    luke = (
        'two assaria coins</q> <note placement="foot"><reference type="annotateRef">12:6 '
        "</reference>An assarion was a small copper coin.</note> "
        '<q marker="" who="Jesus">? <w lemma="strong:G3756">Not</w> one'
    )
    assert bd.clean_osis(luke) == "two assaria coins? Not one"
    assert bd.clean_osis('say, <q who="Jesus">‘You will be made free’</q> ?” ') == (
        "say, ‘You will be made free’?”"
    )


def test_web_cross_reference_and_psalm_title_and_lines():
    raw = (
        '<div type="x-milestone" subType="x-preverse" sID="pv4877"/><title canonical="true" '
        'type="psalm">A Psalm by David, when he fled from Absalom his son.</title> <lg sID="g"/> '
        '<l level="1" sID="gen7861"/>Yahweh, how <w lemma="strong:H1732">my</w> adversaries '
        'have increased!<l eID="gen7861" level="1"/> <l level="2" sID="gen7862"/>Many '
        'evaluated,<note type="crossReference"><reference subType="x-origin" type="annotateRef">'
        "12:4 </reference><reference>Exodus 30:12</reference></note> <w>and</w>"
    )
    assert bd.clean_osis(raw) == (
        "A Psalm by David, when he fled from Absalom his son. Yahweh, how my adversaries "
        "have increased! Many evaluated, and"
    )


def test_kjv_notes_pilcrow_usfm_headings():
    raw = (
        '<q marker="" who="Jesus">¶ <w lemma="strong:G1063">For</w> <w>God</w> '
        '<transChange type="added">was</transChange> <divineName><w>LORD</w></divineName>'
        '.<note placement="foot"><reference type="annotateRef">1.1 </reference>ruled: Heb. '
        "judged</note> by my name \\nd JEHOVAH was I not <w>give</w>n. [but] he "
        "<title><foreign>ב BETH.</foreign></title>"
    )
    assert bd.clean_osis(raw) == "For God was LORD. by my name JEHOVAH was I not given. but he"


def test_spanish_transchange_glued_to_words():
    raw = (
        '<w lemma="strong:H6635">ejército</w><transChange type="added">se llamaba</transChange>'
        '<w lemma="strong:H5516">Sísara</w>, preguntándo<transChange type="added">le</transChange>,'
    )
    assert bd.clean_osis(raw) == "ejército se llamaba Sísara, preguntándole,"


def test_spanish_subscription_removed():
    es = "Gracia sea con todos vosotros. Amén. Escrita de Roma á los Efesios por Tichîco."
    assert bd.strip_subscription(es) == "Gracia sea con todos vosotros. Amén."
    plain = "Hijitos, guardaos de los ídolos. Amén."
    assert bd.strip_subscription(plain) == plain


def test_web_glossary_cut():
    raw = 'be with all the saints. Amen. <div sID="g1" type="glossary"/> <list> Abba</list>'
    assert bd.clean_osis(raw) == "be with all the saints. Amen."


# ----------------------------------------------------------------------------
# The committed sample
# ----------------------------------------------------------------------------


def test_every_file_parses_and_counts_match_stats(records):
    stats = json.loads((SAMPLE / "stats.json").read_text(encoding="utf-8"))
    for split in SPLITS:
        counts = stats["splits"][split]
        n = len(records[split])
        assert n == counts["verses"] > 0
        assert len(bd.read_jsonl(SAMPLE / f"mt_{split}.jsonl.gz")) == 2 * n == counts["mt_pairs"]
        for kind in ("para_", "para_rev_"):
            assert len(bd.read_jsonl(SAMPLE / f"{kind}{split}.jsonl.gz")) == n


def test_split_by_book(records):
    books = {s: {r["book"] for r in records[s]} for s in SPLITS}
    assert books["test"] == set(bd.TEST_BOOKS)
    assert books["dev"] == set(bd.DEV_BOOKS)
    assert not books["train"] & (books["test"] | books["dev"])
    assert 600 <= len(records["dev"]) <= 900


def test_ids_unique_and_consistent(records):
    ids = [r["id"] for s in SPLITS for r in records[s]]
    assert len(ids) == len(set(ids))
    for r in records["test"][:50]:
        assert r["id"].endswith(f".{r['chapter']}.{r['verse']}")
        assert set(r) == {"id", "book", "chapter", "verse", "es", "kjv", "web"}


_BAD = re.compile(r"[<>{}\[\]\\¶\x00]|\b[HG]\d{3,5}\b|strong:|  |^\s|\s$|\s[,.;:!?]")


@pytest.mark.parametrize("split", SPLITS)
def test_texts_clean_and_non_empty(records, split):
    for r in records[split]:
        for field in ("es", "kjv", "web"):
            text = r[field]
            assert text, (r["id"], field)
            assert not _BAD.search(text), (r["id"], field, text)
            assert not re.search(r"[a-z][A-Z][a-z]", text), (r["id"], text)


@pytest.mark.parametrize("split", SPLITS)
def test_mt_has_two_targets_per_source(records, split):
    pairs = bd.read_jsonl(SAMPLE / f"mt_{split}.jsonl.gz")
    per_source = Counter(p["source"] for p in pairs)
    targets = {(r["es"], r["kjv"]) for r in records[split]} | {
        (r["es"], r["web"]) for r in records[split]
    }
    assert all(n % 2 == 0 for n in per_source.values())  # equal sources repeat in pairs
    assert {(p["source"], p["target"]) for p in pairs} == targets
    for i in range(0, len(pairs), 2):
        assert pairs[i]["source"] == pairs[i + 1]["source"]


def test_para_directions(records):
    para = bd.read_jsonl(SAMPLE / "para_dev.jsonl.gz")
    rev = bd.read_jsonl(SAMPLE / "para_rev_dev.jsonl.gz")
    for r, p, q in zip(records["dev"], para, rev, strict=True):
        assert (p["source"], p["target"]) == (r["kjv"], r["web"])
        assert (q["source"], q["target"]) == (r["web"], r["kjv"])


def test_sample_is_small():
    total = sum(f.stat().st_size for f in SAMPLE.rglob("*") if f.is_file())
    assert total < 3 * 1024 * 1024
