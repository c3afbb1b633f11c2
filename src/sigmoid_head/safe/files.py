"""Writing files so that nothing is lost and nothing half-written is trusted.

* :func:`fsync_file`, :func:`fsync_dir`, :func:`write_durable` and :func:`replace`:
  write, flush to disk, rename, each step a :func:`fault_point` (tests inject a kill there).
* :class:`DirectoryLock`: one writer per directory (``sigmoid-head train`` into one
  ``--output-dir``); a second one is refused with a message naming the holder.
* :func:`check_output_path`: is a path writable as a file? Asked before any work is done.
* :func:`is_stream`: is an output path a character device, a FIFO or a descriptor link
  (``/dev/null``, ``/dev/stdout``, ``>(cmd)``)? Those are written straight, as a stream,
  never replaced; block devices and sockets are refused (:func:`stream_kind`).
* the resumable JSONL writer built on these: :mod:`sigmoid_head.safe.resumable_jsonl`.
* :class:`WriteError`: a write that failed (disk full, ...), with the path and the reason.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
from pathlib import Path

PARTIAL_SUFFIX = ".partial"
META_SUFFIX = ".partial.meta"
LOCK_NAME = ".sigmoid-head.lock"


class WriteError(OSError):
    """Writing a file failed (disk full, permissions, ...); the message names the file."""


class LockedError(ValueError):
    """Another process holds the lock of a directory."""


def fault_point(name: str) -> None:
    """A place where a crash would leave files half-written (a no-op; tests patch it to
    raise and check that every such point leaves a consistent state)."""


def _disk_hint(path: Path, err: BaseException) -> str:
    """Say why a write failed, naming free disk space when the disk is full."""
    no_space = isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)
    text = str(err)
    if no_space or "unexpected pos" in text or "No space" in text:
        try:
            free = shutil.disk_usage(next(p for p in [path, *path.parents] if p.exists())).free
            return f"the disk is full ({free / 2**20:.1f} MiB free)"
        except (OSError, StopIteration):
            return "the disk is full"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return " ".join(text.split())[:200] or type(err).__name__


def write_error(path: str | Path, err: BaseException, what: str = "cannot write") -> WriteError:
    """A one-line :class:`WriteError` for a failed write of ``path``."""
    path = Path(path)
    out = WriteError(f"{what} {path}: {_disk_hint(path, err)}")
    out.errno = getattr(err, "errno", None)  # type: ignore[misc]
    return out


def fsync_file(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | Path) -> None:
    """Make renames inside ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DESCRIPTOR_LINK = re.compile(r"^/(dev/(std(in|out|err)|fd/\d+)|proc/(self|\d+)/fd/\d+)$")
_STD_LINK = re.compile(r"^/(dev/(stdout|stderr|fd/[12])|proc/self/fd/[12])$")


def stream_kind(path: str | Path) -> str | None:
    """What ``path`` is when it is not a regular file this library may replace: ``None``
    for a regular file, a directory, nothing, or a link other than a descriptor link
    (links are replaced, never followed); ``"descriptor"`` for ``/dev/stdout``,
    ``/dev/stderr``, ``/dev/fd/N`` or ``/proc/self/fd/N`` (a link to an open descriptor,
    whatever it is: a pipe, a terminal, a socket, a file the shell redirected to) and for
    a link whose target is spelled as the standard output or error; else
    ``"character device"`` or ``"FIFO"`` (``/dev/null``, a named pipe).

    Raises:
        ValueError: ``path`` is a block device or a socket (never written).
    """
    path = Path(path)
    if path.is_symlink():
        if not os.path.exists(path):
            return None
        if _DESCRIPTOR_LINK.match(os.path.abspath(path)):  # named so by the user
            return "descriptor"
        try:  # a link of the user's own to the standard output or error
            return "descriptor" if _STD_LINK.match(os.readlink(path)) else None
        except OSError:
            return None
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        what = "a block device" if stat.S_ISBLK(mode) else "a socket"
        raise ValueError(f"cannot write {path}: it is {what}; give a regular file")
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return None


def is_stream(path: str | Path | None) -> bool:
    """Whether output ``path`` is written straight, as a stream (see :func:`stream_kind`):
    a character device, a FIFO or a descriptor link. Such an output is never replaced by a
    file of ours (no temp file, lock, partial file or rename beside it), is not resumable,
    and is what a Unix user means by ``-o /dev/null``, ``--to-json /dev/stdout`` or
    ``--to-json >(gzip > o.gz)``."""
    return bool(path) and stream_kind(path) is not None


def names_stdout(path: str | Path | None) -> bool:
    """Whether output ``path`` is this process's standard output (``/dev/stdout``,
    ``/dev/fd/1``, or any path to the same pipe, terminal or file): the command then
    prints its messages to stderr, so that stdout holds the output alone."""
    if not path or not is_stream(path):
        return False
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False


def open_stream(path: str | Path) -> int:
    """Open a stream output (see :func:`is_stream`) for writing, following its links;
    nothing is created, truncated or replaced."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as err:
        raise write_error(path, err) from err


def write_stream(path: str | Path, data: bytes | str) -> None:
    """Write ``data`` to a stream output (see :func:`is_stream`) and close it."""
    fd = open_stream(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as err:
        raise write_error(path, err) from err


def open_fresh(path: str | Path, flags: int = os.O_WRONLY) -> int:
    """Open ``path`` as a new file of ours: whatever is there (a link planted by someone
    else included) is unlinked first, then created with O_EXCL|O_NOFOLLOW, so a write
    never goes through a link to another file. Returns the file descriptor."""
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or (path.exists() and not path.is_dir()):  # a FIFO too
            path.unlink()
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)


def _is_own(st: os.stat_result) -> bool:
    """A regular file with one name: one this library may truncate or append to (a hard
    link planted in its place has two names, and writing it would change the other)."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def open_own(path: str | Path, flags: int = os.O_RDWR) -> int:
    """Open (creating it if missing) a file of ours that is kept between runs (a lock
    file): never through a symlink (O_NOFOLLOW), never a hard link or a special file
    planted there (such a file is unlinked, which leaves what it names alone, and a fresh
    one is created). Returns the file descriptor."""
    path = Path(path)
    for _ in range(3):
        with contextlib.suppress(FileNotFoundError):
            if path.is_symlink():
                path.unlink()
        try:
            fd = os.open(path, flags | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0),
                         0o644)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENXIO, errno.EEXIST):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                continue
            raise
        if _is_own(os.fstat(fd)):
            return fd
        os.close(fd)
        path.unlink()
    return open_fresh(path, flags)


def is_own_file(path: str | Path) -> bool:
    """Whether ``path`` (not followed if a link) is a regular file with one name."""
    try:
        return _is_own(os.lstat(path))
    except OSError:
        return False


def own_dir(path: str | Path) -> Path:
    """Make ``path`` a directory of ours to write into: a link (or a file) planted in its
    place is removed (what it points to is left alone), never written through; a real
    directory is kept. Returns ``path``."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_durable(path: str | Path, data: bytes | str) -> None:
    """Write ``data`` to a fresh ``path`` (see :func:`open_fresh`) and fsync it (not
    atomic by itself: see :func:`replace`)."""
    path = Path(path)
    try:
        with os.fdopen(open_fresh(path), "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        raise write_error(path, err) from err


def replace(src: str | Path, dst: str | Path) -> None:
    """Atomically rename ``src`` to ``dst`` and make the rename durable."""
    fault_point(f"replace {Path(dst).name}")
    os.replace(src, dst)
    fsync_dir(Path(dst).parent)


def write_atomic(path: str | Path, data: bytes | str, *, stream: bool = False) -> Path:
    """Write ``path`` whole or not at all: ``data`` goes to ``<path>.tmp``, made durable,
    then renamed over ``path`` (a killed run leaves the old file, never a cut-off one).

    With ``stream`` (a path the user named: ``--html``, ``self-label -o``), a stream
    output (``/dev/null``, ``/dev/stdout``, a FIFO: :func:`is_stream`) is written straight
    instead, never replaced. Without it (a file of a folder of ours: a head's extras,
    ``evaluate --out-dir``'s files) a special file planted there is replaced like a link:
    never written into, never waited on."""
    path = Path(path)
    if stream and is_stream(path):
        write_stream(path, data)
        return path
    tmp = path.with_name(path.name + ".tmp")
    write_durable(tmp, data)
    replace(tmp, path)
    return path


def check_output_path(path: str | Path) -> Path:
    """Check, before any work, that ``path`` can be written as a file (parents are created).

    Raises:
        ValueError: ``path`` is a directory, or a parent is a file.
        PermissionError: the directory is not writable.
    """
    path = Path(path)
    if is_stream(path):  # written straight (a block device or a socket is refused)
        return path
    if path.is_dir():
        raise ValueError(f"{path} is a directory; give a file name for the output")
    parent = path.parent
    for p in [parent, *parent.parents]:
        if p.exists():
            if not p.is_dir():
                raise ValueError(f"cannot write {path}: {p} is not a directory")
            break
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(path, err) from err
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {path}: directory {parent} is not writable")
    return path


class DirectoryLock:
    """An exclusive, non-blocking lock on a directory (``flock`` on a lock file in it).

    The lock dies with its process (a killed run never leaves a stale lock). Where
    ``fcntl`` is missing (Windows) the lock is a no-op.

    Raises (on enter):
        LockedError: another process holds it.
    """

    def __init__(self, directory: str | Path, what: str = "run", *,
                 name: str = LOCK_NAME, target: str | Path | None = None) -> None:
        self.directory, self.what, self.name = Path(directory), what, name
        self.target = Path(target) if target is not None else self.directory
        self._fd: int | None = None

    def __enter__(self) -> DirectoryLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = open_own(self.directory / self.name, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split(maxsplit=1)
            os.close(fd)
            pid, what = (holder + ["?", self.what])[:2] if holder else ("?", self.what)
            raise LockedError(
                f"{self.target} is in use by another {what} (pid {pid}); wait "
                "for it to finish or choose another output"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {self.what}".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None


def output_lock(path: str | Path, what: str = "run") -> DirectoryLock:
    """The lock of one output file: ``.<name>.lock`` beside it (one writer per file)."""
    path = Path(path)
    return DirectoryLock(path.parent, what, name=f".{path.name}.lock", target=path)
