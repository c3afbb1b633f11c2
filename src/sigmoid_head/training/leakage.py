"""Training data that leaks into its own validation, or is trained twice: refused or counted.

A head is selected on its validation loss, so validation items that are also training items
select it on its own training data. Two checks, both before a step is taken:

* :func:`refuse_same_files`, before the model loads: a validation file (``validation_file``,
  ``labelled_validation_file``, ``self_validation_file``) that *is* a training file
  (``train_file``, ``labelled_file``, ``self_generated``), the same path, a link to it or a
  byte-identical copy, is refused in one line; so is one file given as two training files
  (``train_file`` and ``labelled_file``: every item trained twice, once as a reference with
  all its tokens good and once with its labels).
* :func:`check_overlap`, once the examples are tokenized (memory engine): a validation file
  whose every example is also a training example (same token ids) is refused, one with some
  of them gets one warning that counts them; likewise labelled examples that are also
  reference examples of ``train_file``.

A held-out split (``validation_fraction``) is not checked: it is drawn from the training
items themselves, so it shares only what the file repeats.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TRAINING = ("train_file", "labelled_file", "self_generated")
"""The settings that name training files."""
VALIDATION = ("validation_file", "labelled_validation_file", "self_validation_file")
"""The settings that name validation files."""
HELD_OUT = ("give held-out items, or leave the validation file out to hold out "
            "--validation-fraction of the training items")


def option(name: str) -> str:
    """A setting's command-line option (``labelled_file`` -> ``--labelled-file``)."""
    return "--" + name.replace("_", "-")


def _members(path: Path) -> list[Path]:
    """The files whose bytes make ``path``'s items: a WMT tags file with its ``.mt`` and
    ``.src`` beside it (the tags alone do not say which sentences they tag)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    if not name.endswith(".tags"):
        return [path]
    stem = path.with_name(name[: -len(".tags")])
    beside = [stem.with_name(stem.name + s) for s in (".mt", ".src", ".mt.gz", ".src.gz")]
    return [path, *(p for p in beside if p.is_file())]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for member in _members(path):
        h.update(member.name.rsplit(".", 1)[-1].encode() + b"\0")
        with open(member, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> str | None:
    """How ``a`` and ``b`` are one file: "the same file" (one path, a link, a hard link),
    "a copy of" (the same bytes), or None (different, or one of them is not a regular file:
    its reader names that)."""
    pa, pb = Path(a), Path(b)
    if not (pa.is_file() and pb.is_file()):
        return None
    if os.path.samefile(pa, pb):
        return "the same file as"
    if pa.stat().st_size != pb.stat().st_size:
        return None
    return "a copy of" if _digest(pa) == _digest(pb) else None


def refuse_same_files(config: Any) -> None:
    """Refuse a validation file that is a training file, and one file given as two training
    files (module docstring).

    Raises:
        ValueError: one line naming both options and files.
    """
    given = {n: getattr(config, n, None) for n in (*TRAINING, *VALIDATION)}
    for val in VALIDATION:
        for tr in TRAINING:
            how = given[val] and given[tr] and same_file(given[val], given[tr])
            if how:
                raise ValueError(
                    f"{option(val)} {given[val]} is {how} {option(tr)} {given[tr]}: the head "
                    f"would be selected on its own training data; {HELD_OUT}")
    for k, first in enumerate(TRAINING):
        for second in TRAINING[k + 1:]:
            how = given[first] and given[second] and same_file(given[first], given[second])
            if how:
                raise ValueError(
                    f"{option(second)} {given[second]} is {how} {option(first)} "
                    f"{given[first]}: every item would be trained twice (as a reference, all "
                    "its tokens good, and with its labels); give each its own items")


def example_key(example: Mapping[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """What makes two examples the same item to the head: their token ids and labels."""
    return tuple(int(t) for t in example["input_ids"]), tuple(int(t) for t in example["labels"])


def _shared(examples: Sequence[Mapping[str, Any]], keys: set) -> int:
    return sum(example_key(e) in keys for e in examples)


def check_overlap(training: Mapping[str, Sequence[Mapping[str, Any]]],
                  validation: Mapping[str, tuple[str, Sequence[Mapping[str, Any]]]]) -> None:
    """Count the validation examples that are also training examples (same token ids).

    Args:
        training: setting name -> its training examples (every part of the run).
        validation: setting name -> (the file, its examples), for each validation file given.

    Raises:
        ValueError: every example of a validation file is a training example (one line).

    A validation file with some shared examples gets one warning that counts them.
    """
    keys = {example_key(e) for part in training.values() for e in part}
    whose = "/".join(option(n) for n, part in training.items() if part)
    for name, (path, examples) in validation.items():
        n, k = len(examples), _shared(examples, keys)
        if n and k == n:
            raise ValueError(f"{option(name)} {path}: all {n} of its examples are training "
                             f"examples (the same tokens as in {whose}): the head would be "
                             f"selected on its own training data; {HELD_OUT}")
        if k:
            warn(f"{option(name)} {path}: {k} of {n} validation examples are also training "
                 f"examples (the same tokens as in {whose}): their validation loss is not "
                 "held out")


def check_mixed(train_file: str, reference: Sequence[Mapping[str, Any]], labelled_file: str,
                labelled: Sequence[Mapping[str, Any]]) -> None:
    """Count the labelled examples that are also reference examples (trained twice).

    Raises:
        ValueError: every labelled example is a reference example (one line).
    """
    keys = {example_key(e) for e in reference}
    n, k = len(labelled), _shared(labelled, keys)
    if n and k == n:
        raise ValueError(f"--labelled-file {labelled_file}: all {n} of its examples are also "
                         f"reference examples of --train-file {train_file}: each would be "
                         "trained twice (as a reference, all its tokens good, and with its "
                         "labels); give each its own items")
    if k:
        warn(f"--labelled-file {labelled_file}: {k} of {n} labelled examples are also "
             f"reference examples of --train-file {train_file} (the same tokens): they are "
             "trained twice, as references and with their labels")


def warn(message: str) -> None:
    """One warning line (``warnings.warn``; the command line prints it on one line)."""
    warnings.warn(message, UserWarning, stacklevel=3)

