"""Other runs' disk caches as donors (``train --cache-from``): rows found by their key, checked.

Every cache folder under the donor root is read-only here. Before one is used its
``meta.json`` is checked field by field, it must have been made by the same model (content,
dtype, autocast, tokenizer: :func:`~.cache_guard.model_record`), hidden size, storage dtype
and dominant rule (others are skipped, with a notice), and every file it needs must have the
size its meta implies (else a one-line error names the file). A copied example's rows must
match their checksum (``sums.bin``); rows that do not are computed instead, with a notice.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from .cache_guard import (
    _KEY,
    _RAW,
    MARKER,
    _read_meta,
    donor_mismatch,
    meta_problem,
    rows_digest,
    size_problem,
)

logger = logging.getLogger(__name__)


def _is_cache(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (MARKER, "filled.u8", "keys.bin"))


class Donors:
    """Read-only view of other runs' caches: an example's rows by its key."""

    def __init__(self, root: Path, meta: dict, skip: Path | None = None) -> None:
        """
        Args:
            root: the ``--cache-from`` folder (every cache below it is searched).
            meta: the meta of the cache the rows are for.
            skip: the run's own cache folder (``--cache-dir``): no cache at or below it is
                a donor (they serve their own run, and may be rebuilt by it).

        Raises:
            ValueError: one line naming the folder or file: no cache there, none that
                matches, or a cache whose meta.json or files are damaged.
        """
        self.root = root
        own = skip.resolve() if skip is not None else None
        dirs = [p.parent for p in sorted(root.rglob("meta.json")) if _is_cache(p.parent)
                and (own is None or not (p.parent.resolve() == own or own in p.parent.resolve().parents))]
        if not dirs:
            raise ValueError(f"--cache-from {root}: no hidden-state cache there")
        self.parts: list[dict] = []
        self.index: dict[bytes, tuple[int, int]] = {}
        self._told = False
        skipped = []
        for d in dirs:
            other = _read_meta(d / "meta.json")
            problem = meta_problem(other, d / "meta.json")
            if problem is not None:
                raise ValueError(f"--cache-from {root}: {problem}; the cache is damaged "
                                 "(delete it or pass another --cache-from)")
            why = donor_mismatch(other, meta)
            if why is not None:
                skipped.append(f"{d.relative_to(root) if d != root else d.name} ({why})")
                continue
            part, filled, keys = _open_part(root, d, other)
            for j in np.flatnonzero(filled):
                self.index.setdefault(keys[j].tobytes(), (len(self.parts), int(j)))
            self.parts.append(part)
        if not self.parts:
            raise ValueError(
                f"--cache-from {root}: no cache there matches this run (same model, hidden "
                f"size, --disk-cache-dtype and dominant rule, made by this version); skipped: "
                f"{', '.join(skipped)}")
        if skipped:
            logger.warning("--cache-from %s: skipped %s", root, ", ".join(skipped))
        self.index.pop(bytes(_KEY), None)  # an all-zero key is an unwritten row

    def __len__(self) -> int:
        return len(self.index)

    def rows(self, key: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """Raw hidden bits, targets and dominant ids of the example with ``key`` (None when
        no donor has it, or its rows do not match their checksum)."""
        hit = self.index.get(key)
        if hit is None:
            return None
        p, j = self.parts[hit[0]], hit[1]
        rows = _read_rows(p, j)
        if rows is None or rows_digest(*rows) != p["sums"][j].tobytes():
            if not self._told:
                self._told = True
                logger.warning("--cache-from %s: example %d of %s does not match its checksum in "
                               "sums.bin (a damaged file); such examples run through the frozen "
                               "model instead", self.root, j, p["dir"])
            return None
        return rows

    def hidden(self, key: bytes) -> np.ndarray | None:
        """(positions, d) float32 hidden states of the example with ``key`` (None as :meth:`rows`)."""
        rows = self.rows(key)
        if rows is None:
            return None
        raw = torch.from_numpy(np.ascontiguousarray(rows[0]))
        dtype = self.parts[self.index[key][0]]["dtype"]
        return (raw if dtype == torch.float32 else raw.view(dtype)).float().numpy()


def read_cache(folder: str | Path) -> Donors:
    """One cache folder (``train --cache-dir``'s ``train/`` or ``validation/``, or a folder
    above them), read-only, by its own ``meta.json``: :meth:`Donors.hidden` gives an
    example's hidden states by its key (:func:`~.cache.example_key`), checksum-checked.

    Raises:
        ValueError: no cache there, or a damaged one (one line naming the folder or file).
    """
    folder = Path(folder)
    metas = sorted(folder.rglob("meta.json"))
    meta = _read_meta(metas[0]) if metas else None
    if not isinstance(meta, dict):
        raise ValueError(f"{folder}: no hidden-state cache there (no readable meta.json)")
    return Donors(folder, meta)


def _open_part(root: Path, d: Path, meta: dict) -> tuple[dict, np.ndarray, np.ndarray]:
    """A donor folder's index arrays, once every file has its size; (part, filled, keys)."""
    n, shard, dim = meta["n_examples"], meta["shard_examples"], meta["hidden"]
    raw = _RAW[getattr(torch, meta["dtype"].removeprefix("torch."))]
    rows = max(n, 1)
    for name, size in (("offsets.i64", (n + 1) * 8), ("filled.u8", rows), ("keys.bin", rows * _KEY),
                       ("sums.bin", rows * _KEY), ("dominant.idx", rows * 16)):
        _refuse(root, size_problem(d / name, size))
    offsets = np.fromfile(d / "offsets.i64", np.int64)
    if offsets[0] != 0 or offsets[-1] != meta["n_positions"] or (np.diff(offsets) < 0).any():
        _refuse(root, f"{d / 'offsets.i64'} does not hold the row offsets of {n} examples")
    filled = np.fromfile(d / "filled.u8", np.uint8)[:n]
    part = {"dir": d, "shard": shard, "dim": dim, "raw": raw, "offsets": offsets,
            "dom_index": np.fromfile(d / "dominant.idx", np.int64).reshape(-1, 2),
            "sums": np.fromfile(d / "sums.bin", np.uint8).reshape(-1, _KEY),
            "dominant": meta["dominant"] != "None",
            "dtype": getattr(torch, meta["dtype"].removeprefix("torch."))}
    for k in np.unique(np.flatnonzero(filled) // shard):
        lo, hi = int(offsets[k * shard]), int(offsets[min((k + 1) * shard, n)])
        _refuse(root, size_problem(d / f"hidden-{k}.bin", max(hi - lo, 1) * dim * np.dtype(raw).itemsize))
        _refuse(root, size_problem(d / f"targets-{k}.bin", max(hi - lo, 1) * 4))
    return part, filled, np.fromfile(d / "keys.bin", np.uint8).reshape(-1, _KEY)


def _refuse(root: Path, problem: str | None) -> None:
    if problem is not None:
        raise ValueError(f"--cache-from {root}: {problem}; the cache is damaged "
                         "(delete it or pass another --cache-from)")


def _read_rows(p: dict, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Example ``j`` of donor part ``p``: raw hidden bits, targets, dominant ids (None when a
    file is shorter than its index says)."""
    k = j // p["shard"]
    first = int(p["offsets"][k * p["shard"]])
    lo, n = int(p["offsets"][j]) - first, int(p["offsets"][j + 1] - p["offsets"][j])
    d, dim, raw = p["dir"], p["dim"], p["raw"]
    hidden = np.fromfile(d / f"hidden-{k}.bin", raw, count=n * dim,
                         offset=lo * dim * np.dtype(raw).itemsize)
    targets = np.fromfile(d / f"targets-{k}.bin", np.int32, count=n, offset=lo * 4)
    if hidden.size != n * dim or targets.size != n:
        return None
    dom = None
    if p["dominant"]:
        start, w = (int(x) for x in p["dom_index"][j])
        path = d / f"dominant-{k}.bin"
        if start < 0 or w < 1 or not path.is_file():
            return None
        dom = np.fromfile(path, np.int32, count=n * w, offset=start * 4)
        if dom.size != n * w:
            return None
        dom = dom.reshape(n, w)
    return hidden.reshape(n, dim), targets, dom
