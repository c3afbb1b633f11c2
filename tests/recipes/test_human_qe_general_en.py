"""recipes/human_qe/build_general_en.py: CNXML extraction, records and the licence check,
on a synthetic OpenStax-like repository (no network, no model: tokens are words here)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from recipes.human_qe import build_general_en as g

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CC_BY = "Attribution 4.0 International\n\n=====\n\nCreative Commons Corporation ...\n"
CC_BY_NC = "Attribution-NonCommercial 4.0 International\n\n=====\n\nCreative Commons ...\n"
NS = 'xmlns="http://cnx.rice.edu/cnxml" xmlns:m="http://www.w3.org/1998/Math/MathML"'
LONG = " ".join(
    f"Sentence number {k} talks about the long history of the river." for k in range(30)
)

COLLECTION = """<col:collection xmlns:col="http://cnx.rice.edu/collxml" xmlns:md="http://cnx.rice.edu/mdml">
  <col:metadata><md:title>Toy Book 2e</md:title>
    <md:license url="http://creativecommons.org/licenses/by/4.0/">CC BY</md:license></col:metadata>
  <col:content>
    <col:module document="m00001"/>
    <col:subcollection><md:title>Chapter One</md:title>
      <col:content><col:module document="m00002"/><col:module document="m00003"/>
        <col:module document="m00004"/><col:module document="m00002"/></col:content>
    </col:subcollection>
  </col:content>
</col:collection>
"""
PREFACE = f"""<document {NS}><title>Preface</title><content>
<para id="p0">Welcome to the preface of this book, which is front matter.</para></content></document>
"""
MODULE_A = f"""<document {NS}><title>Rivers and Towns</title>
<metadata><md:abstract xmlns:md="http://cnx.rice.edu/mdml"><para id="a">ABSTRACT objectives text.</para></md:abstract></metadata>
<content>
<para id="p1">Rivers shaped the growth of <term id="t1">early towns</term> in many <emphasis effect="italics">regions</emphasis> of the world (see <link target-id="fig1" document=""/>).</para>
<figure id="fig1"><media alt="map"><image src="x.jpg"/></media><caption>CAPTION of the river map.</caption></figure>
<para id="p2">Traders moved goods along the water every season.<footnote id="f1">FOOTNOTE about the traders.</footnote> Farmers followed them.</para>
<table id="tab1"><tgroup cols="1"><tbody><row><entry>TABLE cell text</entry></row></tbody></tgroup></table>
<para id="p3">The flow rate <m:math><m:mi>MATHVAR</m:mi></m:math> was measured every spring by town officials.</para>
<para id="p4">The flow rate was also written down (<m:math><m:mi>q</m:mi></m:math>) in the town records of that year.</para>
<list id="l1"><item>Boats carried grain and salt to the market towns downstream.</item><item>Bridges joined the two banks of the river near the old mill.</item></list>
<quote id="q1"><para id="qp">QUOTED words of an old traveller who crossed the river by ferry.</para></quote>
<note id="n1" class="history link-to-learning"><label>Link to Learning</label><para id="np">LINKBOX visit this website to learn more.</para></note>
<section id="s1" class="review-questions"><title>Review Questions</title>
<exercise id="e1"><problem id="pr1"><para id="pp">EXERCISE which river is longest?</para></problem>
<solution id="so1"><para id="sp">SOLUTION the Nile.</para></solution></exercise></section>
</content>
<glossary><definition id="d1"><term>GLOSSARY term</term><meaning id="me">GLOSSARY meaning</meaning></definition></glossary>
</document>
"""
SHORT = f"""<document {NS}><title>Short</title><content><para id="p6">Too short.</para></content></document>
"""
MODULE_B = f"""<document {NS}><title>A Long Module</title><content>
<section id="s2"><title>SECTIONTITLE Heading</title>
<para id="p5">{LONG}</para>
</section>
<exercise id="e2"><problem id="pr2"><para id="pq">EXERCISE outside a section.</para></problem></exercise>
</content></document>
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare clone ``<clones>/openstax+osbooks-toy/repo``; (clones, CC BY commit, NC commit)."""
    work = tmp_path / "work"
    files = {
        "LICENSE": CC_BY,
        "README.md": "See https://openstax.org/details/books/toy-book-2e online.\n",
        "collections/toy.collection.xml": COLLECTION,
        "modules/m00001/index.cnxml": PREFACE,
        "modules/m00002/index.cnxml": MODULE_A,
        "modules/m00003/index.cnxml": MODULE_B,
        "modules/m00004/index.cnxml": SHORT,
    }
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text, encoding="utf-8")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "cc by")
    good = _git(work, "rev-parse", "HEAD")
    (work / "LICENSE").write_text(CC_BY_NC, encoding="utf-8")
    _git(work, "commit", "-q", "-am", "nc")
    nc = _git(work, "rev-parse", "HEAD")
    clones = tmp_path / "clones"
    clones.mkdir()
    _git(
        tmp_path, "clone", "-q", "--bare", str(work), str(clones / "openstax+osbooks-toy" / "repo")
    )
    return clones, good, nc


def _words(text: str) -> int:
    return len(text.split())


def test_extraction_keeps_prose_and_drops_the_rest(tmp_path: Path) -> None:
    clones, good, _ = _repo(tmp_path)
    gd = g.git_dir(clones, "openstax/osbooks-toy")
    stats: dict[str, int] = {}
    titles, modules = g.read_book(gd, good, "toy", stats)
    assert titles == ["Toy Book 2e"]
    assert len(modules) == 3  # not the preface (outside every chapter); m00002 read once
    text = "\n".join(p for m in modules for p in m)
    assert modules[0][0] == (
        "Rivers shaped the growth of early towns in many regions of the world."
    )  # inline markup kept, the empty figure reference and its parentheses gone
    assert "Traders moved goods along the water every season. Farmers followed them." in text
    assert "Boats carried grain and salt to the market towns downstream." in modules[0]
    assert "Bridges joined the two banks of the river near the old mill." in modules[0]
    assert "QUOTED words of an old traveller who crossed the river by ferry." in modules[0]
    assert "The flow rate was also written down in the town records of that year." in modules[0]
    for gone in ("preface", "ABSTRACT", "CAPTION", "FOOTNOTE", "TABLE", "MATHVAR", "LINKBOX",
                 "EXERCISE", "SOLUTION", "GLOSSARY", "SECTIONTITLE", "Rivers and Towns",
                 "Review Questions", "()", g.GAP):  # fmt: skip
        assert gone not in text, gone
    assert stats == {"sentences_with_gap": 1}  # "The flow rate <math/> was measured ..."
    assert modules[1:] == [[LONG], ["Too short."]]


def test_records_are_whole_paragraphs_under_the_cap(tmp_path: Path, monkeypatch) -> None:
    clones, good, _ = _repo(tmp_path)
    monkeypatch.setattr(g, "BOOKS", {"toy": {"repo": "openstax/osbooks-toy", "commit": good}})
    rows, summary = g.build(clones, _words)
    assert rows and all(set(r) == {"id", "text"} and r["id"].startswith("toy-") for r in rows)
    assert all(g.MIN_TOKENS <= _words(r["text"]) <= g.MAX_TOKENS for r in rows)
    texts = [r["text"] for r in rows]
    # the long paragraph (300 words) is cut at sentence ends into whole sentences
    long_parts = [t for t in texts if "Sentence number" in t]
    assert len(long_parts) == 3 and " ".join(sorted(long_parts, key=LONG.index)) == LONG
    assert all(p.endswith("river.") for p in long_parts)
    # short paragraphs of a module are packed together, one a line
    assert any(t.startswith("Rivers shaped") and "\nTraders moved" in t for t in texts)
    assert "Too short." not in texts  # a record under MIN_TOKENS
    book = summary["books"]["toy"]
    assert book["records_short"] == 1 and book["paragraphs_split"] == 1
    assert book["online"] == ["https://openstax.org/details/books/toy-book-2e"]
    assert summary["tokens"] == sum(_words(t) for t in texts)
    # the file is what ``sigmoid-head train --task text`` reads, and its bytes are reproducible
    data = g.gzip_jsonl(rows)
    assert data == g.gzip_jsonl(rows)
    (tmp_path / "train.jsonl.gz").write_bytes(data)
    from sigmoid_head.data.records import detect_task, read_records

    back = read_records(tmp_path / "train.jsonl.gz")
    assert back == rows and {detect_task(r) for r in back} == {"text"}
    assert json.loads(gzip.decompress(data).splitlines()[0]) == rows[0]
    assert "CC BY 4.0" in g.readme(summary, "0" * 64, len(data))


def test_cutter_splits_at_sentence_ends_and_drops_short_records() -> None:
    paras = [["One two three four five. Six seven eight nine ten.", "Tiny."], ["a b c d e f g h"]]
    records, counts = g.cut_records(paras, _words, cap=6, min_tokens=2)
    assert records == ["One two three four five.", "Six seven eight nine ten.\nTiny."]
    assert counts["paragraphs_split"] == 2 and counts["sentences_too_long"] == 1
    assert g.split_sentences("Dr. Smith came to the U.S. Army. He left.") == [
        "Dr. Smith came to the U.S. Army.",
        "He left.",
    ]


def test_interleave_is_round_robin_and_stops_at_the_budget() -> None:
    by_book = {b: [{"id": f"{b}-{k}", "text": "w " * 10} for k in range(5)] for b in "xy"}
    out = g.interleave(by_book, _words, budget=45)
    assert [r["id"][0] for r in out] == ["x", "y", "x", "y"]
    assert out == g.interleave(by_book, _words, budget=45)  # seeded


def test_a_licence_other_than_cc_by_is_refused(tmp_path: Path) -> None:
    clones, _, nc = _repo(tmp_path)
    gd = g.git_dir(clones, "openstax/osbooks-toy")
    with pytest.raises(g.LicenceError):
        g.read_book(gd, nc, "toy")
    with pytest.raises(g.LicenceError):
        g.check_licence(b"MIT License\n", "x")
    g.check_licence(CC_BY.encode(), "x")
