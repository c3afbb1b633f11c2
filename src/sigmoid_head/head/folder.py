"""The saved-head file format, like a PEFT adapter.

``head_config.json`` (:class:`HeadConfig`: base model, sizes, a fingerprint of the base
model's output matrix, every training setting, library version) plus ``head.safetensors``
(``weight`` (V, d), optional ``bias`` (V,), optional ``token_counts`` (V,)).

A head is saved as one unit: both files are written to temporary names and fsynced, the
config names the SHA-256 of the weights file (``weights_sha256``), and the weights then
the config are renamed into place. A save killed at any point leaves the old head or the
new one: between the two renames the new weights sit beside the old config, whose hash
does not match them, while the complete new config waits in ``head_config.json.tmp``;
:func:`load_head_files` takes that one (a head whose weights match no config is refused).
Heads written
by earlier versions load unchanged: unknown config keys are ignored, and ``training``
holds the flat TrainConfig dict (see :meth:`sigmoid_head.training.config.TrainConfig.from_dict`).

Beside these two a head folder may hold the extras that ``sigmoid-head calibrate`` fits
(``calibration.json``, ``error_spans.json``, ``combination.json``) and, on the Hub, a
model card (``README.md``). :mod:`sigmoid_head.head.files` names every one of them
(re-exported here: :data:`HEAD_FILES`, :data:`EXTRA_FILES`); :func:`load_head_folder` and
:func:`save_head_folder` read and write the folder as one unit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .._version import __version__
from ..safe import files as io_utils
from ..safe.config_types import check_training_record
from .files import CALIBRATION_NAME as CALIBRATION_NAME
from .files import CARD_NAME as CARD_NAME
from .files import COMBINATION_NAME as COMBINATION_NAME
from .files import CONFIG_NAME, EXTRA_FILES, WEIGHTS_NAME, read_extras, write_extras
from .files import HEAD_FILES as HEAD_FILES
from .files import SPANS_NAME as SPANS_NAME
from .layer import HeadMismatchError as HeadMismatchError
from .layer import SigmoidHead

FINGERPRINT_ROWS = 64


def fingerprint(weight: torch.Tensor) -> str:
    """A short hash identifying an output matrix (V, d).

    Hashes the shape and 64 evenly spaced rows rounded to bfloat16, so the same model
    loaded in float32, bfloat16 or on another device gives the same fingerprint.
    """
    v = weight.shape[0]
    idx = torch.linspace(0, v - 1, min(FINGERPRINT_ROWS, v)).round().long().unique()
    rows = weight.detach()[idx.to(weight.device)].to("cpu", torch.bfloat16).view(torch.int16)
    digest = hashlib.sha256(f"{tuple(weight.shape)}".encode())
    digest.update(rows.numpy().tobytes())
    return digest.hexdigest()[:16]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shown(value: object) -> str:
    """A short one-line repr of a bad value for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


CONFIG_FIELD_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "base_model": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty string"),
    "vocab_size": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "hidden_size": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "fingerprint": (lambda v: isinstance(v, str) and bool(v), "a non-empty string"),
    "base_revision": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "is_encoder_decoder": (lambda v: isinstance(v, bool), "true or false"),
    "bias": (lambda v: isinstance(v, bool), "true or false"),
    "rank": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "training": (lambda v: isinstance(v, dict), "an object"),
    "library_version": (lambda v: isinstance(v, str), "a string"),
    "weights_sha256": (lambda v: v is None or isinstance(v, str), "a string or null"),
}
"""head_config.json field -> (its check, what it must be): every field read from a file is
checked, so a wrong type ends in a message naming the file and the field."""


@dataclass
class HeadConfig:
    """What a saved head is and how it was made."""

    base_model: str
    """Name or path of the base model the head was trained on."""
    vocab_size: int
    """V, rows of W_qe."""
    hidden_size: int
    """d, columns of W_qe."""
    fingerprint: str
    """Hash of the base model's output matrix (see :func:`fingerprint`)."""
    base_revision: str | None = None
    """Hub revision of the base model, if any."""
    is_encoder_decoder: bool = False
    """Whether the base model is an encoder-decoder."""
    bias: bool = False
    """Whether the head has a per-token bias."""
    rank: int = 0
    """0: a full (V, d) head; r > 0: the base model's output matrix plus a rank-r update."""
    training: dict = field(default_factory=dict)
    """Every training setting used to make the head."""
    library_version: str = __version__
    """sigmoid-head version that wrote the head."""
    weights_sha256: str | None = None
    """SHA-256 of head.safetensors (None in heads written before 0.3)."""

    def to_json(self) -> str:
        from ..safe.json_io import dumps

        return dumps(asdict(self), indent=2, sort_keys=True) + "\n"  # NaN/inf: null

    def save(self, directory: Path) -> None:
        io_utils.write_durable(directory / CONFIG_NAME, self.to_json())

    @classmethod
    def from_file(cls, path: Path) -> HeadConfig:
        """Parse a head_config.json; a ValueError naming the file when it is malformed."""
        from ..safe.json_io import read_json

        data = read_json(path, "corrupt head config")  # bad, non-UTF-8 or too deep: one line
        if not isinstance(data, dict):
            raise ValueError(f"{path}: corrupt head config (expected a JSON object)")
        fields = cls.__dataclass_fields__
        required = [k for k in ("base_model", "vocab_size", "hidden_size", "fingerprint")
                    if k not in data]
        if required:
            raise ValueError(f"{path}: corrupt head config (missing {', '.join(required)})")
        known = {k: v for k, v in data.items() if k in fields}
        for key, (ok, what) in CONFIG_FIELD_TYPES.items():
            if key in known and not ok(known[key]):
                raise ValueError(f"{path}: corrupt head config ({key} must be {what}, "
                                 f"got {_shown(known[key])})")
        if "training" in known:  # "use_chat_template": "false" is not false
            check_training_record(known["training"], str(path))
        return cls(**known)

    @classmethod
    def load(cls, directory: Path) -> HeadConfig:
        path = directory / CONFIG_NAME
        if not path.is_file():
            raise FileNotFoundError(f"{directory} is not a sigmoid head: {CONFIG_NAME} is missing")
        return cls.from_file(path)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _matching_config(directory: Path, weights: Path) -> HeadConfig:
    """The config that belongs to ``weights``: head_config.json, or the complete new one a
    save killed between its two renames left in head_config.json.tmp."""
    config = HeadConfig.load(directory)
    pending = directory / (CONFIG_NAME + ".tmp")
    if config.weights_sha256 is None and not pending.is_file():
        return config  # a head written before weights were hashed
    actual = file_sha256(weights)
    if config.weights_sha256 == actual:
        return config
    if pending.is_file():
        try:
            newer = HeadConfig.from_file(pending)
        except ValueError:
            newer = None
        if newer is not None and newer.weights_sha256 == actual:
            with contextlib.suppress(OSError):  # finish the interrupted save
                io_utils.replace(pending, directory / CONFIG_NAME)
            return newer
    if config.weights_sha256 is None:
        return config
    raise ValueError(
        f"{weights} does not match {directory / CONFIG_NAME} (a save was interrupted or a "
        "file was replaced); retrain, or restore both files together"
    )


def load_head_files(directory: str | Path) -> tuple[HeadConfig, dict[str, torch.Tensor]]:
    """Read a saved head's config and tensors.

    Raises:
        FileNotFoundError: no head there.
        ValueError: a corrupt, truncated or mismatched file (the message names it).
    """
    from safetensors.torch import load_file

    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"head directory not found: {directory}")
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a head directory")
    weights = directory / WEIGHTS_NAME
    if not weights.is_file() and (directory / CONFIG_NAME).is_file():
        raise FileNotFoundError(f"{directory} holds {CONFIG_NAME} but no {WEIGHTS_NAME}")
    config = _matching_config(directory, weights)
    try:
        state = load_file(str(weights))
    except Exception as err:  # SafetensorError and friends
        raise ValueError(f"{weights}: corrupt or truncated weights file ({err})") from err
    check_head_tensors(state, config, weights)
    return config, state


def first_nonfinite(tensor: torch.Tensor, rows: int = 4096) -> tuple[int, ...] | None:
    """The index of the first NaN or infinite value of ``tensor`` (None when all are finite),
    checked ``rows`` rows at a time so that no second tensor of its size is made."""
    flat = tensor.reshape(tensor.shape[0], -1) if tensor.ndim > 1 else tensor.reshape(-1, 1)
    for start in range(0, flat.shape[0], rows):
        bad = ~torch.isfinite(flat[start:start + rows])
        if bool(bad.any()):
            i, j = (int(x) for x in bad.nonzero()[0])
            return (start + i, j) if tensor.ndim > 1 else (start + i,)
    return None


LOGIT_BOUND = 1e30
"""A head row whose absolute values sum past this gives logits that overflow float32 for
ordinary hidden states (each logit is bounded by the row's L1 norm times the largest
hidden value): such a head is refused, its scores would be NaN."""


def first_overflowing(tensor: torch.Tensor, rows: int = 4096) -> int | None:
    """The first row of ``tensor`` whose absolute values sum past :data:`LOGIT_BOUND`
    (summed in float32, ``rows`` rows at a time: a sum past float32's range is infinite,
    past the bound too), or None."""
    flat = tensor.reshape(tensor.shape[0], -1) if tensor.ndim > 1 else tensor.reshape(-1, 1)
    for start in range(0, flat.shape[0], rows):
        norms = flat[start:start + rows].float().abs().sum(dim=1)
        bad = norms > LOGIT_BOUND
        if bool(bad.any()):
            return start + int(bad.nonzero()[0, 0])
    return None


def check_head_tensors(state: dict[str, torch.Tensor], config: HeadConfig,
                       weights: str | Path = WEIGHTS_NAME) -> None:
    """Refuse tensors that cannot make a head: a missing tensor, a shape that differs from
    the config's sizes, an integer or bool dtype, a NaN or infinite value (every score of the
    head would be NaN, which is not JSON), a bias that is not one value per token, token
    counts that are not (V,) finite non-negative numbers.

    Raises:
        ValueError: naming ``weights``, the tensor and the problem.
    """
    v, d, r = config.vocab_size, config.hidden_size, config.rank
    expected = {"lora_a": (v, r), "lora_b": (r, d)} if r else {"weight": (v, d)}
    if config.bias:
        expected["bias"] = (v,)
    if "token_counts" in state:
        expected["token_counts"] = (v,)
    for name, want in expected.items():
        got = state.get(name)
        if got is None:
            why = " (head_config.json says bias: true)" if name == "bias" else ""
            raise ValueError(f"{weights}: no {name} tensor{why}")
        if tuple(got.shape) != want:
            raise ValueError(f"{weights}: {name} shape {tuple(got.shape)} does not match "
                             f"{CONFIG_NAME} {want}")
        counts = name == "token_counts" and got.dtype != torch.bool and not got.is_complex()
        if not (got.is_floating_point() or counts):
            raise ValueError(f"{weights}: {name} has dtype {str(got.dtype).removeprefix('torch.')}; "
                             f"{'token counts are numbers' if name == 'token_counts' else 'a head is floating point'}")
        if got.is_floating_point():
            where = first_nonfinite(got)
            if where is not None:
                at = ", ".join(f"{k} {i}" for k, i in zip(("row", "column"), where, strict=False))
                raise ValueError(f"{weights}: {name} holds a NaN or infinite value ({at}); "
                                 "the head cannot score with it")
            row = first_overflowing(got) if name != "token_counts" else None
            if row is not None:
                raise ValueError(f"{weights}: {name} row {row} is too large (absolute values "
                                 f"summing past {LOGIT_BOUND:g}): its logits overflow float32, "
                                 "the head cannot score with it")
        if name == "token_counts" and bool((got < 0).any()):
            raise ValueError(f"{weights}: token_counts holds negative counts")


def canonical_safetensors(data: bytes) -> tuple[bytes, memoryview]:
    """``data`` (a safetensors file) as (its header written one way, its tensor bytes).

    The header's JSON gets sorted keys, no spaces, and space padding to 8 bytes (the
    tensor bytes are not copied). safetensors writes its metadata in a random order, so
    without this the same head saved twice would give other bytes and another
    ``weights_sha256``, and a re-push would upload it again.
    """
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, memoryview(data)[8 + n:]


def _write_chunks(path: Path, chunks: tuple[bytes | memoryview, ...]) -> None:
    """Write ``chunks`` to a fresh ``path`` (never through a planted link) and fsync it."""
    try:
        with os.fdopen(io_utils.open_fresh(path), "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        path.unlink(missing_ok=True)
        raise io_utils.write_error(path, err) from err


def save_head_files(directory: str | Path, config: HeadConfig, head: SigmoidHead,
                    extra: dict[str, torch.Tensor] | None = None) -> Path:
    """Write a head's config and tensors as one unit (see the module docstring)."""
    from dataclasses import replace

    from safetensors.torch import save

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = head.state_for_saving()
    for k, v in (extra or {}).items():
        state[k] = v.detach().contiguous().cpu()
    tmp_weights = directory / (WEIGHTS_NAME + ".tmp")
    tmp_config = directory / (CONFIG_NAME + ".tmp")
    _write_chunks(tmp_weights, canonical_safetensors(
        save(state, metadata={"format": "pt", "library": "sigmoid-head"})))
    io_utils.fault_point("head weights written")
    config = replace(config, weights_sha256=file_sha256(tmp_weights))
    io_utils.write_durable(tmp_config, config.to_json())
    io_utils.fault_point("head config written")
    io_utils.replace(tmp_weights, directory / WEIGHTS_NAME)
    io_utils.replace(tmp_config, directory / CONFIG_NAME)
    return directory



def load_head_folder(directory: str | Path
                     ) -> tuple[HeadConfig, dict[str, torch.Tensor], dict[str, dict]]:
    """A head folder as one unit: (config, tensors, extras: file name -> JSON object).

    Raises:
        FileNotFoundError: no head there.
        ValueError: a corrupt, truncated or mismatched file (the message names it).
    """
    config, state = load_head_files(directory)
    return config, state, read_extras(directory)


def save_head_folder(directory: str | Path, config: HeadConfig, head: SigmoidHead,
                     extra: dict[str, torch.Tensor] | None = None,
                     extras: dict[str, dict] | None = None) -> Path:
    """Write a head folder as one unit: the head (:func:`save_head_files`) and exactly the
    given extras (:data:`EXTRA_FILES` it does not name are removed first, so a new head never
    sits beside an old head's calibration, even when a save is cut short)."""
    extras = extras or {}
    unknown = sorted(set(extras) - set(EXTRA_FILES))
    if unknown:
        raise ValueError(f"unknown head folder extras {unknown}; known: {list(EXTRA_FILES)}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_extras(directory, {})  # the old head's extras go before its weights do
    save_head_files(directory, config, head, extra)
    write_extras(directory, extras)
    return directory
