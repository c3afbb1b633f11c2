"""Outputs that cannot destroy what a run reads, and resume keys from content.

* :func:`refuse_overlaps`: an output path that is an input, another output, or inside
  the head or model folder is refused before any work (links, ``..``, hard links resolved).
* :func:`check_out_dir`: the same for a folder of outputs (``evaluate --out-dir``).
* :func:`folder_digest` / :func:`content_settings`: a head and a local model named by
  their files' content in a resume key, so ``./H1/`` and ``H1`` are one run and a
  recalibrated head, or weights swapped in place, another.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from .files import META_SUFFIX, PARTIAL_SUFFIX


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (links, ``..`` and hard links resolved)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_overlaps(outputs: dict[str, Any], inputs: dict[str, Any],
                    folders: dict[str, Any] | None = None) -> None:
    """Refuse, before any work, output paths that would destroy something the run reads.

    Args:
        outputs: option name -> output file path (None entries are skipped).
        inputs: option name -> input file path (None entries are skipped).
        folders: option name -> folder no output may be written into (the head's, a local
            model's); entries that are not existing directories (hub ids) are skipped.

    Raises:
        ValueError: an output is an input, another output, or inside one of ``folders``.
    """
    from .files import is_stream

    # a stream (/dev/stdout, a FIFO) is written straight: it cannot destroy an input file
    outs = [(k, Path(v)) for k, v in outputs.items() if v and not is_stream(v)]
    ins = [(k, Path(v)) for k, v in inputs.items() if v]
    dirs = [(k, Path(v).resolve()) for k, v in (folders or {}).items()
            if v and Path(v).is_dir()]
    for i, (name, out) in enumerate(outs):
        for other, path in ins + outs[:i]:
            if _same_file(out, path):
                raise ValueError(f"{name} {out} is the same file as {other} {path}; "
                                 "choose another output file")
        for other, folder in dirs:
            if out.resolve().is_relative_to(folder):
                raise ValueError(f"{name} {out} is inside the {other} folder {folder}; "
                                 "choose an output outside it")


def check_out_dir(option: str, out_dir: Any, names: Any, inputs: dict[str, Any]) -> None:
    """Refuse, before any work, an output folder that is a file, or whose files ``names``
    would overwrite an input (links and hard links resolved). Links and special files
    planted there are never written through: every file is written by
    :func:`sigmoid_head.safe.files.write_atomic`, which replaces a link by a file of its own.

    Raises:
        ValueError: one line naming the option and the file.
    """
    if not out_dir:
        return
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} {out} is not a directory")
    flat: dict[str, Any] = {}
    for k, v in inputs.items():
        for j, path in enumerate(v if isinstance(v, (list, tuple)) else [v]):
            flat[k if j == 0 else f"{k} #{j + 1}"] = path
    for n in names:  # each against the inputs (links planted there are replaced, not used)
        refuse_overlaps({f"{option} {n}": out / n}, flat)


def folder_digest(folder: str | Path) -> str:
    """A hash of the names and bytes of the regular files directly in ``folder`` (lock,
    temp and partial files left out): the content of a head (weights, config with the
    base model's fingerprint, calibration, combination, spans), whatever its path."""
    digest = hashlib.sha256()
    skip = (".tmp", PARTIAL_SUFFIX, META_SUFFIX, ".lock")
    for p in sorted(Path(folder).iterdir()):
        if p.is_file() and not p.name.endswith(skip):
            digest.update(p.name.encode("utf-8", "surrogateescape") + b"\0")
            with open(p, "rb") as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):
                    digest.update(block)
            digest.update(b"\0")
    return digest.hexdigest()


def content_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` for a resume key: a ``head`` folder and a local ``model`` folder by
    their content, not their spelling (``./H1/`` and ``H1`` are one run; weights swapped in
    place, or new files in the same folder, are another). Every byte of the model's files
    is hashed: once per run, while loading reads them anyway."""
    out = dict(settings)
    if out.get("head") and Path(out["head"]).is_dir():
        out["head"] = folder_digest(out["head"])
    if out.get("model") and Path(out["model"]).is_dir():
        out["model"] = "content:" + folder_digest(out["model"])
    return out
