"""A corpus of bad input files, run against every reader (issue 13).

Every case must give, from every reader that reads that kind of file: a one-line
message naming the file (and the line, where there is one), exit code 2 from the CLI, no
traceback, and no output file that a later run would trust (no score output, no
``.partial``, no saved head). The CLI cases fail before any model is loaded, so the
model named is never looked for. Hypothesis then feeds arbitrary bytes to the readers:
they return records or raise the reader's own error naming the file, nothing else.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sigmoid_head.cli import main as cli_main
from sigmoid_head.data.records import DataError, read_jsonl, read_lines, read_records

GOOD = b'{"source": "la casa", "target": "the house", "candidate": "the house"}\n'


@dataclass(frozen=True)
class Case:
    name: str
    suffix: str
    data: bytes | None  # None: the path is a directory
    line: int | None  # the line the message must name, if any
    kinds: tuple[str, ...] = ("jsonl",)  # which readers get it: jsonl, txt


CORPUS = [
    Case("bad_json", ".jsonl", GOOD + b"{oops\n", 2),
    Case("cut_off_record", ".jsonl", GOOD + b'{"source": "a", "tar', 2),
    Case("trailing_comma", ".jsonl", b'{"source": "a", "target": "b",}\n', 1),
    Case("invalid_utf8", ".jsonl", GOOD + b'{"source": "\xff\xfe"}\n', 2),
    Case("lone_surrogate", ".jsonl", GOOD + b'{"source": "\\ud800", "target": "b"}\n', 2),
    Case("raw_control_char", ".jsonl", b'{"source": "a\x00b", "target": "b"}\n', 1),
    Case("array_not_object", ".jsonl", GOOD + b"[1, 2]\n", 2),
    Case("bare_number", ".jsonl", b"3\n", 1),
    Case("deep_nesting", ".jsonl", GOOD + b"[" * 100_000 + b"\n", 2),
    Case("empty_file", ".jsonl", b"", None, ("jsonl", "txt")),
    Case("blank_lines_only", ".jsonl", b"\n \n\t\n", None),
    Case("corrupt_gzip", ".jsonl.gz", b"\x1f\x8b\x08\x00garbage-garbage", None),
    Case("truncated_gzip", ".jsonl.gz", gzip.compress(GOOD * 50)[:40], None),
    Case("not_gzip", ".jsonl.gz", GOOD, None),
    Case("directory", ".jsonl", None, None, ("jsonl", "txt")),
    Case("txt_invalid_utf8", ".txt", b"a\nb\n\xc3\x28 c\n", 3, ("txt",)),
    Case("txt_latin1", ".txt", "caf\xe9\n".encode("latin-1"), 1, ("txt",)),
    Case("txt_truncated_gzip", ".txt.gz",
         gzip.compress("".join(f"line {i}\n" for i in range(2000)).encode())[:100], None, ("txt",)),
]
SCHEMA = [  # well-formed JSON that is not a scoring/training record
    Case("missing_candidate", ".jsonl", GOOD + b'{"source": "a"}\n', 2),
    Case("source_not_string", ".jsonl", b'{"source": 1, "target": "b", "candidate": "b"}\n', 1),
    Case("messages_not_list", ".jsonl", b'{"messages": "hi", "candidate": "b"}\n', 1),
    Case("no_known_keys", ".jsonl", b'{"foo": "bar"}\n', 1),
]


def _make(tmp_path: Path, case: Case) -> Path:
    path = tmp_path / f"{case.name}{case.suffix}"
    if case.data is None:
        path.mkdir()
    else:
        path.write_bytes(case.data)
    return path


def _one_clean_line(capsys, command: str, path: Path, line: int | None) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"sigmoid-head {command}: error: "), lines[0]
    assert str(path) in lines[0], lines[0]
    if line is not None:
        assert f"{path}:{line}:" in lines[0], lines[0]
    return lines[0]


def _ids(cases):
    return [c.name for c in cases]


@pytest.mark.parametrize("case", CORPUS + SCHEMA, ids=_ids(CORPUS + SCHEMA))
def test_training_reader(case, tmp_path):
    path = _make(tmp_path, case)
    with pytest.raises((DataError, FileNotFoundError)) as exc:
        read_records(path)
    assert str(path) in str(exc.value)
    if case.line is not None and case not in SCHEMA[:1]:  # a record without a candidate trains
        assert f"{path}:{case.line}:" in str(exc.value)


@pytest.mark.parametrize("case", CORPUS + SCHEMA[1:], ids=_ids(CORPUS + SCHEMA[1:]))
def test_train_command(case, tmp_path, capsys):
    path, out = _make(tmp_path, case), tmp_path / "head"
    code = cli_main(["train", "--train-file", str(path), "--output-dir", str(out),
                     "--model", "no/such-model", "--no-progress"])
    assert code == 2
    _one_clean_line(capsys, "train", path, case.line)
    assert not (out / "head_config.json").exists()


@pytest.mark.parametrize("case", [c for c in CORPUS + SCHEMA if "jsonl" in c.kinds],
                         ids=_ids([c for c in CORPUS + SCHEMA if "jsonl" in c.kinds]))
def test_score_input(case, tmp_path, capsys):
    path, out = _make(tmp_path, case), tmp_path / "scores.jsonl"
    code = cli_main(["score", "--input", str(path), "--model", "no/such-model",
                     "--to-json", str(out), "--quiet"])
    assert code == 2
    _one_clean_line(capsys, "score", path, case.line)
    assert not out.exists() and not Path(str(out) + ".partial").exists()


@pytest.mark.parametrize("case", [c for c in CORPUS if "txt" in c.kinds],
                         ids=_ids([c for c in CORPUS if "txt" in c.kinds]))
@pytest.mark.parametrize("flag", ["-s", "-t"])
def test_score_text_files(case, flag, tmp_path, capsys):
    path, out = _make(tmp_path, case), tmp_path / "scores.jsonl"
    good = tmp_path / "good.txt"
    good.write_text("a\nb\nc\n")
    files = {"-s": good, "-t": good, flag: path}
    code = cli_main(["score", "-s", str(files["-s"]), "-t", str(files["-t"]), "--model",
                     "no/such-model", "--to-json", str(out), "--quiet"])
    assert code == 2
    _one_clean_line(capsys, "score", path, case.line)
    assert not out.exists()


@pytest.mark.parametrize("case", [c for c in CORPUS if "jsonl" in c.kinds],
                         ids=_ids([c for c in CORPUS if "jsonl" in c.kinds]))
def test_evaluate_scores_file(case, tmp_path, capsys):
    path = _make(tmp_path, case)
    gold = tmp_path / "gold.txt"
    gold.write_text("0.5\n0.1\n")
    code = cli_main(["evaluate", "--scores", str(path), "--gold", str(gold), "--no-ci"])
    assert code == 2
    _one_clean_line(capsys, "evaluate", path, case.line)


@pytest.mark.parametrize("case", [c for c in CORPUS if "txt" in c.kinds],
                         ids=_ids([c for c in CORPUS if "txt" in c.kinds]))
def test_evaluate_gold_file(case, tmp_path, capsys):
    path = _make(tmp_path, case)
    scores = tmp_path / "scores.jsonl"
    scores.write_text('{"sigmoid": 0.5}\n{"sigmoid": 0.25}\n')
    code = cli_main(["evaluate", "--scores", str(scores), "--gold", str(path), "--no-ci"])
    assert code == 2
    _one_clean_line(capsys, "evaluate", path, case.line)


def _run_unprivileged(argv: list[str]) -> tuple[int, str]:
    """cli_main(argv) in a forked child that drops to the user nobody (the suite runs as root,
    and root reads files whatever their permissions): (exit code, what it wrote to stderr)."""
    import sys

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(r)
            sys.stderr = os.fdopen(w, "w")
            os.setgid(65534)
            os.setuid(65534)
            code = cli_main(argv)
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as pipe:
        err = pipe.read()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and setuid")
def test_unreadable_file(tmp_path, capsys):
    if os.geteuid() != 0:
        path = tmp_path / "secret.jsonl"
        path.write_bytes(GOOD)
        path.chmod(0)
        assert cli_main(["score", "--input", str(path), "--model", "no/such-model"]) == 2
        assert "cannot read" in _one_clean_line(capsys, "score", path, None)
        return
    folder = Path(tempfile.mkdtemp())  # reachable by nobody, unlike pytest's tmp_path
    try:
        folder.chmod(0o755)
        path = folder / "secret.jsonl"
        path.write_bytes(GOOD)
        path.chmod(0)
        code, err = _run_unprivileged(["score", "--input", str(path), "--model", "no/such-model"])
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2, err
        assert len(lines) == 1 and "Traceback" not in err, err
        assert "cannot read" in lines[0] and str(path) in lines[0], err
        assert sorted(p.name for p in folder.iterdir()) == ["secret.jsonl"]  # no output written
    finally:
        path.chmod(0o600)
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def test_missing_file(tmp_path, capsys):
    path = tmp_path / "nope.jsonl"
    assert cli_main(["score", "--input", str(path), "--model", "no/such-model"]) == 2
    _one_clean_line(capsys, "score", path, None)


# -- hypothesis: arbitrary bytes ---------------------------------------------------------------

_FUZZ = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])
_LINEISH = st.lists(st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"\n", b"\r\n", b"\t", b"{", b"}", b'"', b"\\u", b"\xef\xbb\xbf", b"\xff",
                     b"\xe2\x80\xa8", GOOD, b'{"text": "x"}\n', b'{"messages": []}\n']),
), max_size=12).map(b"".join)


@_FUZZ
@given(data=_LINEISH, suffix=st.sampled_from([".jsonl", ".tsv", ".txt", ".jsonl.gz", ".txt.gz"]))
def test_readers_on_arbitrary_bytes(data, suffix):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"fuzz{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") and data[:1] != b"x"
                         else data)
        for reader in (read_records, read_jsonl, read_lines):
            try:
                out = reader(path)
            except DataError as err:
                assert str(path) in str(err)
                assert "\n" not in str(err).strip()
                continue
            assert isinstance(out, list)
            if reader is read_records:
                assert out and all(isinstance(r, dict) for r in out)


@_FUZZ
@given(texts=st.lists(st.text(min_size=1).filter(lambda t: t.strip()), min_size=1, max_size=6),
       bom=st.booleans())
def test_jsonl_round_trip_of_any_text(texts, bom):
    """Any text, U+2028 and friends included, written as JSONL reads back unchanged."""
    body = "".join(json.dumps({"source": t, "target": t}, ensure_ascii=False) + "\n" for t in texts)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "rt.jsonl"
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate cannot be UTF-8 at all
            return
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + raw)
        assert [r["source"] for r in read_records(path)] == texts
        assert [r["source"] for r in read_jsonl(path)] == texts
