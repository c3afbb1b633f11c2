"""Give back the resident pages of a data set's memory-mapped Arrow files (Linux).

``datasets`` keeps a data set's Arrow files memory-mapped. Every page that a read
touches stays mapped into the process, and so counts in its RSS (as RssFile), until the
mapping goes: an epoch over 1M tokenized examples maps all of their ~150 MB. Those pages
were only read, so they are clean page cache (the kernel drops them when memory is
short), but the process's RSS grows with the data set all the same.

:class:`MappedPages` gives them back with ``madvise(MADV_DONTNEED)`` on the ranges of
those mappings (found in ``/proc/self/maps``): the mapping stays, its pages leave this
process's RSS (not the page cache), and the next read faults them in again from the page
cache (or from the disk, if the kernel dropped them meanwhile). It is safe because

- only mappings without write permission are advised: their pages are the file's own
  and were never changed in this process, so what a later read sees is the same data;
- only mappings that hold buffers of the data set's own Arrow table are advised: the
  table keeps them mapped, so no range can be unmapped and reused by other memory
  between reading ``/proc/self/maps`` and the ``madvise`` call.

Where there is no ``/proc/self/maps`` or no ``madvise`` (not Linux), or the data set is
in memory, every call is a no-op that returns 0; it never raises.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

MADV_DONTNEED = 4
"""Linux's value (``<sys/mman.h>``)."""

_MADVISE: Any = None  # the libc function, False where there is none; looked up once


def _madvise() -> Any:
    global _MADVISE
    if _MADVISE is None:
        _MADVISE = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
                fn.restype = ctypes.c_int
                _MADVISE = fn
            except (OSError, AttributeError):
                logger.debug("no madvise: mapped pages are not released")
    return _MADVISE or None


def read_only_mappings(paths: Iterable[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of this process's mappings of ``paths`` that are not writable, from
    ``/proc/self/maps``; ``[]`` where that cannot be read."""
    wanted = {os.path.realpath(p) for p in paths}
    if not wanted:
        return []
    ranges = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                # start-end perms offset dev inode path (the path may hold spaces)
                fields = line.rstrip("\n").split(None, 5)
                if len(fields) == 6 and fields[5] in wanted and "w" not in fields[1]:
                    start, end = fields[0].split("-")
                    ranges.append((int(start, 16), int(end, 16)))
    except (OSError, ValueError):
        return []
    return ranges


def _buffer_addresses(table: Any) -> np.ndarray:
    """Sorted addresses of the buffers of a ``pyarrow.Table`` (empty for anything else)."""
    addresses = []
    for column in getattr(table, "columns", ()):
        for chunk in column.chunks:
            addresses += [b.address for b in chunk.buffers() if b is not None and b.size]
    return np.unique(np.asarray(addresses, dtype=np.uint64))


class MappedPages:
    """The read-only mappings of a ``datasets.Dataset``'s Arrow files, and their release.

    :meth:`release` gives back their resident pages now; :meth:`count` counts examples
    read and releases every ``every`` of them, so that random reads keep at most about
    ``every`` examples' pages resident. A read maps more than the bytes it reads: the
    kernel maps 64 KiB around a faulting page (fault-around), or a large folio of the
    page cache whole; an example (two token lists) mapped ~0.5 MiB on the machine of
    docs/performance.md, so ``every=16`` keeps ~8 MiB mapped at most.

    The ranges are read from ``/proc/self/maps`` once, at the first release (reading it
    costs milliseconds in a process with torch loaded); this object keeps the data set's
    tables, and so their mappings, alive, so the ranges stay valid.
    """

    def __init__(self, dataset: Any, every: int = 16) -> None:
        self.every, self._read, self._ranges = every, 0, None
        files = [f["filename"] for f in getattr(dataset, "cache_files", None) or ()]
        self.files = files if _madvise() is not None else []
        self._tables = [getattr(t, "table", None) for t in
                        (getattr(dataset, "data", None), getattr(dataset, "_indices", None))]
        self._anchors = np.zeros(0, dtype=np.uint64)
        if self.files:
            self._anchors = np.unique(np.concatenate(
                [_buffer_addresses(t) for t in self._tables]))

    def ranges(self) -> list[tuple[int, int]]:
        """The mappings that :meth:`release` advises: read-only, holding this table's buffers."""
        if self._ranges is None:
            self._ranges = []
            if self.files and len(self._anchors):
                for start, end in read_only_mappings(self.files):
                    k = int(np.searchsorted(self._anchors, np.uint64(start)))
                    if k < len(self._anchors) and int(self._anchors[k]) < end:
                        self._ranges.append((start, end))
        return self._ranges

    def release(self) -> int:
        """Give back the resident pages of the mappings; the bytes of the ranges advised."""
        self._read = 0
        fn = _madvise()
        if fn is None:
            return 0
        advised = 0
        for start, end in self.ranges():
            if fn(start, end - start, MADV_DONTNEED) == 0:
                advised += end - start
            else:
                logger.debug("madvise(%#x, %d) failed: %s", start, end - start,
                             os.strerror(ctypes.get_errno()))
        return advised

    def count(self, n: int = 1) -> None:
        """``n`` more examples were read; release the pages every ``every`` examples."""
        self._read += n
        if self._read >= self.every and self.files:
            self.release()
