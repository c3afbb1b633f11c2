"""Resumable training checkpoints: head, optimizer, scheduler and loop position.

Negatives and data order are derived from (seed, epoch, step), so nothing random needs
saving: restoring these and skipping the consumed steps of the current epoch makes a
resumed run identical to an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..head import SigmoidHead
from .config import TrainConfig

STATE_NAME = "trainer_state.json"


@dataclass
class TrainState:
    """Where the training loop is."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_val: float = math.inf
    best_step: int | None = None
    bad_evals: int = 0
    stopped: bool = False
    last_loss: float | None = None
    history: list[dict] = field(default_factory=list)


def save_checkpoint(directory: Path, config: TrainConfig, state: TrainState, head: SigmoidHead,
                    optimizer: torch.optim.Optimizer, scheduler: object) -> None:
    """Write the checkpoint atomically (into a temporary folder, then rename)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save({"head": head.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict()}, tmp / "state.pt")
    (tmp / STATE_NAME).write_text(json.dumps({"state": asdict(state), "key": config.resume_key()},
                                             indent=2, default=str))
    old = directory.with_name(directory.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        directory.rename(old)
    tmp.rename(directory)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(directory: Path, config: TrainConfig, head: SigmoidHead,
                    optimizer: torch.optim.Optimizer, scheduler: object) -> TrainState:
    """Restore a checkpoint written by :func:`save_checkpoint` for the same settings."""
    meta = json.loads((directory / STATE_NAME).read_text())
    key = json.loads(json.dumps(config.resume_key(), default=str))
    # a setting added after the checkpoint was written counts as having had its default value
    defaults = json.loads(json.dumps(TrainConfig.defaults(), default=str))
    changed = sorted(k for k in key if meta["key"].get(k, defaults.get(k)) != key[k])
    if changed:
        raise ValueError(
            f"{directory} was written with different settings ({', '.join(changed)}); "
            "use another output_dir or pass --no-resume to start over"
        )
    saved = torch.load(directory / "state.pt", map_location=head.weight.device, weights_only=True)
    head.load_state_dict(saved["head"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    state = TrainState(**meta["state"])
    state.best_val = float(state.best_val)
    return state
