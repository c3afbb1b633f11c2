"""One type check for every settings dict read from a file (a head's ``training`` record in
head_config.json, a ``train --config`` file): each value must have its dataclass field's
declared type, so that ``"use_chat_template": "false"`` (a non-empty string, which Python
reads as true) is refused in one line naming the file and the field instead of turning the
chat template on.

Types are read from the field annotations (``bool``, ``int``, ``float``, ``str``, unions
with ``None``, ``list``/``tuple``/``dict``); an int is a valid float, a bool is neither an
int nor a float. Needs neither torch nor transformers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

_BASIC: dict[str, Any] = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
    "tuple": lambda v: isinstance(v, (list, tuple)),
    "dict": lambda v: isinstance(v, dict),
}
_SAID = {
    "bool": "true or false",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "None": "null",
    "list": "a list",
    "tuple": "a list",
    "dict": "an object",
}


def _parts(annotation: Any) -> list[str] | None:
    """The basic type names of an annotation (None when one is not understood)."""
    text = (
        annotation
        if isinstance(annotation, str)
        else getattr(annotation, "__name__", str(annotation))
    )
    names = []
    for part in text.split("|"):
        base = part.strip().split("[", 1)[0].removeprefix("typing.")
        if base not in _BASIC:
            return None
        names.append(base)
    return names


def field_types(
    *classes: type,
    renamed: Mapping[tuple[str, str], str] | None = None,
    groups: Mapping[str, type] | None = None,
) -> dict[str, list[str]]:
    """Field name -> its basic type names, for the fields of the dataclasses ``classes``
    (or of ``groups``, name -> class, with ``renamed`` (group, field) -> flat name)."""
    out: dict[str, list[str]] = {}
    pairs = [(None, c) for c in classes] + list((groups or {}).items())
    for group, cls in pairs:
        for f in dataclasses.fields(cls):
            parts = _parts(f.type)
            if parts is not None:
                out[(renamed or {}).get((group, f.name), f.name)] = parts
    return out


def type_problem(value: Any, parts: list[str]) -> str | None:
    """What is wrong with ``value`` for a field of type ``parts``, or None."""
    if any(_BASIC[p](value) for p in parts):
        return None
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"must be {' or '.join(dict.fromkeys(_SAID[p] for p in parts))}, got {shown}"


def check_types(values: Mapping[str, Any], types: Mapping[str, list[str]], where: str) -> None:
    """Refuse the first value of ``values`` whose key is in ``types`` with another type.

    Raises:
        ValueError: ``<where>: <key> must be ..., got ...`` (one line).
    """
    for key, value in values.items():
        parts = types.get(key)
        problem = None if parts is None else type_problem(value, parts)
        if problem:
            raise ValueError(f"{where}: {key} {problem}")


TRAINING_TYPES: dict[str, list[str]] = {
    "avoid_dominant": ["bool"],
    "avoid_when": ["str"],
    "bad_weight": ["float"],
    "batch_size": ["int", "None"],
    "bias": ["bool"],
    "cache_dir": ["str", "None"],
    "cache_dtype": ["str"],
    "cache_from": ["str", "None"],
    "cache_hidden": ["bool"],
    "data_cache_dir": ["str", "None"],
    "data_engine": ["str"],
    "device": ["str", "None"],
    "disk_cache_dtype": ["str"],
    "dominant_cut": ["str"],
    "dtype": ["str"],
    "epochs": ["float"],
    "epsilon": ["float"],
    "eval_every": ["int", "None"],
    "freq_power": ["float"],
    "freq_smoothing": ["float"],
    "grad_accum": ["int"],
    "head_rank": ["int"],
    "labelled_file": ["str", "None"],
    "labelled_format": ["str", "None"],
    "labelled_validation_file": ["str", "None"],
    "lr": ["float"],
    "max_length": ["int"],
    "max_steps": ["int", "None"],
    "max_tokens": ["int", "None"],
    "max_validation_examples": ["int"],
    "mixed_precision": ["str"],
    "model": ["str", "None"],
    "negatives": ["str"],
    "num_negatives": ["int"],
    "num_proc": ["int", "None"],
    "optimizer": ["str"],
    "output_dir": ["str"],
    "p_jump": ["float"],
    "patience": ["int"],
    "progress": ["bool"],
    "prompt_template": ["str"],
    "rank_loss_weight": ["float"],
    "rank_margin": ["float"],
    "reference_weight": ["float", "None"],
    "resume": ["bool"],
    "save_every": ["int", "None"],
    "seed": ["int"],
    "self_generated": ["str", "None"],
    "self_validation_file": ["str", "None"],
    "self_weight": ["float"],
    "softmax_temperature": ["float"],
    "task": ["str"],
    "train_file": ["str", "None"],
    "uniform_negative_share": ["float"],
    "untrained_prior": ["float", "None"],
    "use_chat_template": ["bool"],
    "validation_file": ["str", "None"],
    "validation_fraction": ["float"],
    "warmup_ratio": ["float"],
    "weight_decay": ["float"],
}
"""Setting -> its declared basic types, for a head's saved ``training`` record (the flat
TrainConfig dict). A copy of what :mod:`sigmoid_head.training.config` declares, kept
here because head files are read below the training layer; ``tests/fuzz/test_round3.py``
checks that every entry agrees with the dataclasses (a setting added there and not here
is checked when a TrainConfig is built, not when a head is loaded)."""


def check_training_record(record: Any, where: str) -> None:
    """Refuse a saved ``training`` record (head_config.json) whose settings have another
    type than the setting's (``"use_chat_template": "false"``); keys that are not
    settings (history, steps, ...) are not checked here.

    Raises:
        ValueError: ``<where>: training: <key> must be ..., got ...``.
    """
    if isinstance(record, Mapping):
        check_types(record, TRAINING_TYPES, f"{where}: training")
