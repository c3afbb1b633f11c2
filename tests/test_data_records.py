"""data/records.py: file formats, malformed lines named by file and line, the one reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sigmoid_head.data.records import DataError, detect_task, read_jsonl, read_lines, read_records


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_read_formats(tmp_path):
    assert read_records(write(tmp_path / "a.txt", "one\n\n two \n")) == [
        {"text": "one"},
        {"text": "two"},
    ]
    assert read_records(write(tmp_path / "b.tsv", "hola\thello\n\nadiós\tbye\n")) == [
        {"source": "hola", "target": "hello"},
        {"source": "adiós", "target": "bye"},
    ]
    assert read_records(write(tmp_path / "c.tsv", "just text\n")) == [{"text": "just text"}]
    jsonl = write(tmp_path / "d.data", json.dumps({"text": "x"}) + "\n")
    assert read_records(jsonl, fmt="jsonl") == [{"text": "x"}]
    with pytest.raises(DataError, match="extension"):
        read_records(jsonl)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"text": "ok"}\n\n{"text": "ok"\n', "bad JSON"),
        ('{"text": "ok"}\n\n{"source": "a"}\n', "missing key 'target'"),
        ('{"text": "ok"}\n\n{"source": "a", "target": 3}\n', "must be a string"),
        ('{"text": "ok"}\n\n{"messages": []}\n', "non-empty"),
        ('{"text": "ok"}\n\n{"messages": [{"role": "user"}]}\n', "'role' and 'content'"),
        ('{"text": "ok"}\n\n[1, 2]\n', "JSON object"),
        ('{"text": "ok"}\n\n{"foo": "bar"}\n', "keys"),
    ],
)
def test_malformed_jsonl_names_file_and_line(tmp_path, content, problem):
    path = write(tmp_path / "broken.jsonl", content)
    with pytest.raises(DataError) as err:
        read_records(path)
    msg = str(err.value)
    assert "broken.jsonl:3:" in msg and problem in msg


def test_malformed_tsv_names_file_and_line(tmp_path):
    path = write(tmp_path / "broken.tsv", "a\tb\nc\td\ne\tf\tg\n")
    with pytest.raises(DataError, match=r"broken\.tsv:3: .*columns"):
        read_records(path)
    path = write(tmp_path / "mixed.tsv", "a\tb\nonly one\n")
    with pytest.raises(DataError, match=r"mixed\.tsv:2: .*columns"):
        read_records(path)


def test_empty_file(tmp_path):
    with pytest.raises(DataError, match="empty"):
        read_records(write(tmp_path / "e.jsonl", "\n\n"))


def test_detect_task():
    assert detect_task({"source": "a", "target": "b"}) == "pairs"
    assert detect_task({"messages": []}) == "chat"
    assert detect_task({"text": "a"}) == "text"
    with pytest.raises(DataError):
        detect_task({"foo": 1})


def test_the_one_reader_drops_a_bom_and_splits_at_newline_only(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [{"source": "a\u2028b", "target": "c\u0085d"}, {"source": "e", "target": "f"}]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r, ensure_ascii=False) + "\r\n"
                                               for r in rows).encode("utf-8"))
    assert read_jsonl(path) == rows
    assert read_records(path) == rows
    assert read_lines(path)[0].startswith('{"source"')  # no BOM, no "\r"
    gz = tmp_path / "rows.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_jsonl(gz) == rows


def test_bad_json_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n')
    with pytest.raises(DataError, match=r"bad.jsonl:3: bad JSON"):
        read_jsonl(path)
