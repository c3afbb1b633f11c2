"""Data files: JSONL, TSV and plain text records, read one way.

Record kinds, told apart by their keys (:func:`detect_task`): ``pairs``
``{"source", "target"}`` (or a 2-column TSV line), ``chat`` ``{"messages": [{"role",
"content"}, ...]}``, and ``text`` ``{"text"}`` (a ``.txt`` line or 1-column TSV line).

:func:`iter_lines` is the one place a text file is read, one line at a time (memory does
not grow with the file): UTF-8 (a leading byte-order mark is dropped), gunzipped when it
ends in ``.gz``. Lines end at ``"\n"``, ``"\r\n"`` or a bare ``"\r"`` (old Mac files),
never split with ``str.splitlines``, which also splits inside JSON strings at U+2028 and
other Unicode line breaks. :func:`read_jsonl` and :func:`read_records` (and their streaming forms
:func:`iter_jsonl_lines` and :func:`iter_records_with_lines`) are built on it; this module
needs neither torch nor transformers.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TASKS = ("pairs", "chat", "text")
FORMATS = ("auto", "jsonl", "tsv", "txt")
_TASK_KEYS = {"pairs": ("source", "target"), "chat": ("messages",), "text": ("text",)}
_MSG_KEYS = ("role", "content")
_EXTENSIONS = {".jsonl": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".txt": "txt"}

class DataError(ValueError):
    """A data file or record is malformed or does not fit the model kind."""


class Located(dict):
    """A record that knows where it was read: its ``file`` and 1-based ``line``, named by
    the warnings and errors about it. Otherwise a plain dict: JSON, equality and resume
    keys see only its items."""

    __slots__ = ("file", "line")

    def __init__(self, data: Any, file: str | Path, line: int) -> None:
        super().__init__(data)
        self.file, self.line = str(file), int(line)

    def copy(self) -> Located:
        return Located(self, self.file, self.line)


def record_where(rec: Any, k: int) -> str:
    """Where record ``k`` (0-based) came from: ``file:line`` for a :class:`Located` record,
    else ``record k+1``."""
    return f"{rec.file}:{rec.line}" if isinstance(rec, Located) else f"record {k + 1}"



def first_lines(lines: list[Any], limit: int = 10) -> str:
    """The first ``limit`` line numbers (or names) of a list, comma-separated, with ", ..."
    when there are more: for messages that name what was dropped or skipped."""
    return ", ".join(str(k) for k in lines[:limit]) + (", ..." if len(lines) > limit else "")


def _open_binary(path: Path) -> Any:
    """``path`` opened for reading bytes (gunzipped on the fly for ``.gz``)."""
    if not path.exists():
        raise FileNotFoundError(f"file not found: {path}")
    if not path.is_file():
        raise DataError(f"{path}: not a file")
    try:
        return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")  # noqa: SIM115
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from err


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a UTF-8 text file, read one line at a time.

    ``.gz`` files are gunzipped as they are read; a leading byte-order mark is dropped;
    lines end at ``"\n"``, ``"\r\n"`` or a bare ``"\r"`` (old Mac files), never at other
    Unicode line breaks (a final line break does not make an extra empty line). Memory
    does not grow with the file (unless its only line breaks are bare ``"\r"``).

    Raises:
        FileNotFoundError: no such file.
        DataError: unreadable, a corrupt or truncated gzip file, or bytes that are not
            valid UTF-8 (the message names the file and the line).
    """
    path = Path(path)
    lineno = 0
    with _open_binary(path) as f:
        while True:
            try:
                raw = f.readline()
            except (EOFError, zlib.error) as err:
                raise DataError(f"{path}: corrupt or truncated gzip file ({err})") from err
            except OSError as err:
                what = "corrupt or truncated gzip file" if path.suffix.lower() == ".gz" \
                    else "cannot read"
                raise DataError(f"{path}: {what} ({err.strerror or err})") from err
            if not raw:
                return
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path}:{lineno}: not valid UTF-8 (byte {raw[err.start]:#04x} "
                                f"at column {err.start + 1})") from err
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            line = line.removesuffix("\n").removesuffix("\r")
            if "\r" not in line:
                yield lineno, line
                continue
            # old Mac line breaks: a bare "\r" ends a line too ("\r", "\n", "\r\n" alike)
            pieces = line.split("\r")
            for k, piece in enumerate(pieces):
                yield lineno + k, piece
            lineno += len(pieces) - 1


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def parse_json_line(line: str) -> tuple[Any, str | None]:
    """Parse one JSONL line: the value and ``None``, or ``None`` and what is wrong."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        return None, f"bad JSON ({err.msg} at column {err.colno})"
    except RecursionError:
        return None, "bad JSON (nested too deeply)"
    if _ESCAPED_SURROGATE.search(line) and _has_lone_surrogate(value):
        return None, "a lone UTF-16 surrogate escape (\\ud800-\\udfff) is not text"
    return value, None


def read_lines(path: str | Path) -> list[str]:
    """Every line of a text file (see :func:`iter_lines`)."""
    return [line for _, line in iter_lines(path)]


def read_jsonl(path: str | Path, objects: bool = False) -> list[Any]:
    """One parsed JSON value per non-blank line of a ``.jsonl`` (or ``.jsonl.gz``) file.

    Args:
        objects: every value must be a JSON object.

    Raises:
        DataError: a line is not valid JSON (or not an object); the message names the
            file and the line.
    """
    return [value for _, value in read_jsonl_lines(path, objects)]


def read_jsonl_lines(path: str | Path, objects: bool = False) -> list[tuple[int, Any]]:
    """Like :func:`read_jsonl`, each value with its 1-based line number."""
    return list(iter_jsonl_lines(path, objects))


def iter_jsonl_lines(path: str | Path, objects: bool = False) -> Iterator[tuple[int, Any]]:
    """:func:`read_jsonl_lines` one line at a time (memory does not grow with the file)."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        value, problem = parse_json_line(line)
        if not problem and objects and not isinstance(value, dict):
            problem = f"expected a JSON object, got {type(value).__name__}"
        if problem:
            raise DataError(f"{path}:{lineno}: {problem}")
        yield lineno, value



def _check_record(rec: Any) -> str | None:
    """Say what is wrong with a parsed record, or return ``None`` if it is fine."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, got {type(rec).__name__}"
    if "messages" in rec:
        msgs = rec["messages"]
        if not isinstance(msgs, list) or not msgs:
            return "'messages' must be a non-empty list"
        for j, m in enumerate(msgs):
            if not isinstance(m, dict) or not all(isinstance(m.get(k), str) for k in _MSG_KEYS):
                return f"message {j} must be an object with string 'role' and 'content'"
        return None
    keys = _TASK_KEYS["pairs"] if "source" in rec or "target" in rec else ("text",)
    if keys == ("text",) and "text" not in rec:
        return f"record needs 'source'/'target', 'messages' or 'text' keys, has {sorted(rec)}"
    for key in keys:
        if key not in rec:
            return f"missing key '{key}'"
        if not isinstance(rec[key], str):
            return f"'{key}' must be a string, got {type(rec[key]).__name__}"
    return None


def _parse_line(line: str, fmt: str, n_cols: int | None) -> tuple[Any, str | None]:
    """Parse one non-blank line into a record; also return a problem or ``None``."""
    if fmt == "txt":
        return {"text": line}, None
    if fmt == "tsv":
        cols = line.split("\t")
        if len(cols) not in (1, 2) or (n_cols is not None and len(cols) != n_cols):
            want = n_cols or "1 or 2"
            return None, f"expected {want} tab-separated columns, got {len(cols)}"
        if len(cols) == 1:
            return {"text": cols[0]}, None
        return {"source": cols[0], "target": cols[1]}, None
    rec, problem = parse_json_line(line)
    if problem:
        return None, problem
    return rec, _check_record(rec)


def read_records_with_lines(path: str | Path, fmt: str = "auto") -> tuple[list[dict], list[int]]:
    """Like :func:`read_records`, also returning each record's 1-based line number."""
    records: list[dict] = []
    lines: list[int] = []
    for lineno, rec in iter_records_with_lines(path, fmt):
        records.append(rec)
        lines.append(lineno)
    if not records:
        raise DataError(f"{path}: file is empty")
    return records, lines


def iter_records_with_lines(path: str | Path, fmt: str = "auto") -> Iterator[tuple[int, dict]]:
    """(line number, record) of :func:`read_records`, one line at a time (an empty file
    yields nothing)."""
    path = Path(path)
    gzipped = path.suffix.lower() == ".gz"
    suffix = Path(path.stem).suffix.lower() if gzipped else path.suffix.lower()
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if fmt == "auto" and suffix not in _EXTENSIONS:
        raise DataError(f"{path}: cannot tell the format from the extension; pass fmt")
    fmt = _EXTENSIONS[suffix] if fmt == "auto" else fmt
    if not path.exists():
        raise FileNotFoundError(f"data file not found: {path}")
    n_cols = None
    for lineno, raw in iter_lines(path):
        line = raw.strip() if fmt == "txt" else raw.rstrip("\r")
        if not line.strip():
            continue
        rec, problem = _parse_line(line, fmt, n_cols)
        if problem:
            raise DataError(f"{path}:{lineno}: {problem}")
        n_cols = len(rec) if fmt == "tsv" else None
        yield lineno, rec


def read_records(path: str | Path, fmt: str = "auto") -> list[dict]:
    """Read records from a JSONL, TSV or plain text file.

    Args:
        path: ``.jsonl``/``.json``: one JSON object per line. ``.tsv``: ``source<TAB>target``
            per line (pairs) or one column (text). ``.txt``: one document per line.
            Blank lines are skipped. Any of them may be gzipped (``.jsonl.gz``, ...).
        fmt: ``"auto"`` (by extension), ``"jsonl"``, ``"tsv"`` or ``"txt"``.

    Returns:
        One record dict per non-blank line.

    Raises:
        DataError: For an empty file or a malformed line; the message names the file
            and the 1-based line number (``path:line: what is wrong``).
    """
    return read_records_with_lines(path, fmt)[0]


def detect_task(record: dict) -> str:
    """Tell a record's kind: ``"pairs"``, ``"chat"`` or ``"text"``; else raise DataError."""
    for task in ("pairs", "chat", "text"):
        if all(key in record for key in _TASK_KEYS[task]):
            return task
    raise DataError(f"cannot tell the task of a record with keys {sorted(record)}")
