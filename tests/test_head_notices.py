"""A saved mix that gives the head weight 0, or error spans read off another method, is
said in one line by ``score``, ``generate``, ``rerank`` and the HTML page (issue 51): the
user must not believe the head takes part where it does not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_cli import FIXTURE, _pairs

from sigmoid_head.cli import main
from sigmoid_head.evaluation.combination import DEFAULTS, Combination
from sigmoid_head.evaluation.extras import head_notices
from sigmoid_head.evaluation.spans import SpanConfig

ZERO = "notice: the saved mix gives the head weight 0: combined is softmax_mean_log alone"
SPANS = "notice: the saved error-span setting reads softmax word scores"


def test_the_notices_name_what_leaves_the_head_out() -> None:
    zero = Combination(0.0, "softmax_mean_log", "17 dev items")
    assert head_notices(zero, None) == [
        "notice: the saved mix gives the head weight 0: combined is softmax_mean_log alone, "
        "the head takes no part in it"
    ]
    assert head_notices(None, SpanConfig(method="softmax")) == [
        "notice: the saved error-span setting reads softmax word scores: errors are "
        "softmax's spans, not the head's"
    ]
    assert len(head_notices(zero, SpanConfig(method="boostedprob"))) == 2
    # the head takes part: no notice, whatever its weight
    assert head_notices(Combination(0.05, "softmax_min"), SpanConfig(method="sigmoid")) == []
    assert all(head_notices(c, None) == [] for c in DEFAULTS.values())
    assert head_notices(None, None) == []


@pytest.fixture(scope="module")
def left_out(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A copy of the fixture head whose saved mix gives the head weight 0 and whose error
    spans read the softmax; returns (head, sources, candidates)."""
    tmp = tmp_path_factory.mktemp("left_out")
    head = tmp / "head"
    shutil.copytree(FIXTURE / "head", head)
    Combination(0.0, "softmax_mean_log", "17 dev items").save(head)
    SpanConfig(method="softmax", threshold=0.2).save(head)
    return (head, *_pairs(tmp))


def _common(head: Path) -> list[str]:
    return ["--head", str(head), "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet"]


def test_score_and_its_page_say_the_head_is_left_out(left_out, tmp_path: Path, capsys) -> None:
    head, src, cand = left_out
    page = tmp_path / "page.html"
    assert (
        main(
            [
                "score",
                "-s",
                str(src),
                "-t",
                str(cand),
                *_common(head),
                "--to-json",
                str(tmp_path / "out.jsonl"),
                "--html",
                str(page),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith(ZERO) for line in out) == 1
    assert sum(line.startswith(SPANS) for line in out) == 1
    text = page.read_text(encoding="utf-8")
    assert f"<p class='notice'>{ZERO}" in text and f"<p class='notice'>{SPANS}" in text


def test_generate_and_rerank_say_it_too(left_out, tmp_path: Path, capsys) -> None:
    head, src, _ = left_out
    assert (
        main(
            [
                "generate",
                "-s",
                str(src),
                *_common(head),
                "--max-new-tokens",
                "4",
                "--to-json",
                str(tmp_path / "gen.jsonl"),
            ]
        )
        == 0
    )
    assert any(line.startswith(ZERO) for line in capsys.readouterr().out.splitlines())
    assert (
        main(
            [
                "rerank",
                "-s",
                str(src),
                *_common(head),
                "--samples",
                "2",
                "--max-new-tokens",
                "4",
                "--batch-size",
                "2",
                "-o",
                str(tmp_path / "rr.jsonl"),
            ]
        )
        == 0
    )
    assert any(line.startswith(ZERO) for line in capsys.readouterr().out.splitlines())


def test_a_head_that_takes_part_gets_no_notice(tmp_path: Path, capsys) -> None:
    src, cand = _pairs(tmp_path)
    assert (
        main(
            [
                "score",
                "-s",
                str(src),
                "-t",
                str(cand),
                *_common(FIXTURE / "head"),
                "--to-json",
                str(tmp_path / "out.jsonl"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "combined = " in out and "notice:" not in out
