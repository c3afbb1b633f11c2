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
- ``filled.u8``: one byte per example, set (and flushed) only after its rows are.

- ``keys.bin``: 16 bytes per example, a hash of its token ids (input and labels), written
  with its rows; ``offsets.i64``: the row offsets of the examples.

A rerun on the same data and backbone (same ``meta.json``) reuses every example already
filled; an interrupted fill leaves its example unmarked, and the appended dominant file
is cut back to the last marked example. Different settings wipe the directory.

Another run's cache over the same model (``donors``, ``train --cache-from``) gives its
rows to every example with the same token ids: a new seed, a new validation split or a
subset of the same data then copies hidden states instead of running the frozen model.
Only the pages of the rows in use are resident: the kernel's page cache, not the
process, holds the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import torch

from ..data.batching import Collator
from ..data.datasets_io import examples_at
from ..lm.backbone import Backbone, Positions
from ..lm.dominant import DominantConfig
from .cache import CachedExample, assemble, backbone_positions, trim_dominant

_RAW = {torch.float32: np.float32, torch.bfloat16: np.int16, torch.float16: np.int16}
_KEY = 16  # bytes of an example's content key


def example_key(example: dict) -> bytes:
    """A 16-byte hash of what fixes an example's cached rows: its input and label ids."""
    h = hashlib.blake2b(digest_size=_KEY)
    for name in ("input_ids", "labels", "decoder_input_ids"):
        if name in example and example[name] is not None:
            h.update(name.encode())
            h.update(np.asarray(example[name], dtype=np.int64).tobytes())
    return h.digest()


def _model_of(fingerprint: str) -> object:
    try:
        return json.loads(fingerprint).get("model")
    except (ValueError, AttributeError):
        return None


def _read_meta(path: Path) -> object:
    """A cache's meta.json (None when unreadable, nested too deep included: rebuilt)."""
    from ..safe.json_io import read_json

    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


class DiskPositionCache:
    """Per-example hidden states, targets and dominant ids in memory-mapped shard files."""

    def __init__(self, backbone: Backbone, collate: Collator, dominant: DominantConfig | None,
                 directory: str | Path, n_positions: np.ndarray | list[int],
                 storage_dtype: torch.dtype = torch.bfloat16, shard_examples: int = 65536,
                 fingerprint: str = "", examples: object = None,
                 donors: str | Path | None = None) -> None:
        """
        Args:
            backbone: the frozen model.
            collate: batch collator.
            dominant: dominant-token rule, or None when no sampler needs dominant sets.
            directory: where the shards live (created; reused when ``meta.json`` matches).
            n_positions: trained positions of every example, in example order.
            storage_dtype: float32, bfloat16 or float16.
            shard_examples: examples per shard.
            fingerprint: anything else that must match for the files to be reused (the
                backbone's name, the data file, ...).
            examples: the examples (only read to write the keys of a cache made before
                keys were kept).
            donors: another run's cache directory (its ``train``/``validation``/``rankN``
                folders are searched): examples found there by their token ids are copied.
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
        meta = {"version": 1, "n_examples": self.n, "n_positions": int(self.offsets[-1]),
                "hidden": self.d, "dtype": str(storage_dtype), "shard_examples": shard_examples,
                "dominant": repr(dominant), "fingerprint": fingerprint,
                "positions_sha1": hashlib.sha1(n_positions.tobytes()).hexdigest()}
        meta_path = self.dir / "meta.json"
        reuse = meta_path.is_file() and _read_meta(meta_path) == meta
        if not reuse and self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        mode = "r+" if reuse else "w+"
        self.filled = np.memmap(self.dir / "filled.u8", np.uint8, mode, shape=(max(self.n, 1),))
        self.dom_index = np.memmap(self.dir / "dominant.idx", np.int64, mode,
                                   shape=(max(self.n, 1), 2))
        self._shards: dict[int, tuple[np.memmap, np.memmap]] = {}
        keys_path = self.dir / "keys.bin"
        old_keys = reuse and not keys_path.is_file()
        self.keys = np.memmap(keys_path, np.uint8, "r+" if reuse and not old_keys else "w+",
                              shape=(max(self.n, 1), _KEY))
        self.offsets.tofile(self.dir / "offsets.i64")
        if reuse:
            self._cut_dominant_files()
            if old_keys and examples is not None:  # a cache made before keys were kept
                done = np.flatnonzero(np.asarray(self.filled[: self.n]))
                for lo in range(0, len(done), 4096):
                    part = [int(i) for i in done[lo : lo + 4096]]
                    for i, e in zip(part, examples_at(examples, part), strict=True):
                        self.keys[i] = np.frombuffer(example_key(e), np.uint8)
                self.keys.flush()
        else:
            meta_path.write_text(json.dumps(meta))
        self.reused = 0
        """Examples copied from the donors."""
        self._donors = _Donors(Path(donors), meta) if donors else None

    # ------------------------------------------------------------------ files

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
            os.truncate(path, end * 4)

    def nbytes(self) -> int:
        """Bytes the cache files take on disk."""
        return sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file())

    # ------------------------------------------------------------- the contract

    @torch.no_grad()
    def fill(self, indices: list[int], examples, autocast: object) -> None:
        """Run the backbone on the examples of ``indices`` that are not cached yet."""
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
            pos, dom = backbone_positions(self.backbone, self.collate, self.dominant,
                                          [found[r] for r in run], autocast)
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
        for k in touched:
            for m in self._shards[k]:
                m.flush()
        self.dom_index.flush()
        self.keys.flush()
        self.filled[todo] = 1
        self.filled.flush()

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
            with open(self._dom_path(k), "ab") as f:
                start = f.tell() // 4
                f.write(np.ascontiguousarray(dom, np.int32).tobytes())
            self.dom_index[i] = (start, dom.shape[1])
        self.keys[i] = np.frombuffer(key, np.uint8)
        touched.add(k)

    def _example(self, i: int) -> CachedExample:
        k = i // self.shard_examples
        h_map, t_map = self._shard(k)
        lo = int(self.offsets[i] - self._shard_rows(k)[0])
        n = int(self.offsets[i + 1] - self.offsets[i])
        hidden = torch.from_numpy(np.array(h_map[lo : lo + n]))
        if self.storage_dtype != torch.float32:
            hidden = hidden.view(self.storage_dtype)
        targets = torch.from_numpy(np.array(t_map[lo : lo + n])).long()
        dom = None
        if self.dominant is not None:
            start, width = (int(x) for x in self.dom_index[i])
            ids = np.fromfile(self._dom_path(k), np.int32, count=n * width, offset=start * 4)
            dom = torch.from_numpy(ids.reshape(n, width)).long()
        return CachedExample(hidden, targets, dom)

    def positions(self, indices: list[int]) -> tuple[Positions, torch.Tensor | None]:
        """The cached positions of a micro-batch (as :meth:`PositionCache.positions`)."""
        return assemble(self.backbone, [self._example(i) for i in indices],
                        self.dominant is not None)


class _Donors:
    """Read-only view of another run's caches: an example's rows by its key."""

    def __init__(self, root: Path, meta: dict) -> None:
        dirs = [p.parent for p in sorted(root.rglob("meta.json"))]
        if not dirs:
            raise ValueError(f"--cache-from {root}: no hidden-state cache there")
        same = ("hidden", "dtype", "dominant")
        self.parts, self.index = [], {}
        skipped = []
        for d in dirs:
            other = _read_meta(d / "meta.json")
            ok = (isinstance(other, dict) and all(other.get(k) == meta[k] for k in same)
                  and _model_of(str(other.get("fingerprint", ""))) == _model_of(meta["fingerprint"])
                  and (d / "keys.bin").is_file() and (d / "offsets.i64").is_file())
            if not ok:
                skipped.append(d.name)
                continue
            n = int(other["n_examples"])
            part = {"dir": d, "n": n, "shard": int(other["shard_examples"]), "dim": int(other["hidden"]),
                    "offsets": np.fromfile(d / "offsets.i64", np.int64),
                    "dom_index": np.fromfile(d / "dominant.idx", np.int64).reshape(-1, 2),
                    "raw": _RAW[getattr(torch, str(other["dtype"]).removeprefix("torch."))]}
            filled = np.fromfile(d / "filled.u8", np.uint8)[:n]
            keys = np.fromfile(d / "keys.bin", np.uint8).reshape(-1, _KEY)
            for j in np.flatnonzero(filled):
                self.index.setdefault(keys[j].tobytes(), (len(self.parts), int(j)))
            self.parts.append(part)
        if not self.parts:
            raise ValueError(
                f"--cache-from {root}: no cache there matches this run (same model, hidden "
                f"size, --disk-cache-dtype and dominant rule, made by this version); skipped: "
                f"{', '.join(skipped)}")
        self.index.pop(bytes(_KEY), None)  # an all-zero key is an unwritten row

    def __len__(self) -> int:
        return len(self.index)

    def rows(self, key: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """Raw hidden bits, targets and dominant ids of the example with ``key`` (or None)."""
        hit = self.index.get(key)
        if hit is None:
            return None
        p, j = self.parts[hit[0]], hit[1]
        k = j // p["shard"]
        first = int(p["offsets"][k * p["shard"]])
        lo, n = int(p["offsets"][j]) - first, int(p["offsets"][j + 1] - p["offsets"][j])
        d, dim, raw = p["dir"], p["dim"], p["raw"]
        hidden = np.fromfile(d / f"hidden-{k}.bin", raw, count=n * dim,
                             offset=lo * dim * np.dtype(raw).itemsize).reshape(n, dim)
        targets = np.fromfile(d / f"targets-{k}.bin", np.int32, count=n, offset=lo * 4)
        dom = None
        if (d / f"dominant-{k}.bin").is_file():
            start, w = (int(x) for x in p["dom_index"][j])
            dom = np.fromfile(d / f"dominant-{k}.bin", np.int32, count=n * w,
                              offset=start * 4).reshape(n, w)
        return hidden, targets, dom
