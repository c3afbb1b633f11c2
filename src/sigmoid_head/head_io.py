"""The saved-head file format, like a PEFT adapter.

``head_config.json`` (:class:`HeadConfig`: base model, sizes, a fingerprint of the base
model's output matrix, every training setting, library version) plus ``head.safetensors``
(``weight`` (V, d), optional ``bias`` (V,), optional ``token_counts`` (V,)). Heads written
by earlier versions load unchanged: unknown config keys are ignored, and ``training``
holds the flat TrainConfig dict (see :meth:`sigmoid_head.training.config.TrainConfig.from_dict`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ._version import __version__
from .head import HeadMismatchError as HeadMismatchError
from .head import SigmoidHead

CONFIG_NAME = "head_config.json"
WEIGHTS_NAME = "head.safetensors"
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

    def save(self, directory: Path) -> None:
        (directory / CONFIG_NAME).write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory: Path) -> HeadConfig:
        path = directory / CONFIG_NAME
        if not path.is_file():
            raise FileNotFoundError(f"{directory} is not a sigmoid head: {CONFIG_NAME} is missing")
        data = json.loads(path.read_text())
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def load_head_files(directory: str | Path) -> tuple[HeadConfig, dict[str, torch.Tensor]]:
    """Read a saved head's config and tensors."""
    from safetensors.torch import load_file

    directory = Path(directory)
    config = HeadConfig.load(directory)
    weights = directory / WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(f"{directory} holds {CONFIG_NAME} but no {WEIGHTS_NAME}")
    return config, load_file(str(weights))


def save_head_files(directory: str | Path, config: HeadConfig, head: SigmoidHead,
                    extra: dict[str, torch.Tensor] | None = None) -> Path:
    """Write a head's config and tensors atomically (tensors first, config last)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = head.state_for_saving()
    for k, v in (extra or {}).items():
        state[k] = v.detach().contiguous().cpu()
    tmp = directory / (WEIGHTS_NAME + ".tmp")
    save_file(state, str(tmp), metadata={"format": "pt", "library": "sigmoid-head"})
    tmp.replace(directory / WEIGHTS_NAME)
    config.save(directory)
    return directory
