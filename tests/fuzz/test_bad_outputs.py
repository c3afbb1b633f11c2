"""Hostile and careless output settings (issue 26): outputs that are inputs, links
planted where the writers put their lock, temp, meta and partial files, and text with
control and bidi characters on its way to a terminal, a page or a model card.

Every case must end in a one-line error with exit 2 (or, for planted links, a run that
writes its own file and leaves the link's target alone), never in a traceback or in a
changed input file with exit 0.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmoid_head.cli import main as cli_main
from sigmoid_head.safe.files import LOCK_NAME, DirectoryLock, output_lock, write_atomic
from sigmoid_head.safe.resumable_jsonl import ResumableJsonlWriter
from sigmoid_head.safe.text import BIDI_CONTROLS, card_text, html_text, visible

ROW = '{"source": "la casa", "candidate": "the house"}\n'

# (name, extra argv); IN = in.jsonl, SRC/CAND = -s/-t files, H = head folder, M = model
OUTPUT_CASES = [
    ("to_json_is_input", ["--input", "IN", "--to-json", "IN"]),
    ("to_json_is_input_dotdot", ["--input", "IN", "--to-json", "sub/../in.jsonl"]),
    ("to_json_is_input_dot_slash", ["--input", "IN", "--to-json", "./in.jsonl"]),
    ("to_json_is_link_to_input", ["--input", "IN", "--to-json", "LINK"]),
    ("to_json_is_hard_link_to_input", ["--input", "IN", "--to-json", "HARD"]),
    ("input_is_link_to_to_json", ["--input", "LINK", "--to-json", "IN"]),
    ("html_is_input", ["--input", "IN", "--html", "IN"]),
    ("html_is_to_json", ["--input", "IN", "--to-json", "o.jsonl", "--html", "o.jsonl"]),
    ("html_is_link_to_to_json", ["--input", "IN", "--to-json", "IN2", "--html", "LINK2"]),
    ("to_json_is_sources", ["-s", "SRC", "-t", "CAND", "--to-json", "SRC"]),
    ("to_json_is_candidates", ["-s", "SRC", "-t", "CAND", "--to-json", "CAND"]),
    ("html_is_candidates", ["-s", "SRC", "-t", "CAND", "--html", "CAND"]),
    ("to_json_head_config", ["--input", "IN", "--head", "H", "--to-json", "H/head_config.json"]),
    ("to_json_new_file_in_head", ["--input", "IN", "--head", "H/", "--to-json", "H/o.jsonl"]),
    ("html_in_head", ["--input", "IN", "--head", "H", "--html", "H/page.html"]),
    ("to_json_in_model", ["--input", "IN", "--model", "M", "--to-json", "M/config.json"]),
    ("to_json_via_link_to_head", ["--input", "IN", "--head", "H", "--to-json", "HL/x.jsonl"]),
]


def _setup(tmp: Path) -> dict[str, str]:
    (tmp / "in.jsonl").write_text(ROW * 2)
    (tmp / "in2.jsonl").write_text(ROW)
    (tmp / "src.txt").write_text("la casa\n")
    (tmp / "cand.txt").write_text("the house\n")
    for d in ("H", "M", "sub"):
        (tmp / d).mkdir()
    (tmp / "H" / "head_config.json").write_text("{}\n")
    (tmp / "M" / "config.json").write_text("{}\n")
    (tmp / "link.jsonl").symlink_to(tmp / "in.jsonl")
    (tmp / "link2.jsonl").symlink_to(tmp / "in2.jsonl")
    (tmp / "HL").symlink_to(tmp / "H")
    os.link(tmp / "in.jsonl", tmp / "hard.jsonl")
    return {"IN": "in.jsonl", "IN2": "in2.jsonl", "LINK": "link.jsonl", "LINK2": "link2.jsonl",
            "HARD": "hard.jsonl", "SRC": "src.txt", "CAND": "cand.txt", "H": "H", "M": "M"}


def _snapshot(tmp: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(tmp.rglob("*"))
            if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("command", ["score", "generate"])
@pytest.mark.parametrize(("name", "argv"), OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_an_output_that_would_destroy_an_input_is_refused(name, argv, command, tmp_path,
                                                          monkeypatch, capsys):
    if command == "generate" and ("-t" in argv):
        pytest.skip("generate reads no candidates")
    monkeypatch.chdir(tmp_path)
    names = _setup(tmp_path)
    before = _snapshot(tmp_path)
    code = cli_main([command, "--quiet", *[names.get(a, a) for a in argv]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "same file" in err or "inside" in err, err
    assert _snapshot(tmp_path) == before


def _plant(tmp: Path, name: str) -> Path:
    victim = tmp / "victim.txt"
    victim.write_text("precious\n")
    (tmp / name).symlink_to(victim)
    return victim


PLANTED = {
    LOCK_NAME: lambda d: DirectoryLock(d, "train").__enter__().__exit__(),
    ".o.jsonl.lock": lambda d: output_lock(d / "o.jsonl").__enter__().__exit__(),
    "calibration.json.tmp": lambda d: write_atomic(d / "calibration.json", "{}"),
    "combination.json.tmp": lambda d: write_atomic(d / "combination.json", "{}"),
    "head_config.json.tmp": lambda d: write_atomic(d / "head_config.json", "{}"),
    "page.html.tmp": lambda d: write_atomic(d / "page.html", "<p>"),
    "o.jsonl.partial.meta": lambda d: ResumableJsonlWriter(d / "o.jsonl", key="k", total=0).close(),
    "o.jsonl.partial": lambda d: ResumableJsonlWriter(d / "o.jsonl", key="k", total=0).close(),
}


@pytest.mark.parametrize("name", list(PLANTED))
def test_no_write_through_a_planted_link(name, tmp_path):
    victim = _plant(tmp_path, name)
    PLANTED[name](tmp_path)
    assert victim.read_text() == "precious\n"


_UNSAFE = st.text(st.sampled_from([chr(c) for c in range(0x20)] + ["\x7f", "\x9b", "a", "é"]
                                  + sorted(BIDI_CONTROLS)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(_UNSAFE)
def test_text_reaches_a_terminal_page_or_card_defused(text):
    shown = visible(text)
    assert not any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in shown)
    assert not BIDI_CONTROLS & set(shown)
    card = card_text(text)
    assert "\n" not in card and "<" not in card and not BIDI_CONTROLS & set(card)
    page = html_text(text + "<b>")
    assert "<b>" not in page.replace("<bdi>", "").replace("</bdi>", "")
    assert not BIDI_CONTROLS & set(text) or page.startswith("<bdi>")
