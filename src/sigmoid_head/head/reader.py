"""The one reader of a head folder: which format it is, decided once (:func:`read_head_folder`).

A folder given to ``SigmoidHeadModel.from_pretrained`` (or ``score --head``) is one of:

* this library's format (``head_config.json`` + ``head.safetensors`` + extras,
  :mod:`sigmoid_head.head.folder`): read whole, before any base model loads, so that a bad
  head fails fast;
* the paper authors' released format, or a Trainer checkpoint of their code
  (:mod:`sigmoid_head.head.released`): its tensor is read once the base model is loaded,
  since it is checked against that model;
* a Trainer output folder (``checkpoint-<step>`` subfolders): refused, naming the
  checkpoints to load instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..lm.backbone import Backbone
from .files import CONFIG_NAME
from .folder import HeadConfig, load_head_folder
from .hub import resolve_head_dir
from .released import (
    ReleasedHeadError,
    is_released_head,
    is_trainer_checkpoint,
    load_released_files,
    released_base_model,
    trainer_checkpoints,
)

OWN_FORMAT = "sigmoid-head"
RELEASED_FORMAT = "released"


@dataclass
class HeadFolder:
    """A head folder, read once.

    Attributes:
        source: where it came from, as given (a path or a Hub repository id).
        directory: the local folder (the Hub cache for a repository id).
        format: :data:`OWN_FORMAT` or :data:`RELEASED_FORMAT`.
        base_model: the base model the folder names (None: it names none).
        base_revision: the base model's revision the head records (None: the default).
        config: the head's config (own format; a released head's is made from its base model).
        state: the head's tensors: ``weight`` (V, d) or the low-rank parts, ``bias`` (V,),
            ``token_counts`` (V,) (own format; a released head's come with :meth:`load`).
        extras: what ``calibrate`` saved beside it: file name -> JSON object.
    """

    source: str
    directory: Path
    format: str
    base_model: str | None
    base_revision: str | None = None
    config: HeadConfig | None = None
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def released(self) -> bool:
        """Whether the folder is in the authors' format (checked against its base model
        when loaded, so the fingerprint check does not apply)."""
        return self.format == RELEASED_FORMAT

    def base(self, model: str | Backbone | None) -> str | Backbone:
        """The base model to load: ``model`` when given, else the one the folder names.

        Raises:
            ReleasedHeadError: neither names one.
        """
        if model is not None:
            return model
        if self.base_model is None:
            what = ("is a Trainer checkpoint of the authors' code (model.safetensors, no "
                    "config), which" if is_trainer_checkpoint(self.directory)
                    else "is a released head that")
            raise ReleasedHeadError(f"{self.source} {what} names no base model; pass the base "
                                    "model explicitly (model=..., --model)")
        return self.base_model

    def load(self, backbone: Backbone) -> tuple[HeadConfig, dict[str, torch.Tensor]]:
        """The head's config and tensors on ``backbone`` (a released head is read and
        checked against it here).

        Raises:
            ReleasedHeadError: a released head that is malformed or does not fit.
        """
        if self.released:
            return load_released_files(self.directory, backbone, source=self.source)
        assert self.config is not None  # read by read_head_folder
        return self.config, self.state


def read_head_folder(head_path: str | Path, *, revision: str | None = None,
                     token: str | bool | None = None) -> HeadFolder:
    """Resolve ``head_path`` (a folder or a Hub id) and decide its format.

    Args:
        head_path: a folder written by ``save_pretrained``, a released head's folder, or a
            Hub repository id holding either (downloaded into the Hub cache).
        revision: Hub revision (branch, tag, commit) of the head repository.
        token: Hub token for the head repository (None: the stored one).

    Raises:
        FileNotFoundError: no head there.
        ValueError: a corrupt, truncated or mismatched file (the message names it).
        ReleasedHeadError: a Trainer output folder, or a malformed released head.
    """
    directory = resolve_head_dir(head_path, revision=revision, token=token)
    source = str(head_path)
    if is_released_head(directory):  # the paper authors' format: data only, no code
        return HeadFolder(source, directory, RELEASED_FORMAT, released_base_model(directory))
    steps = trainer_checkpoints(directory) if not (directory / CONFIG_NAME).is_file() else []
    if steps:
        raise ReleasedHeadError(f"{head_path} is a Trainer output folder; load one of its "
                                "checkpoints: " + ", ".join(str(p) for p in steps[-3:]))
    config, state, extras = load_head_folder(directory)
    return HeadFolder(source, directory, OWN_FORMAT, config.base_model, config.base_revision,
                      config, state, extras)
