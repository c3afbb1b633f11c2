"""``sigmoid-head generate --stream`` and its terminal colours (sigmoid_head/terminal.py), through
the installed entry point in a pipe and on a pseudo-terminal (committed 0.1.0 head, tiny
model)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from test_cli import ENTRY, FIXTURE, _pairs, run

from sigmoid_head.cli import main
from sigmoid_head.terminal import colour_code, paint, show_stream

MODEL = ["--head", str(FIXTURE / "head"), "--model", str(FIXTURE / "base"), "--device", "cpu"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def test_paint() -> None:
    assert paint("dog", 0.05, True) == "\x1b[38;5;196mdog\x1b[0m"
    assert colour_code(0.95) == 34 and colour_code(0.4) == 220
    assert paint("dog", 0.05, False) == "dog" and paint("dog", None, True) == "dog"


def test_generate_stream_into_a_pipe_writes_json_lines(tmp_path: Path) -> None:
    """Not a terminal: one JSON line per token with its scores, one per finished output
    (its row), nothing else on stdout (the summary goes to stderr)."""
    src, _ = _pairs(tmp_path)
    out = tmp_path / "gen.jsonl"
    res = run("generate", "-s", str(src), *MODEL, "--quiet", "--max-new-tokens", "4",
              "--stream", "--to-json", str(out))
    assert res.returncode == 0, res.stderr
    assert "\x1b[" not in res.stdout  # no colour codes in a pipe
    rows = _rows(out)
    assert len(rows) == 3
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    done = [x for x in lines if x.get("done")]
    assert [d["candidate"] for d in done] == [r["candidate"] for r in rows]
    assert [d["combined"] for d in done] == pytest.approx([r["combined"] for r in rows])
    for i, d in enumerate(done):
        tokens = [x for x in lines if x["input"] == i and not x.get("done")]
        assert "".join(t["token"] for t in tokens) == d["candidate"]
        assert all(0 <= t["sigmoid"] <= 1 and 0 <= t["softmax"] <= 1 for t in tokens)
    assert "3 outputs scored" in res.stderr and "combined = " in res.stderr


def test_generate_stream_colours_a_terminal(tmp_path: Path) -> None:
    """The installed command with its output on a real pseudo-terminal."""
    import os
    import pty
    import re
    import subprocess

    src, _ = _pairs(tmp_path)
    out = tmp_path / "gen.jsonl"
    command = [str(ENTRY)] if ENTRY.exists() else [sys.executable, "-m", "sigmoid_head.cli"]
    master, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*command, "generate", "-s", str(src), *MODEL, "--max-new-tokens", "4", "--stream",
         "--to-json", str(out)], stdout=terminal, stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"})
    os.close(terminal)
    shown = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the command ended and closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = shown.decode("utf-8").replace("\r\n", "\n")
    assert text.startswith("token colour = sigmoid probability")
    assert len(re.findall(r"\x1b\[38;5;\d+m", text)) >= 5 + 3  # the legend's bands, tokens
    plain = re.sub(r"\x1b\[[\d;]*m", "", text).split("\n", 1)[1]  # without colours and legend
    streamed = "".join(r["candidate"] + "\n" for r in _rows(out))
    assert plain.startswith(streamed) and "3 outputs scored" in plain


@pytest.mark.parametrize("extra, message", [(["--num-beams", "2"], "num_beams=1"),
                                            (["--rauq"], "leave out --rauq")])
def test_stream_refusals(tmp_path: Path, capsys, extra, message) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    code = main(["generate", "-s", str(tmp_path / "a.txt"), "--stream", *extra, *MODEL])
    assert code == 2 and message in capsys.readouterr().err


def test_show_stream_prints_and_passes_events_on() -> None:
    from sigmoid_head.scoring.streaming import OutputEvent, TokenEvent

    events = [TokenEvent(0, 0, 0, 5, "the", {"sigmoid": 0.05}, False),
              TokenEvent(0, 0, 1, 6, " dog", {"sigmoid": 0.9}, True),
              OutputEvent(0, 0, None, {"candidate": "the dog"})]  # type: ignore[arg-type]
    for out, colour in ((io.StringIO(), False), (_Tty(), True)):
        assert list(show_stream(iter(events), "sigmoid", out)) == events
        expected = (paint("the", 0.05, True) + paint(" dog", 0.9, True)) if colour else "the dog"
        assert out.getvalue() == expected + "\n"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True
