"""Resumable training checkpoints: head, optimizer, scheduler and loop position.

Negatives and data order are derived from (seed, epoch, step), so nothing random needs
saving: restoring these and skipping the consumed steps of the current epoch makes a
resumed run identical to an uninterrupted one.

A checkpoint is written into ``checkpoint.tmp`` (``state.pt`` first, the
``trainer_state.json`` that marks it complete last, both fsynced), then swapped in with
two renames (``checkpoint`` -> ``checkpoint.old``, ``checkpoint.tmp`` -> ``checkpoint``).
:func:`recover_checkpoint` finishes a swap a kill interrupted, so a rerun continues from
the newest complete checkpoint, and says so.
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import shutil
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..head.layer import SigmoidHead
from ..safe import files as io_utils
from ..safe.json_io import dumps
from .config import TrainConfig

logger = logging.getLogger(__name__)

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


DATA_FIELDS = ("train_file", "validation_file", "self_generated", "self_validation_file",
               "labelled_file", "labelled_validation_file")
"""Settings naming data files whose content (not only name) a checkpoint is keyed on."""
_DIGESTS: dict[tuple, str] = {}


def data_digests(config: TrainConfig) -> dict[str, dict]:
    """Setting -> ``{"sha256", "bytes"}`` of each local data file the run reads (hub ids and
    folders skipped), so that a changed file under the same name is not resumed. Each
    file is hashed once per process (cached by its size, time and inode)."""
    from ..head.folder import file_sha256

    out = {}
    for name in DATA_FIELDS:
        value = getattr(config, name, None)
        if not value or not Path(value).is_file():
            continue
        st = Path(value).stat()
        stamp = (str(Path(value).resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
        if stamp not in _DIGESTS:
            _DIGESTS[stamp] = file_sha256(Path(value))
        out[name] = {"sha256": _DIGESTS[stamp], "bytes": st.st_size}
    return out


def _data_changes(saved: object, config: TrainConfig) -> list[str]:
    """What changed in the data files since the checkpoint (nothing for one written before
    data files were hashed)."""
    if not isinstance(saved, dict):
        return []
    now = data_digests(config)
    changes = []
    for name in DATA_FIELDS:
        old, new = saved.get(name), now.get(name)
        if isinstance(old, dict) and old.get("sha256") != (new or {}).get("sha256"):
            size = f"{old.get('bytes')} bytes then, {new['bytes']} now" if new else "now missing"
            changes.append(f"{name} {getattr(config, name)} has changed ({size})")
    return changes


def save_checkpoint(directory: Path, config: TrainConfig, state: TrainState, head: SigmoidHead,
                    optimizer: torch.optim.Optimizer, scheduler: object) -> None:
    """Write the checkpoint atomically (into a temporary folder, then rename)."""
    tmp = directory.with_name(directory.name + ".tmp")
    old = directory.with_name(directory.name + ".old")
    recover_checkpoint(directory, quiet=True)  # never delete the only complete checkpoint
    if tmp.is_symlink():
        tmp.unlink()  # a planted link: removed, never written through
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        torch.save({"head": head.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, tmp / "state.pt")
        io_utils.fsync_file(tmp / "state.pt")
    except (OSError, RuntimeError) as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise io_utils.write_error(tmp / "state.pt", err, "cannot write checkpoint") from err
    io_utils.fault_point("checkpoint state written")
    try:
        io_utils.write_durable(tmp / STATE_NAME, dumps(  # best_val inf: null
            {"state": asdict(state), "key": config.resume_key(), "data": data_digests(config)},
            indent=2, default=str))
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    io_utils.fsync_dir(tmp)
    io_utils.fault_point("checkpoint complete")
    shutil.rmtree(old, ignore_errors=True)
    if directory.exists():
        io_utils.replace(directory, old)
    io_utils.replace(tmp, directory)
    shutil.rmtree(old, ignore_errors=True)


def _complete(directory: Path) -> bool:
    return (directory / STATE_NAME).is_file() and (directory / "state.pt").is_file()


def recover_checkpoint(directory: Path, quiet: bool = False) -> bool:
    """Finish a checkpoint swap interrupted between its renames; True if one is in place.

    When ``directory`` is missing, the complete ``.tmp`` (newer) or else the ``.old``
    checkpoint is renamed into place, with a log message.
    """
    if directory.is_dir():
        return True
    for suffix, what in ((".tmp", "newest"), (".old", "previous")):
        candidate = directory.with_name(directory.name + suffix)
        if candidate.is_dir() and _complete(candidate):
            io_utils.replace(candidate, directory)
            if not quiet:
                logger.warning("%s: a checkpoint write was interrupted; continuing from the %s "
                               "complete checkpoint", directory, what)
            return True
    partial = directory.with_name(directory.name + ".tmp")
    if partial.is_dir() and not quiet:
        logger.warning("%s: only an incomplete checkpoint (%s) is there; starting from step 0",
                       directory, partial)
    return False


def load_checkpoint(directory: Path, config: TrainConfig, head: SigmoidHead,
                    optimizer: torch.optim.Optimizer, scheduler: object) -> TrainState:
    """Restore a checkpoint written by :func:`save_checkpoint` for the same settings."""
    from ..safe.json_io import read_json

    try:
        meta = read_json(directory / STATE_NAME, "unreadable checkpoint")  # too deep included
    except (OSError, ValueError) as err:
        raise ValueError(f"{err}; pass --no-resume to start over") from None
    if not (isinstance(meta, dict) and isinstance(meta.get("key"), dict)
            and isinstance(meta.get("state"), dict)):
        raise ValueError(f"{directory / STATE_NAME}: not a checkpoint record (expected an object "
                         "with 'key' and 'state'); pass --no-resume to start over")
    key = json.loads(json.dumps(config.resume_key(), default=str))
    # a setting added after the checkpoint was written counts as having had its default value
    defaults = json.loads(json.dumps(TrainConfig.defaults(), default=str))
    changed = sorted(k for k in key if meta["key"].get(k, defaults.get(k)) != key[k])
    if changed:
        raise ValueError(
            f"{directory} was written with different settings ({', '.join(changed)}); "
            "use another output_dir or pass --no-resume to start over"
        )
    data_changes = _data_changes(meta.get("data"), config)
    if data_changes:
        raise ValueError(f"{directory} was written for other data: {'; '.join(data_changes)}; "
                         "use another output_dir or pass --no-resume to start over")
    try:
        with warnings.catch_warnings():  # a refused pickle is reported in one line below
            warnings.filterwarnings("ignore", message="Detected pickle protocol",
                                    category=UserWarning)
            saved = torch.load(directory / "state.pt", map_location=head.weight.device,
                               weights_only=True)  # data only: a planted pickle is refused
        head.load_state_dict(saved["head"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state = TrainState(**meta["state"])
    except (pickle.UnpicklingError, EOFError, RuntimeError, KeyError, TypeError, ValueError,
            AttributeError, IndexError) as err:
        what = ("holds something torch's safe loader refuses (nothing in it was run)"
                if isinstance(err, pickle.UnpicklingError) else
                f"is unreadable ({next(iter(str(err).splitlines()), '') or type(err).__name__})")
        raise ValueError(f"{directory / 'state.pt'} {what}; pass --no-resume to start over, "
                         "or use another output_dir") from None
    state.best_val = math.inf if state.best_val is None else float(state.best_val)
    return state
