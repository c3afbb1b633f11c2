"""JSONL results streamed to disk in input order, and read back after an interruption.

:class:`ResumableJsonlWriter` writes each record (or each batch of records) flushed and
fsynced into ``<path>.partial``, renamed to ``<path>`` only when every record is there; a
rerun with the same inputs (:func:`inputs_key`) continues after the last complete record,
and a full disk leaves the file ending on a complete record with a message saying how far
it got. Built on :mod:`sigmoid_head.safe.files`' durable writes, streams and locks.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from . import files as io_utils
from .files import (
    _NOFOLLOW,
    META_SUFFIX,
    PARTIAL_SUFFIX,
    WriteError,
    _disk_hint,
    check_output_path,
    fsync_dir,
    is_own_file,
    is_stream,
    open_stream,
    output_lock,
    replace,
    write_durable,
    write_error,
)


def inputs_key(records: Iterable[Any], **settings: Any) -> str:
    """A hash of the inputs and the settings that change the results (resume check)."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for rec in records:
        digest.update(json.dumps(rec, sort_keys=True, ensure_ascii=False,
                                 default=str).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()[:32]


class ResumableJsonlWriter:
    """Stream JSON records to ``path`` in input order; resume an interrupted run.

    Records are appended to ``<path>.partial`` (one line each, flushed and fsynced);
    ``<path>.partial.meta`` holds the key of the run (:func:`inputs_key`) and the total.
    :meth:`close` renames the partial file to ``path`` once all ``total`` records are
    written, so ``path`` exists only when complete. Use as a context manager::

        with ResumableJsonlWriter(out, key=inputs_key(inputs, ...), total=len(inputs)) as w:
            for chunk in chunks(inputs[w.done:]):
                w.write_many(score(chunk))

    Attributes:
        done: records already on disk (from an interrupted run with the same key).
    """

    def __init__(self, path: str | Path, *, key: str, total: int, resume: bool = True) -> None:
        self.path = check_output_path(path)
        self.partial = self.path.with_name(self.path.name + PARTIAL_SUFFIX)
        self.meta = self.path.with_name(self.path.name + META_SUFFIX)
        self.key, self.total = key, total
        self.done = 0
        self._file: Any = None
        self._end = 0  # byte offset after the last complete record
        self.stream = is_stream(self.path)  # /dev/null, /dev/stdout, a FIFO: written straight
        if self.stream:
            self._lock: Any = contextlib.nullcontext()
            return
        self._lock = output_lock(self.path, "writer").__enter__()  # released by close/exit
        try:
            if resume and is_own_file(self.partial) and is_own_file(self.meta):
                self.done = self._recover()
            else:
                self._start()
        except BaseException:
            self._lock.__exit__()
            raise

    def _start(self) -> None:
        write_durable(self.meta, json.dumps({"key": self.key, "total": self.total}) + "\n")
        write_durable(self.partial, b"")
        fsync_dir(self.partial.parent)

    def _recover(self) -> int:
        """Records complete in the partial file of an earlier run with the same key."""
        try:
            meta = json.loads(self.meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        if meta.get("key") != self.key or meta.get("total") != self.total:
            raise ValueError(
                f"{self.partial} holds results of another run (other inputs or settings); "
                "delete it or choose another output file"
            )
        data = self.partial.read_bytes()
        end, n = 0, 0
        while True:
            nl = data.find(b"\n", end)
            if nl < 0:
                break
            try:
                json.loads(data[end:nl])
            except ValueError:
                break
            end, n = nl + 1, n + 1
        if end < len(data):
            with open(self.partial, "r+b") as f:  # drop a cut-off last record
                f.truncate(end)
                os.fsync(f.fileno())
        self._end = end
        return n

    def __enter__(self) -> ResumableJsonlWriter:
        return self

    def _open(self) -> Any:
        if self._file is None:
            fd = open_stream(self.path) if self.stream else \
                os.open(self.partial, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
            self._file = os.fdopen(fd, "ab")
        return self._file

    def write_many(self, records: Iterable[dict], each: bool = True) -> None:
        """Append records (in order), each made durable before the next one.

        With ``each=False`` they are written in one piece and made durable together (one
        write and one fsync for the lot: for a caller that writes many rows at once and
        would redo them all). Either way a crash or a full disk leaves the file ending on
        a complete record, and only records made durable are counted.
        """
        if not each:
            self._write_lines([self._line(rec) for rec in records], "records written")
            return
        for rec in records:
            self._write_lines([self._line(rec)], "record written")

    @staticmethod
    def _line(rec: dict) -> bytes:
        """One record's line: always valid JSON (a NaN or infinite number is ``null``)."""
        from .json_io import dumps

        return (dumps(rec, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")

    def _write_lines(self, lines: list[bytes], point: str) -> None:
        data = b"".join(lines)
        f = self._open()
        try:
            f.write(data)
            f.flush()
            if not self.stream:
                os.fsync(f.fileno())
        except OSError as err:
            if self.stream:
                raise write_error(self.path, err) from err
            self._cut_back(err)
        self._end += len(data)
        self.done += len(lines)
        io_utils.fault_point(point)

    def _cut_back(self, err: OSError) -> None:
        """After a failed write: end the file on its last complete record, then raise."""
        with contextlib.suppress(OSError):
            self._file.close()
        self._file = None
        try:
            with open(self.partial, "r+b") as f:
                f.truncate(self._end)
        except OSError:
            pass
        raise WriteError(
            f"cannot write {self.partial}: {_disk_hint(self.partial, err)}; "
            f"{self.done} of {self.total} records are saved there; rerun the same command "
            "to continue"
        ) from err

    def close(self) -> Path | None:
        """Publish the output as ``path`` when every record is written; return it (else None)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.done < self.total:
            self._lock.__exit__()
            return None
        if self.stream:
            return self.path
        replace(self.partial, self.path)
        self.meta.unlink(missing_ok=True)
        self._lock.__exit__()
        return self.path

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        elif self._file is not None:
            self._file.close()
            self._file = None
        self._lock.__exit__()


def read_complete_jsonl(path: str | Path) -> list[dict]:
    """The records of a finished output, or those complete in its ``.partial`` file."""
    path = Path(path)
    return list(iter_complete_jsonl(path if path.exists()
                                    else path.with_name(path.name + PARTIAL_SUFFIX)))


def iter_complete_jsonl(file: str | Path) -> Iterator[dict]:
    """The records of the JSONL ``file`` up to the first incomplete one, a line at a time."""
    with open(file, "rb") as f:
        for line in f:
            line = line.removesuffix(b"\n")
            if not line:
                continue
            try:
                yield json.loads(line)
            except ValueError:
                return

