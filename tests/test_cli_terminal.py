"""``sigmoid-head generate --stream`` and its terminal colours (cli/terminal.py), through
the installed entry point and in-process (committed 0.1.0 head, tiny model)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from test_cli import FIXTURE, _pairs, run

from sigmoid_head.cli import main
from sigmoid_head.cli.terminal import colour_code, paint

MODEL = ["--head", str(FIXTURE / "head"), "--model", str(FIXTURE / "base"), "--device", "cpu"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def test_paint() -> None:
    assert paint("dog", 0.05, True) == "\x1b[38;5;196mdog\x1b[0m"
    assert colour_code(0.95) == 34 and colour_code(0.4) == 220
    assert paint("dog", 0.05, False) == "dog" and paint("dog", None, True) == "dog"


def test_generate_stream_plain_when_not_a_terminal(tmp_path: Path) -> None:
    src, _ = _pairs(tmp_path)
    out = tmp_path / "gen.jsonl"
    res = run("generate", "-s", str(src), *MODEL, "--quiet", "--max-new-tokens", "4",
              "--stream", "--to-json", str(out))
    assert res.returncode == 0, res.stderr
    assert "\x1b[" not in res.stdout  # no colour codes in a pipe
    rows = _rows(out)
    assert len(rows) == 3
    streamed = "".join(r["candidate"] + "\n" for r in rows)  # each output, then a newline
    assert res.stdout.startswith(streamed) and "3 outputs scored" in res.stdout[len(streamed):]


def test_generate_stream_colours_a_terminal(tmp_path: Path, monkeypatch) -> None:
    src, _ = _pairs(tmp_path)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    code = main(["generate", "-s", str(src), *MODEL, "--quiet", "--max-new-tokens", "3", "--stream"])
    assert code == 0
    text = tty.getvalue()
    assert text.startswith("token colour = sigmoid probability")
    assert text.count("\x1b[38;5;") >= 3 + 5  # the legend's bands and at least a token per output


def test_stream_refuses_beam_search(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    res = run("generate", "-s", "a.txt", "--stream", "--num-beams", "2", *MODEL, cwd=tmp_path)
    assert res.returncode == 2 and "num_beams=1" in res.stderr and "Traceback" not in res.stderr
