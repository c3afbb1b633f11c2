"""Disk-backed hidden-state cache: memory-mapped shards, bfloat16 by default, resumable.

The same contract as :class:`~sigmoid_head.training.cache.PositionCache` (``fill`` then
``positions``), for data whose hidden states do not fit in RAM. The number of trained
positions of every example is known before the backbone runs, so every example owns a
fixed row range of a preallocated memory-mapped file; examples are grouped into shards
of ``shard_examples`` examples, one set of files per shard:

- ``hidden-K.bin``: (positions, d) hidden states in the storage dtype (2-byte dtypes
  are stored as their raw bits, as numpy has no bfloat16);
- ``targets-K.bin``: (positions,) int32 target ids;
- ``dominant-K.bin``: appended, per example an (n, width) int32 block of dominant ids,
  trimmed to that example's widest set; its (offset, width) is in ``dominant.idx``;
- ``filled.u8``: one byte per example, set (and flushed) only after its rows are;
- ``keys.bin``: 16 bytes per example, a hash of its token ids (input and labels), and
  ``sums.bin``: 16 bytes per example, a checksum of its rows, both written with its rows;
  ``offsets.i64``: the row offsets of the examples;
- ``meta.json``: what made the cache (the model's content, dtype, autocast and tokenizer:
  :func:`~.cache_guard.model_record`; the data and prompt settings; the storage dtype);
- ``.sigmoid-head-cache``: the marker of a folder the cache made (:mod:`.cache_guard`).

A rerun with the same ``meta.json`` reuses every example already filled, once its files
have the sizes the meta implies and, at its first use in the run, its key equals the
training example's and its rows their checksum; anything else is recomputed, with a
notice saying why. An interrupted fill leaves its example unmarked, and the appended
dominant file is cut back to the last marked example. Different settings rebuild the
cache (a notice says which differ), deleting only the files a cache writes; a folder that
is not a cache is refused, never deleted.

Another run's cache over the same model (``donors``, ``train --cache-from``,
:mod:`.cache_donors`) gives its rows to every example with the same token ids: a new
seed, a new validation split or a subset of the same data then copies hidden states
instead of running the frozen model. Only the pages of the rows in use are resident: the
kernel's page cache, not the process, holds the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.batching import Collator
from ..data.datasets_io import examples_at
from ..lm.backbone import DTYPES, Backbone, Positions
from ..lm.dominant import DominantConfig
from .cache import CachedExample, assemble, backbone_positions, example_key, trim_dominant
from .cache_guard import (
    _KEY,
    _RAW,
    VERSION,
    _read_meta,
    cache_files,
    claim_directory,
    clear_cache_files,
    model_record,
    rows_digest,
    size_problem,
    why_rebuilt,
)

logger = logging.getLogger(__name__)
__all__ = ["DiskPositionCache", "example_key", "rows_digest"]


class DiskPositionCache:
    """Per-example hidden states, targets and dominant ids in memory-mapped shard files."""

    def __init__(self, backbone: Backbone, collate: Collator, dominant: DominantConfig | None,
                 directory: str | Path, n_positions: np.ndarray | list[int],
                 storage_dtype: torch.dtype = torch.bfloat16, shard_examples: int = 65536,
                 fingerprint: str = "", donors: str | Path | None = None,
                 made_by: dict | None = None, own_root: str | Path | None = None) -> None:
        """
        Args:
            backbone: the frozen model.
            collate: batch collator.
            dominant: dominant-token rule, or None when no sampler needs dominant sets.
            directory: where the shards live (created, or reused when it is a cache whose
                ``meta.json`` matches; refused when it exists and is not a cache).
            n_positions: trained positions of every example, in example order.
            storage_dtype: float32, bfloat16 or float16.
            shard_examples: examples per shard.
            fingerprint: the settings that must match for the files to be reused (the data
                and prompt settings, the seed, ...).
            donors: another run's cache directory (its ``train``/``validation``/``rankN``
                folders are searched): examples found there by their token ids are copied.
            made_by: :func:`~.cache_guard.model_record` of the backbone (default: computed
                here, with no autocast).
            own_root: the run's ``--cache-dir``, whose caches are never donors (default:
                the folder that holds ``directory``).
        """
        if storage_dtype not in _RAW:
            raise ValueError(f"unsupported cache dtype {storage_dtype}")
        self.backbone, self.collate, self.dominant = backbone, collate, dominant
        self.storage_dtype, self.dir = storage_dtype, Path(directory)
        n_positions = np.asarray(n_positions, dtype=np.int64)
        self.n = len(n_positions)
        self.offsets = np.concatenate([[0], np.cumsum(n_positions)]).astype(np.int64)
        self.shard_examples = shard_examples
        self.d = int(backbone.output_weight().shape[1])
        self.meta = {"version": VERSION, "n_examples": self.n, "n_positions": int(self.offsets[-1]),
                     "hidden": self.d, "dtype": str(storage_dtype), "shard_examples": shard_examples,
                     "dominant": repr(dominant), "fingerprint": fingerprint,
                     "model": made_by if made_by is not None else model_record(backbone),
                     "positions_sha1": hashlib.sha1(n_positions.tobytes()).hexdigest()}
        reuse = self._open_folder()
        mode, rows = ("r+" if reuse else "w+"), max(self.n, 1)
        self.filled = np.memmap(self.dir / "filled.u8", np.uint8, mode, shape=(rows,))
        self.dom_index = np.memmap(self.dir / "dominant.idx", np.int64, mode, shape=(rows, 2))
        self.keys = np.memmap(self.dir / "keys.bin", np.uint8, mode, shape=(rows, _KEY))
        self.sums = np.memmap(self.dir / "sums.bin", np.uint8, mode, shape=(rows, _KEY))
        self._shards: dict[int, tuple[np.memmap, np.memmap]] = {}
        self.offsets.tofile(self.dir / "offsets.i64")
        if reuse:
            self._check_shards()
            self._cut_dominant_files()
        else:
            (self.dir / "meta.json").write_text(json.dumps(self.meta))
        self.checked = np.zeros(self.n, dtype=bool)
        """Examples whose key and checksum were checked (or that were written) in this run."""
        self._told: set[str] = set()
        self.reused = 0
        """Examples copied from the donors."""
        self._donors = None
        if donors:
            from .cache_donors import Donors

            self._donors = Donors(Path(donors), self.meta, Path(own_root or self.dir.parent))

    # ------------------------------------------------------------------ files

    def _open_folder(self) -> bool:
        """Claim the folder; whether its files may be reused (else they are deleted, with a
        notice saying why when there were any)."""
        claim_directory(self.dir)
        old = _read_meta(self.dir / "meta.json")
        if old == self.meta:
            rows = max(self.n, 1)
            why = next((p for p in (size_problem(self.dir / name, rows * width) for name, width in
                                    (("filled.u8", 1), ("dominant.idx", 16), ("keys.bin", _KEY),
                                     ("sums.bin", _KEY))) if p), None)
            if why is None:
                return True
        elif not cache_files(self.dir):
            return False
        else:
            why = why_rebuilt(old, self.meta)
        logger.warning("hidden-state cache %s is rebuilt: %s", self.dir, why)
        clear_cache_files(self.dir)
        return False

    def _tell(self, reason: str, message: str) -> None:
        """A one-line notice, once per reason and cache."""
        if reason not in self._told:
            self._told.add(reason)
            logger.warning("hidden-state cache %s: %s", self.dir, message)

    def _check_shards(self) -> None:
        """Unmark the filled examples whose shard files are missing or of the wrong size, or
        whose dominant ids lie past the end of their file (their shard files are made anew)."""
        size = np.dtype(_RAW[self.storage_dtype]).itemsize
        for k in range((self.n + self.shard_examples - 1) // self.shard_examples):
            sl = slice(k * self.shard_examples, min((k + 1) * self.shard_examples, self.n))
            done = np.flatnonzero(self.filled[sl]) + sl.start
            if not len(done):
                continue
            lo, hi = self._shard_rows(k)
            rows = max(hi - lo, 1)
            why = (size_problem(self.dir / f"hidden-{k}.bin", rows * self.d * size)
                   or size_problem(self.dir / f"targets-{k}.bin", rows * 4))
            if why is None and self.dominant is not None:
                bad = done[~self._dominant_in_file(k, done)]
                if len(bad):
                    self.filled[bad] = 0
                    logger.warning("hidden-state cache %s: %s is shorter than dominant.idx says; "
                                   "%d cached examples are recomputed", self.dir,
                                   self._dom_path(k).name, len(bad))
                continue
            if why is not None:
                self.filled[done] = 0
                for name in ("hidden", "targets", "dominant"):
                    (self.dir / f"{name}-{k}.bin").unlink(missing_ok=True)
                logger.warning("hidden-state cache %s: %s; its %d cached examples are recomputed",
                               self.dir, why, len(done))
        self.filled.flush()

    def _dominant_in_file(self, k: int, done: np.ndarray) -> np.ndarray:
        """Which of the filled examples ``done`` of shard ``k`` have their dominant ids in
        ``dominant-K.bin``."""
        path = self._dom_path(k)
        have = path.stat().st_size // 4 if path.is_file() else 0
        idx = np.asarray(self.dom_index[done])
        n_pos = self.offsets[done + 1] - self.offsets[done]
        return (idx[:, 0] >= 0) & (idx[:, 1] >= 1) & (idx[:, 0] + n_pos * idx[:, 1] <= have)

    def _shard(self, k: int) -> tuple[np.memmap, np.memmap]:
        if k not in self._shards:
            lo, hi = self._shard_rows(k)
            rows = max(hi - lo, 1)
            files = []
            for name, dtype, shape in (("hidden", _RAW[self.storage_dtype], (rows, self.d)),
                                       ("targets", np.int32, (rows,))):
                path = self.dir / f"{name}-{k}.bin"
                files.append(np.memmap(path, dtype, "r+" if path.exists() else "w+", shape=shape))
            self._shards[k] = (files[0], files[1])
        return self._shards[k]

    def _shard_rows(self, k: int) -> tuple[int, int]:
        first, last = k * self.shard_examples, min((k + 1) * self.shard_examples, self.n)
        return int(self.offsets[first]), int(self.offsets[last])

    def _dom_path(self, k: int) -> Path:
        return self.dir / f"dominant-{k}.bin"

    def _cut_dominant_files(self) -> None:
        """Drop dominant ids appended after the last example marked filled (an interrupted fill)."""
        for k in range((self.n + self.shard_examples - 1) // self.shard_examples):
            path = self._dom_path(k)
            if not path.exists():
                continue
            sl = slice(k * self.shard_examples, min((k + 1) * self.shard_examples, self.n))
            done = self.filled[sl].astype(bool)
            n_pos = np.diff(self.offsets[sl.start : sl.stop + 1])[done]
            idx = np.asarray(self.dom_index[sl])[done]
            end = int((idx[:, 0] + n_pos * idx[:, 1]).max()) if len(idx) else 0
            if end * 4 < path.stat().st_size:  # never longer: that would add zeros
                os.truncate(path, end * 4)

    def nbytes(self) -> int:
        """Bytes the cache files take on disk."""
        return sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file())

    # ------------------------------------------------------------- the contract

    @torch.no_grad()
    def fill(self, indices: list[int], examples, autocast: object) -> None:
        """Run the backbone on the examples of ``indices`` that are not cached yet (or whose
        cached rows, checked at their first use in this run, are not theirs)."""
        self._check_rows(indices, examples)
        todo = [i for i in indices if not self.filled[i]]
        if not todo:
            return
        found = examples_at(examples, todo)
        keys = [example_key(e) for e in found]
        touched: set[int] = set()
        run = list(range(len(todo)))
        if self._donors is not None:
            run = []
            for r, (i, key) in enumerate(zip(todo, keys, strict=True)):
                rows = self._donors.rows(key)
                if rows is None:
                    run.append(r)
                    continue
                self._write(i, key, *rows, touched)
                self.reused += 1
        if run:
            self._run_backbone(todo, keys, [found[r] for r in run], run, autocast, touched)
        for k in touched:
            for m in self._shards[k]:
                m.flush()
        for m in (self.dom_index, self.keys, self.sums):
            m.flush()
        self.filled[todo] = 1
        self.filled.flush()
        self.checked[todo] = True

    def _run_backbone(self, todo: list[int], keys: list[bytes], chosen: list[dict],
                      run: list[int], autocast: object, touched: set[int]) -> None:
        """Rows of the examples ``todo[r]`` for ``r`` in ``run`` from one backbone pass."""
        pos, dom = backbone_positions(self.backbone, self.collate, self.dominant, chosen, autocast)
        # one copy to the host per tensor, then slices there (not one device sync per example)
        all_hidden, targets = pos.hidden.to("cpu", self.storage_dtype), pos.targets.cpu()
        row, dom = pos.row.cpu(), None if dom is None else dom.cpu()
        for b, r in enumerate(run):
            sel = row == b
            hidden = all_hidden[sel]
            raw = hidden if self.storage_dtype == torch.float32 else hidden.view(torch.int16)
            ids = None if dom is None else trim_dominant(dom[sel]).numpy().astype(np.int32)
            self._write(todo[r], keys[r], raw.numpy(), targets[sel].numpy().astype(np.int32),
                        ids, touched)

    def _check_rows(self, indices: list[int], examples) -> None:
        """At an example's first use in this run: unmark it when its stored key is not its
        token ids' or its rows do not match their checksum (it is recomputed)."""
        new = [i for i in indices if self.filled[i] and not self.checked[i]]
        if not new:
            return
        for i, e in zip(new, examples_at(examples, new), strict=True):
            self.checked[i] = True
            if self.keys[i].tobytes() != example_key(e):
                self.filled[i] = 0
                self._tell("key", f"example {i}'s cached rows were made from another text (its key "
                                  "in keys.bin differs); recomputing it and every other such example")
            elif self._stored_digest(i) != self.sums[i].tobytes():
                self.filled[i] = 0
                self._tell("sum", f"example {i}'s cached rows differ from their checksum in sums.bin "
                                  "(a damaged file); recomputing it and every other such example")

    def _write(self, i: int, key: bytes, raw: np.ndarray, targets: np.ndarray,
               dom: np.ndarray | None, touched: set[int]) -> None:
        """Example ``i``'s rows: raw hidden bits, int32 targets, trimmed dominant ids."""
        want = int(self.offsets[i + 1] - self.offsets[i])
        if raw.shape[0] != want:
            raise RuntimeError(f"example {i}: {raw.shape[0]} trained positions, "
                               f"the cache was sized for {want}")
        k = i // self.shard_examples
        h_map, t_map = self._shard(k)
        lo = int(self.offsets[i] - self._shard_rows(k)[0])
        h_map[lo : lo + want] = raw
        t_map[lo : lo + want] = targets
        if self.dominant is not None:
            if dom is None:
                raise RuntimeError(f"example {i}: no dominant ids to cache")
            dom = np.ascontiguousarray(dom, np.int32)
            with open(self._dom_path(k), "ab") as f:
                start = f.tell() // 4
                f.write(dom.tobytes())
            self.dom_index[i] = (start, dom.shape[1])
        self.keys[i] = np.frombuffer(key, np.uint8)
        self.sums[i] = np.frombuffer(rows_digest(np.asarray(raw), np.asarray(targets, np.int32),
                                                 dom if self.dominant is not None else None), np.uint8)
        touched.add(k)

    def _stored(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """Example ``i``'s stored raw hidden bits, targets and dominant ids (None when its
        dominant index points outside its file)."""
        k = i // self.shard_examples
        h_map, t_map = self._shard(k)
        lo = int(self.offsets[i] - self._shard_rows(k)[0])
        n = int(self.offsets[i + 1] - self.offsets[i])
        raw, targets, dom = np.array(h_map[lo : lo + n]), np.array(t_map[lo : lo + n]), None
        if self.dominant is not None:
            start, width = (int(x) for x in self.dom_index[i])
            if start < 0 or width < 1:
                return None
            ids = np.fromfile(self._dom_path(k), np.int32, count=n * width, offset=start * 4)
            if ids.size != n * width:
                return None
            dom = ids.reshape(n, width)
        return raw, targets, dom

    def _stored_digest(self, i: int) -> bytes | None:
        stored = self._stored(i)
        return None if stored is None else rows_digest(*stored)

    def _example(self, i: int) -> CachedExample:
        stored = self._stored(i)
        if stored is None:  # only after the files changed under a running run
            raise ValueError(f"hidden-state cache {self.dir}: example {i}'s dominant ids lie "
                             f"outside {self._dom_path(i // self.shard_examples).name}")
        raw, targets, dom = stored
        hidden = torch.from_numpy(raw)
        if self.storage_dtype != torch.float32:
            hidden = hidden.view(self.storage_dtype)
        return CachedExample(hidden, torch.from_numpy(targets).long(),
                             None if dom is None else torch.from_numpy(dom).long())

    def positions(self, indices: list[int]) -> tuple[Positions, torch.Tensor | None]:
        """The cached positions of a micro-batch (as :meth:`PositionCache.positions`)."""
        return assemble(self.backbone, [self._example(i) for i in indices],
                        self.dominant is not None)


def disk_caches(config: Any, backbone: Backbone, collate: Collator, dominant: DominantConfig | None,
                n_pos: list, autocast: object = None) -> tuple[DiskPositionCache, DiskPositionCache]:
    """The run's train and validation caches under ``config.cache_dir`` (a folder per rank
    when several processes train), each recording what made it (``autocast``: the forward
    pass's) and drawing on ``config.cache_from``.

    Args:
        config: the run's :class:`~.config.TrainConfig`.
        n_pos: the trained positions of every example, train then validation.
    """
    from accelerate import PartialState

    from .cache_guard import check_donor_root, model_record

    if config.cache_from:  # before any cache folder is opened (and maybe rebuilt)
        check_donor_root(config.cache_dir, config.cache_from)
    dtype, made_by = DTYPES[config.disk_cache_dtype], model_record(backbone, autocast)
    state = PartialState()
    root = Path(config.cache_dir) / (f"rank{state.process_index}" if state.num_processes > 1 else "")
    key = json.dumps({**vars(config.data), "num_proc": None, "data_cache_dir": None,
                      "model": config.model, "seed": config.seed}, sort_keys=True)
    train, val = (DiskPositionCache(backbone, collate, dominant, root / name, n, dtype,
                                    fingerprint=key, donors=config.cache_from, made_by=made_by,
                                    own_root=config.cache_dir)
                  for name, n in zip(("train", "validation"), n_pos, strict=True))
    return train, val
