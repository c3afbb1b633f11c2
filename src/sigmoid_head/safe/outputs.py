"""Outputs that cannot destroy what a run reads, and resume keys from content.

* :func:`refuse_overlaps`: an output path that is an input, another output, or inside
  the head or model folder is refused before any work (links, ``..``, hard links resolved).
* :func:`check_out_dir`: the same for a folder of outputs (``evaluate --out-dir``).
* :func:`stdout_to_stderr`: the standard output sent to the standard error at the
  descriptor level (``print``, ``os.write(1, ...)`` and child processes alike), for plugin
  code and for a command whose output is the standard output.
* :func:`staged_folder`: a folder of results written whole beside its destination and
  swapped in only when complete, so a failing run never leaves the old results half
  replaced.
* :func:`run_inputs`: files every command of this run reads (its ``--config`` file), which
  both checks count as inputs of every call.
* :func:`folder_digest` / :func:`content_settings`: a head and a local model named by
  their files' content in a resume key, so ``./H1/`` and ``H1`` are one run and a
  recalibrated head, or weights swapped in place, another.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .files import META_SUFFIX, PARTIAL_SUFFIX


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[int | None]:
    """Within the block, descriptor 1 and ``sys.stdout`` write to the standard error; yields
    a descriptor of the real standard output (None where descriptors 1 and 2 cannot be
    duplicated: then only ``sys.stdout`` is redirected), which output writers use."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield saved
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def staged_folder(dest: str | Path, copy_existing: bool = False) -> Iterator[Path]:
    """A new folder beside ``dest`` to write a run's files into; when the block ends
    without an exception it replaces ``dest`` (renamed, never merged), else it is removed
    and ``dest`` is left as it was.

    Args:
        dest: the folder the results belong in (created when absent).
        copy_existing: start from a copy of ``dest``'s files (a run that replaces some
            files of a folder and keeps the others).

    Raises:
        ValueError: ``dest`` exists and is not a directory (or is a link).
    """
    import shutil
    import tempfile

    dest = Path(dest)
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise ValueError(f"{dest} is not a folder (a file or a link); give a folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(staged, 0o777 & ~mask)  # a folder as mkdir makes it, not mkdtemp's 0700
    try:
        if copy_existing and dest.is_dir():
            shutil.copytree(dest, staged, symlinks=True, dirs_exist_ok=True)
        yield staged
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    old = staged.with_name(staged.name.replace(".partial-", ".old-"))
    if dest.exists():
        os.rename(dest, old)
    os.rename(staged, dest)
    shutil.rmtree(old, ignore_errors=True)


_RUN_INPUTS: dict[str, Any] = {}


def run_inputs(inputs: dict[str, Any]) -> None:
    """Set the inputs of the whole run (option name -> path; None entries skipped), counted
    by :func:`refuse_overlaps` and :func:`check_out_dir` beside each call's own: the CLI
    sets its ``--config`` file here once, so no command's output can overwrite it."""
    _RUN_INPUTS.clear()
    _RUN_INPUTS.update({k: v for k, v in inputs.items() if v})


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
    ins = [(k, Path(v)) for k, v in {**_RUN_INPUTS, **inputs}.items() if v]
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
