"""Every file a head folder can hold: named, written, read and listed in one place (no torch).

A head folder is one unit: what :meth:`sigmoid_head.head.model.SigmoidHeadModel.save_pretrained`
writes, what ``from_pretrained`` loads (locally or from the Hub), what ``push`` uploads
(:func:`push_files`) and what the model card lists. Every extra is written here,
atomically (:func:`write_extra`), and read here (:func:`read_extra`), whichever command
fits it.

* ``head_config.json`` and ``head.safetensors``: the head itself (:mod:`sigmoid_head.head.folder`);
* ``calibration.json``, ``error_spans.json``, ``combination.json``: the *extras* that
  ``sigmoid-head calibrate`` fits on dev data (Platt/isotonic calibration, the error-span
  rule, the combined score's baseline and weight; :mod:`sigmoid_head.evaluation`). The
  model carries them as parsed JSON objects (``SigmoidHeadModel.extras``, keyed by file
  name); the evaluation classes turn them into objects;
* ``README.md``: the model card of a Hub repository (:mod:`sigmoid_head.head.model_card`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..safe import files as io_utils

CONFIG_NAME = "head_config.json"
WEIGHTS_NAME = "head.safetensors"
CALIBRATION_NAME = "calibration.json"
SPANS_NAME = "error_spans.json"
COMBINATION_NAME = "combination.json"
QUALITY_MODEL_NAME = "quality_model.json"
WORD_MODEL_NAME = "word_model.json"
CARD_NAME = "README.md"
EXTRA_FILES: dict[str, str] = {
    CALIBRATION_NAME: "Platt scaling and isotonic regression of the sequence scores",
    SPANS_NAME: "the rule that reads error spans off word scores",
    COMBINATION_NAME: "the combined score's baseline and weight",
    QUALITY_MODEL_NAME: "a learned segment quality score over the sequence scores",
    WORD_MODEL_NAME: "a learned word-level error detector over the word scores",
}
"""The optional JSON files ``sigmoid-head calibrate`` adds, with what each holds."""
EXTRA_MAX_BYTES: dict[str, int] = {QUALITY_MODEL_NAME: 1 << 20, WORD_MODEL_NAME: 1 << 20}
"""Size bounds of extras, checked before they are read: a quality or word model has a few
numbers per feature (a 53 MB one took 79 s and 1.35 GB on 20 rows)."""
HEAD_FILES = (CONFIG_NAME, WEIGHTS_NAME, *EXTRA_FILES, CARD_NAME)
"""Every file of a head folder in this library's format, in upload order."""


def read_extra(directory: str | Path, name: str) -> dict[str, Any] | None:
    """The JSON object in ``directory/name``, or None when the file is not there.

    Raises:
        ValueError: naming the file, when it is not UTF-8 JSON holding an object, or is
            larger than its bound (:data:`EXTRA_MAX_BYTES`).
    """
    from ..safe.json_io import read_json

    path = Path(directory) / name
    if not path.exists():
        return None
    limit = EXTRA_MAX_BYTES.get(name)
    if limit is not None and path.is_file() and path.stat().st_size > limit:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, more than the {limit} a "
                         f"{name} may have: not one that calibrate wrote")
    data = read_json(path)  # a directory, bad JSON or JSON nested too deep: one line
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def read_extras(directory: str | Path) -> dict[str, dict[str, Any]]:
    """Every extra present in a head folder: file name -> its JSON object."""
    found = {name: read_extra(directory, name) for name in EXTRA_FILES}
    return {name: data for name, data in found.items() if data is not None}


def write_extra(directory: str | Path, name: str, data: Mapping[str, Any] | str) -> Path:
    """Write one extra atomically (the whole file or the old one, never through a planted
    link): ``data`` is its JSON object (written with sorted keys, NaN and inf as null) or
    JSON text already made. Returns its path.

    Raises:
        ValueError: ``name`` is not one of :data:`EXTRA_FILES`.
    """
    from ..safe.json_io import dumps

    if name not in EXTRA_FILES:
        raise ValueError(f"{name!r} is not a head folder extra; one of {list(EXTRA_FILES)}")
    text = data if isinstance(data, str) else dumps(dict(data), indent=2, sort_keys=True) + "\n"
    return io_utils.write_atomic(Path(directory) / name, text)


def remove_extra(directory: str | Path, name: str) -> None:
    """Remove one extra from a head folder (nothing happens when it is not there)."""
    if name not in EXTRA_FILES:
        raise ValueError(f"{name!r} is not a head folder extra; one of {list(EXTRA_FILES)}")
    (Path(directory) / name).unlink(missing_ok=True)


def head_weights_sha256(directory: str | Path) -> str | None:
    """The SHA-256 of a head folder's weights as its ``head_config.json`` records it
    (``weights_sha256``; None when absent, as in heads written before 0.3)."""
    from ..safe.json_io import read_json

    data = read_json(Path(directory) / CONFIG_NAME)
    value = data.get("weights_sha256") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def write_extras(directory: str | Path, extras: Mapping[str, Mapping[str, Any]]) -> None:
    """Make the folder's extras exactly ``extras``: write each (atomically) and remove the
    extras files it does not name, so that a new head never keeps an old head's calibration."""
    for name in EXTRA_FILES:
        if name in extras:
            write_extra(directory, name, extras[name])
        else:
            remove_extra(directory, name)


def extras_in(directory: str | Path) -> list[str]:
    """The extras files the folder holds, in :data:`EXTRA_FILES` order."""
    return [name for name in EXTRA_FILES if (Path(directory) / name).is_file()]


def push_files(directory: str | Path) -> list[str]:
    """The files of a head folder that an upload sends as they are, in upload order: the
    head (config and weights) and the extras it holds. Not ``README.md``: the model card is
    generated for each upload."""
    return [CONFIG_NAME, WEIGHTS_NAME, *extras_in(directory)]


def stale_extras(directory: str | Path, present: Iterable[str]) -> list[str]:
    """Of the files ``present`` in an upload's destination, the extras the folder lacks:
    they belonged to another head and go with the upload."""
    keep, there = set(extras_in(directory)), set(present)
    return [name for name in EXTRA_FILES if name in there and name not in keep]
