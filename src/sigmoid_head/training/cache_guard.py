"""What a disk hidden-state cache checks before it trusts, reuses or deletes anything.

- **Ownership.** A cache folder holds a marker file (:data:`MARKER`) written when the cache
  made it. A folder that exists, is not empty and holds neither the marker nor only a
  cache's own files (one an older version made) is refused, never deleted; a rebuild
  removes only the files a cache writes (:func:`clear_cache_files`).
- **What made the rows.** :func:`model_record`: a hash of the frozen model's weights as
  loaded (every tensor's bytes, so the same weights in another dtype differ), its dtype,
  the autocast of its forward pass and a hash of its tokenizer. A cache whose record
  differs is rebuilt (with a notice saying why, :func:`why_rebuilt`).
- **Files of the size their meta.json implies.** :func:`size_problem` names a missing or
  wrongly sized file; :func:`meta_problem` a meta.json that lacks a field or holds one of
  the wrong type.
"""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

MARKER = ".sigmoid-head-cache"
"""The file that marks a folder as a hidden-state cache this package made."""
VERSION = 2
"""The layout of a cache folder (2: the model's content recorded, each example's rows checksummed)."""
_OWN_FILE = re.compile(
    r"(meta\.json|filled\.u8|dominant\.idx|keys\.bin|sums\.bin|offsets\.i64|"
    r"(hidden|targets|dominant)-\d+\.bin)")
_META_INTS = ("version", "n_examples", "n_positions", "hidden", "shard_examples")
_META_STRS = ("dtype", "dominant", "fingerprint")


def claim_directory(path: Path, option: str = "--cache-dir") -> None:
    """Make ``path`` a cache folder, or check that it is one.

    Raises:
        ValueError: ``path`` is a file, or a folder with other content than a cache's
            (nothing in it is touched).
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option}: {path} exists and is not a folder; nothing was changed: "
                         "pass another --cache-dir")
    path.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in path.iterdir())
    legacy = "meta.json" in names and all(_OWN_FILE.fullmatch(n) for n in names)
    if MARKER not in names and names and not legacy:
        foreign = [n for n in names if not _OWN_FILE.fullmatch(n)] or names
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ValueError(f"{option}: {path} exists and is not a hidden-state cache (it holds "
                         f"{shown}; no {MARKER} file); nothing was deleted: pass a new or "
                         "empty --cache-dir")
    (path / MARKER).write_text("a sigmoid-head hidden-state cache (train --cache-dir)\n")


def cache_files(path: Path) -> list[Path]:
    """The files a cache writes that are in ``path`` (not its marker)."""
    return [p for p in path.iterdir() if _OWN_FILE.fullmatch(p.name) and (p.is_file() or p.is_symlink())]


def clear_cache_files(path: Path) -> None:
    """Delete the files a cache writes in ``path`` (its marker and anything else stay)."""
    for p in cache_files(path):
        p.unlink()


def size_problem(path: Path, expected: int, at_least: bool = False) -> str | None:
    """Why ``path`` cannot be used (missing, or not ``expected`` bytes), or None."""
    if not path.is_file():
        return f"{path} is missing"
    size = path.stat().st_size
    if size < expected or (size != expected and not at_least):
        return f"{path} holds {size} bytes, {'at least ' if at_least else ''}{expected} expected"
    return None


def meta_problem(meta: object, path: Path) -> str | None:
    """Why a cache's ``meta.json`` (read from ``path``) is unusable, or None."""
    if not isinstance(meta, dict):
        return f"{path} is not a JSON object"
    for key in _META_INTS:
        value = meta.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"{path} lacks {key}" if key not in meta else f"{path}: {key} is not a count"
    for key in _META_STRS:
        if not isinstance(meta.get(key), str):
            return f"{path} lacks {key}" if key not in meta else f"{path}: {key} is not a string"
    if meta["shard_examples"] < 1 or meta["hidden"] < 1:
        return f"{path}: shard_examples and hidden must be at least 1"
    if meta["dtype"] not in ("torch.float32", "torch.bfloat16", "torch.float16"):
        return f"{path}: unknown dtype {meta['dtype']!r}"
    return None


_REASONS = {"version": "an older version made it",
            "model": "another model made it (weights, dtype, autocast or tokenizer differ)",
            "hidden": "another hidden size",
            "dtype": "another --disk-cache-dtype",
            "dominant": "other dominant-token settings",
            "fingerprint": "other data or prompt settings (format, template, max length, seed)"}
_SHARED = ("version", "model", "hidden", "dtype", "dominant")
"""What a donor cache (another run's, ``--cache-from``) must share with the run it serves."""


def why_rebuilt(old: object, new: dict) -> str:
    """Why an existing cache with meta ``old`` cannot serve a run with meta ``new``."""
    if not isinstance(old, dict):
        return "its meta.json is missing or unreadable"
    for key, reason in _REASONS.items():
        if old.get(key) != new.get(key):
            return reason
    return "other data (the number of examples or of their trained positions differs)"


def donor_mismatch(other: dict, meta: dict) -> str | None:
    """Why another run's cache (meta ``other``) cannot give rows to a run with meta ``meta``."""
    return next((_REASONS[k] for k in _SHARED if other.get(k) != meta.get(k)), None)


def autocast_mode(autocast: object) -> str:
    """The dtype an autocast context runs the forward pass in ("no" when off)."""
    if not getattr(autocast, "_enabled", False):
        return "no"
    return str(getattr(autocast, "fast_dtype", "unknown"))


def model_record(backbone: object, autocast: object = None) -> dict:
    """What makes a backbone's hidden states: its weights' content, dtype, the autocast of
    its forward pass and its tokenizer (hashes; one pass over the weights' bytes)."""
    return {"weights": state_digest(backbone.model), "dtype": str(backbone.dtype),
            "autocast": autocast_mode(autocast), "tokenizer": tokenizer_digest(backbone.tokenizer)}


def _tensor_digest(tensor: torch.Tensor) -> bytes:
    flat = tensor.detach().reshape(-1).to("cpu").contiguous()
    return hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()
                          if flat.numel() else b"").digest()


def state_digest(module: torch.nn.Module) -> str:
    """SHA-256 of a module's state: every tensor's name, dtype, shape and bytes (tensors
    shared under several names, such as tied embeddings, are hashed once)."""
    state = module.state_dict()
    seen: dict[tuple, str] = {}
    unique = {}
    for name, t in state.items():
        key = (t.data_ptr(), t.dtype, tuple(t.shape), t.device.type)
        if key in seen:
            continue
        seen[key] = name
        unique[name] = t
    with ThreadPoolExecutor(max_workers=4) as pool:  # hashlib gives the GIL up on large buffers
        digests = dict(zip(unique, pool.map(_tensor_digest, unique.values()), strict=True))
    h = hashlib.sha256()
    for name, t in state.items():
        source = seen[(t.data_ptr(), t.dtype, tuple(t.shape), t.device.type)]
        h.update(f"{name}={source}:{t.dtype}:{tuple(t.shape)}:".encode())
        h.update(digests[source])
    return h.hexdigest()


def tokenizer_digest(tokenizer: object) -> str:
    """SHA-256 of a tokenizer: its full definition where it has one (a fast tokenizer),
    else its vocabulary, plus its class, special tokens and chat template."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    body = backend.to_str() if backend is not None else json.dumps(
        sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1]))
    extra = json.dumps([type(tokenizer).__name__, str(getattr(tokenizer, "special_tokens_map", "")),
                        getattr(tokenizer, "chat_template", None)], default=str)
    return hashlib.sha256((body + extra).encode()).hexdigest()


def check_donor_root(cache_dir: str | Path, cache_from: str | Path) -> None:
    """Refuse a ``--cache-from`` that is the ``--cache-dir`` or lies inside it: a cache
    already reuses its own rows, and a changed setting would rebuild it before it could be
    read. (A ``--cache-dir`` inside the ``--cache-from`` folder is fine: the donors skip it.)"""
    mine, donor = Path(cache_dir).resolve(), Path(cache_from).resolve()
    if mine == donor or mine in donor.parents:
        raise ValueError(
            f"--cache-from {cache_from} is the --cache-dir {cache_dir} or lies inside it: a cache "
            "reuses its own rows already, and a changed setting would rebuild it before it is "
            "read; copy it elsewhere and pass that as --cache-from")


_RAW = {torch.float32: np.float32, torch.bfloat16: np.int16, torch.float16: np.int16}
_KEY = 16  # bytes of an example's content key and of its rows' checksum


def rows_digest(raw: np.ndarray, targets: np.ndarray, dom: np.ndarray | None) -> bytes:
    """The 16-byte checksum of an example's stored rows (raw hidden bits, int32 targets,
    int32 dominant ids or None)."""
    h = hashlib.blake2b(digest_size=_KEY)
    for part in (raw, targets) if dom is None else (raw, targets, dom):
        h.update(str(part.shape).encode())
        h.update(np.ascontiguousarray(part).tobytes())
    return h.digest()


def _read_meta(path: Path) -> object:
    """A cache's meta.json (None when missing or unreadable, nested too deep included)."""
    from ..safe.json_io import read_json

    try:
        return read_json(path)
    except (OSError, ValueError):
        return None
