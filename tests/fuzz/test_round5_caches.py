"""Reliability, round 5 (issue 59): hidden-state caches that are what they claim, tried as a
careless or hostile user would (``train --cache-hidden --cache-dir``, ``--cache-from``,
``--disk-cache-dtype``).

A cache folder over the user's data, ``--cache-from`` the ``--cache-dir`` itself with a
changed setting; a model whose weights are replaced in place (the same cache, or a donor
made before); training lines reversed, one word of a labelled file changed, a shard file
deleted, cut or overwritten, another ``--dtype``; donors whose meta.json lacks a field or
whose keys.bin is short; and the valid runs (a rerun, another seed from a donor, an
interrupted fill, changed settings, an empty folder).

Every bad case must end in a clear error (exit 2, one line naming the culprit) or a right
result: a run that cannot reuse a cache recomputes what it must, with a notice saying why,
and trains the head a run without the cache trains (to rtol 1e-3, atol 1e-4: float32
storage gives the uncached training up to summation order). Outcomes: clear error, correct
run, traceback, silent wrong (a wrong head, or a rebuild without a notice), loss (user files
or a cache deleted). The table per class::

    PYTHONPATH=src python tests/fuzz/test_round5_caches.py
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).parent))
from test_bad_heads import CLEAR, OK, SILENT, TRACEBACK, World, make_world, run_cli  # noqa: E402
from test_round3 import judge_refusal  # noqa: E402

LOSS = "loss"
Case = Callable[[World, Path], tuple[str, str]]
CASES: dict[str, dict[str, Case]] = {}
RTOL, ATOL = 1e-3, 1e-4
"""How close a cached run's head must be to the uncached one (float32 storage)."""
BASE = ["--negatives", "token_freq", "--epochs", "2", "--eval-every", "3", "--batch-size", "8",
        "--lr", "3e-2", "--patience", "0", "--device", "cpu", "--no-progress"]


# -- running and judging ------------------------------------------------------------------------


@contextlib.contextmanager
def _notices():
    """The warnings the package logs meanwhile (the cache's notices), as a list of lines."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler, log = Keep(logging.WARNING), logging.getLogger("sigmoid_head")
    log.addHandler(handler)
    try:
        yield lines
    finally:
        log.removeHandler(handler)


def _train(out: Path, data: Path | None, model: Path, *extra: str, cache: Path | None = None,
           dtype: str = "float32") -> tuple[int, str, list[str]]:
    """(exit code, stderr, notices) of ``train`` into ``out``; with ``cache``, a disk cache there."""
    argv = ["train", "--model", str(model), "--output-dir", str(out), *BASE, *extra]
    if data is not None:
        argv += ["--train-file", str(data)]
    if "--validation-file" not in extra and "--labelled-validation-file" not in extra:
        argv += ["--validation-fraction", "0.25"]
    if cache is not None:
        argv += ["--cache-hidden", "--cache-dir", str(cache), "--disk-cache-dtype", dtype]
    with _notices() as lines:
        code, err = run_cli(argv)
    return code, err, lines


def _head(out: Path) -> torch.Tensor:
    return load_file(out / "head.safetensors")["weight"]


def _judge_run(code: int, err: str, out: Path, right: Path, notices: list[str] | None = None,
               *named: str) -> tuple[str, str]:
    """A run that must give the head of ``right`` (a clear refusal also passes); with
    ``named``, a notice naming each of them must have been given."""
    if code != 0:
        return judge_refusal(code, err, *named) if named else judge_refusal(code, err)
    if not torch.allclose(_head(out), _head(right), rtol=RTOL, atol=ATOL):
        diff = float((_head(out) - _head(right)).abs().max())
        return SILENT, f"exit 0, the head differs from the right one by {diff:.3g}; {notices}"
    if named and not any(all(n in line for n in named) for line in notices or []):
        return SILENT, f"right head, but no notice naming {named}: {notices}"
    return OK, (notices or ["no notice"])[0]


def _reference(w: World, tmp: Path, *extra: str, data: Path | None | str = "pairs",
               model: Path | None = None) -> Path:
    """The head a run without a cache trains on ``data`` (default: the world's pairs; None:
    no --train-file)."""
    out = tmp / "reference"
    code, err, _ = _train(out, w.root / "pairs.jsonl" if data == "pairs" else data,
                          model or w.model, *extra)
    assert code == 0, err
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _model_copy(w: World, tmp: Path) -> Path:
    shutil.copytree(w.model, tmp / "M")
    return tmp / "M"


def _replace_weights(model: Path) -> None:
    """The weights of ``model`` replaced in place by others of the same shapes (same size)."""
    path = model / "model.safetensors"
    gen = torch.Generator().manual_seed(7)
    tensors = {k: v + 0.5 * torch.randn(v.shape, generator=gen, dtype=v.dtype) if v.is_floating_point()
               else v for k, v in load_file(path).items()}
    save_file(tensors, path, metadata={"format": "pt"})


# -- 1. a cache folder over what is not a cache ------------------------------------------------


def cache_dir_over_user_data(w: World, tmp: Path) -> tuple[str, str]:
    """The issue's repro: data/train/pairs.jsonl, data/validation/pairs.jsonl, --cache-dir data."""
    data = tmp / "data"
    for part, rows in (("train", slice(0, 30)), ("validation", slice(30, 40))):
        (data / part).mkdir(parents=True)
        lines = (w.root / "pairs.jsonl").read_text().splitlines(keepends=True)[rows]
        (data / part / "pairs.jsonl").write_text("".join(lines))
    (data / "train" / "notes.txt").write_text("my notes\n")
    before = _snapshot(data)
    code, err, _ = _train(tmp / "h", data / "train" / "pairs.jsonl", w.model, "--validation-file",
                          str(data / "validation" / "pairs.jsonl"), cache=data)
    if _snapshot(data) != before:
        return LOSS, f"exit {code}; user files deleted or changed under {data}"
    return judge_refusal(code, err, str(data / "train"))


def cache_from_is_cache_dir(w: World, tmp: Path) -> tuple[str, str]:
    """--cache-dir C --cache-from C with another seed: C must not be wiped before it is read."""
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    assert code == 0, err
    before = _snapshot(tmp / "C")
    code, err, _ = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--seed", "1",
                          "--cache-from", str(tmp / "C"), cache=tmp / "C")
    if _snapshot(tmp / "C") != before:
        return LOSS, f"exit {code}; the cache C was rebuilt before --cache-from read it"
    return judge_refusal(code, err, "--cache-from", str(tmp / "C"))


CASES["cache folder over what is not a cache"] = {
    "cache_dir_over_user_data": cache_dir_over_user_data,
    "cache_from_is_the_cache_dir_changed_seed": cache_from_is_cache_dir,
}


# -- 2. a cache made by another model ---------------------------------------------------------


def weights_replaced_same_cache(w: World, tmp: Path) -> tuple[str, str]:
    model = _model_copy(w, tmp)
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", model, cache=tmp / "C")
    assert code == 0, err
    _replace_weights(model)
    right = _reference(w, tmp, model=model)
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", model, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "another model")


def weights_replaced_donor(w: World, tmp: Path) -> tuple[str, str]:
    model = _model_copy(w, tmp)
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", model, cache=tmp / "C0")
    assert code == 0, err
    _replace_weights(model)
    right = _reference(w, tmp, model=model)
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", model, "--cache-from",
                              str(tmp / "C0"), cache=tmp / "C1")
    return _judge_run(code, err, tmp / "h1", right, notes, str(tmp / "C0"))


CASES["cache made by another model"] = {
    "weights_replaced_in_place_same_cache": weights_replaced_same_cache,
    "weights_replaced_cache_from_made_before": weights_replaced_donor,
}


# -- 3. rows that are not the example's, files that are not whole ------------------------------


def _equal_length_pairs(w: World, n: int = 24) -> list[dict]:
    """``n`` pairs whose targets all have the same number of trained positions."""
    from transformers import AutoTokenizer

    from sigmoid_head.data.tokenize import tokenize_records

    tok = AutoTokenizer.from_pretrained(w.model)
    pairs = [p for p in _pairs(400)]
    examples, _ = tokenize_records(pairs, tok, is_encoder_decoder=False)
    count = [sum(1 for t in e["labels"][1:] if t != -100) for e in examples]
    common = Counter(count).most_common(1)[0][0]
    chosen = [p for p, c in zip(pairs, count, strict=True) if c == common]
    unique = list({p["source"] + "\t" + p["target"]: p for p in chosen}.values())
    assert len(unique) >= n, "not enough pairs of one length"
    return unique[:n]


def _pairs(n: int, seed: int = 0) -> list[dict]:
    from test_bad_heads import _test_helpers

    return _test_helpers().make_pairs(n, seed=seed)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def reversed_lines(w: World, tmp: Path) -> tuple[str, str]:
    """Examples of one length, the lines of their file reversed between two runs on one cache."""
    pairs = _equal_length_pairs(w)
    val = _write(tmp / "val.jsonl", _pairs(8, seed=3))
    data = _write(tmp / "a.jsonl", pairs)
    code, err, _ = _train(tmp / "h0", data, w.model, "--validation-file", str(val), cache=tmp / "C")
    assert code == 0, err
    _write(data, pairs[::-1])
    right = _reference(w, tmp, "--validation-file", str(val), data=data)
    code, err, notes = _train(tmp / "h1", data, w.model, "--validation-file", str(val),
                              cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "another text")


def _wmt(folder: Path, name: str, pairs: list[dict], seed: int) -> Path:
    """A WMT tags file: the targets as MT, about one word in four tagged BAD."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    tags = [" ".join("BAD" if rng.random() < 0.25 else "OK" for _ in p["target"].split()) for p in pairs]
    for suffix, lines in ((".src", [p["source"] for p in pairs]), (".mt", [p["target"] for p in pairs]),
                          (".tags", tags)):
        (folder / f"{name}{suffix}").write_text("".join(x + "\n" for x in lines))
    return folder / f"{name}.tags"


def labelled_word_changed(w: World, tmp: Path) -> tuple[str, str]:
    """One word of a labelled MT file changed for another of the same token count."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(w.model)
    assert len(tok(" dog", add_special_tokens=False)["input_ids"]) == len(
        tok(" cat", add_special_tokens=False)["input_ids"])
    pairs = _pairs(30, seed=5)
    gold = _wmt(tmp / "gold", "train", pairs, 1)
    dev = _wmt(tmp / "gold", "dev", _pairs(8, seed=6), 2)
    opts = ["--labelled-file", str(gold), "--labelled-validation-file", str(dev)]
    code, err, _ = _train(tmp / "h0", None, w.model, *opts, cache=tmp / "C")
    assert code == 0, err
    mt = (tmp / "gold" / "train.mt").read_text().splitlines()
    k = next(i for i, line in enumerate(mt) if " dog" in line)
    mt[k] = mt[k].replace(" dog", " cat", 1)
    (tmp / "gold" / "train.mt").write_text("".join(x + "\n" for x in mt))
    right = _reference(w, tmp, *opts, data=None)
    code, err, notes = _train(tmp / "h1", None, w.model, *opts, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "another text")


def shard_damaged(damage: Callable[[Path], None], *named: str) -> Case:
    """A first run fills the cache, ``damage`` changes C/train/hidden-0.bin, a second run
    must train the right head (with a notice naming ``named``) or refuse naming them."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
        assert code == 0, err
        damage(tmp / "C" / "train" / "hidden-0.bin")
        right = _reference(w, tmp)
        code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
        return _judge_run(code, err, tmp / "h1", right, notes, *named)

    return case


def _cut_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(path.stat().st_size))


def dtype_changed(w: World, tmp: Path) -> tuple[str, str]:
    """--dtype bfloat16, then float32, on one cache."""
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, "--dtype", "bfloat16",
                          cache=tmp / "C")
    assert code == 0, err
    right = _reference(w, tmp, "--dtype", "float32")
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--dtype", "float32",
                              cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "another model")


CASES["rows and files a reused cache must check"] = {
    "lines_reversed_equal_lengths": reversed_lines,
    "labelled_mt_one_word_changed": labelled_word_changed,
    "hidden_file_deleted": shard_damaged(lambda p: p.unlink(), "hidden-0.bin is missing"),
    "hidden_file_cut_to_half": shard_damaged(_cut_half, "hidden-0.bin holds"),
    "dtype_bfloat16_then_float32": dtype_changed,
    "hidden_file_corrupted": shard_damaged(_random_bytes, "checksum"),
}


# -- 4. damaged donors ------------------------------------------------------------------------


def damaged_donor(damage: Callable[[Path], None], *named: str) -> Case:
    """A donor cache C0, ``damage`` done to C0/train, then --cache-from C0: a clear error."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C0")
        assert code == 0, err
        damage(tmp / "C0" / "train")
        code, err, _ = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--seed", "1",
                              "--cache-from", str(tmp / "C0"), cache=tmp / "C1")
        return judge_refusal(code, err, *named)

    return case


def _drop_n_examples(folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    del meta["n_examples"]
    (folder / "meta.json").write_text(json.dumps(meta))


CASES["damaged donors"] = {
    "donor_meta_lacks_n_examples": damaged_donor(_drop_n_examples, "meta.json", "n_examples"),
    "donor_keys_bin_short": damaged_donor(lambda d: _cut_half(d / "keys.bin"), "keys.bin"),
}


# -- 5. valid runs ----------------------------------------------------------------------------


def _count_backbone() -> tuple[list[int], Callable[[], None]]:
    from sigmoid_head.lm.backbone import Backbone

    calls, original = [], Backbone.positions

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    Backbone.positions = counting

    def undo() -> None:
        Backbone.positions = original

    return calls, undo


def rerun_reuses(w: World, tmp: Path) -> tuple[str, str]:
    right = _reference(w, tmp)
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    assert code == 0, err
    calls, undo = _count_backbone()
    try:
        code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    finally:
        undo()
    if code == 0 and calls:
        return SILENT, f"the rerun ran the frozen model {len(calls)} times: {notes}"
    return _judge_run(code, err, tmp / "h1", right)


def donor_other_seed(w: World, tmp: Path) -> tuple[str, str]:
    right = _reference(w, tmp, "--seed", "1")
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C0")
    assert code == 0, err
    calls, undo = _count_backbone()
    try:
        code, err, _ = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--seed", "1",
                              "--cache-from", str(tmp / "C0"), cache=tmp / "C1")
    finally:
        undo()
    if code == 0 and calls:
        return SILENT, f"ran the frozen model {len(calls)} times instead of copying"
    return _judge_run(code, err, tmp / "h1", right)


def interrupted_fill(w: World, tmp: Path) -> tuple[str, str]:
    """Half of the examples unmarked, as a killed first epoch leaves them."""
    right = _reference(w, tmp)
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    assert code == 0, err
    filled = np.memmap(tmp / "C" / "train" / "filled.u8", np.uint8, "r+")
    filled[len(filled) // 2 :] = 0
    filled.flush()
    del filled
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right)


def float32_equals_uncached(w: World, tmp: Path) -> tuple[str, str]:
    right = _reference(w, tmp)
    code, err, notes = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h0", right)


def empty_folders(w: World, tmp: Path) -> tuple[str, str]:
    right = _reference(w, tmp)
    for part in ("train", "validation"):
        (tmp / "C" / part).mkdir(parents=True)
    code, err, notes = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h0", right)


def max_length_changed(w: World, tmp: Path) -> tuple[str, str]:
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    assert code == 0, err
    right = _reference(w, tmp, "--max-length", "24")
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--max-length", "24",
                              cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "rebuilt")


def meta_unreadable(w: World, tmp: Path) -> tuple[str, str]:
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    assert code == 0, err
    (tmp / "C" / "train" / "meta.json").write_text("{")
    right = _reference(w, tmp)
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    return _judge_run(code, err, tmp / "h1", right, notes, "meta.json")


CASES["valid runs"] = {
    "rerun_reuses_every_row": rerun_reuses,
    "cache_from_another_seed_copies": donor_other_seed,
    "interrupted_fill_resumes": interrupted_fill,
    "float32_cache_equals_no_cache": float32_equals_uncached,
    "existing_empty_cache_folders": empty_folders,
    "max_length_changed_rebuilds": max_length_changed,
    "own_meta_json_unreadable_rebuilds": meta_unreadable,
}


# -- 6. options ---------------------------------------------------------------------------------


def cache_from_no_cache(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "empty").mkdir()
    code, err, _ = _train(tmp / "h", w.root / "pairs.jsonl", w.model, "--cache-from",
                          str(tmp / "empty"), cache=tmp / "C")
    return judge_refusal(code, err, str(tmp / "empty"))


def bad_disk_dtype(w: World, tmp: Path) -> tuple[str, str]:
    code, err, _ = _train(tmp / "h", w.root / "pairs.jsonl", w.model, cache=tmp / "C", dtype="int8")
    return judge_refusal(code, err, "disk")


CASES["options"] = {
    "cache_from_a_folder_without_a_cache": cache_from_no_cache,
    "disk_cache_dtype_int8": bad_disk_dtype,
}


# -- 7. beyond the cases -----------------------------------------------------------------


def cache_dir_is_a_file(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "C").mkdir()
    (tmp / "C" / "train").write_text("not a folder\n")
    code, err, _ = _train(tmp / "h", w.root / "pairs.jsonl", w.model, cache=tmp / "C")
    if (tmp / "C" / "train").read_text() != "not a folder\n":
        return LOSS, "the file was replaced"
    return judge_refusal(code, err, str(tmp / "C" / "train"))


def donor_rows_corrupted(w: World, tmp: Path) -> tuple[str, str]:
    """A donor whose hidden-0.bin was overwritten with random bytes of its size."""
    right = _reference(w, tmp, "--seed", "1")
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C0")
    assert code == 0, err
    for part in ("train", "validation"):
        _random_bytes(tmp / "C0" / part / "hidden-0.bin")
    code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--seed", "1",
                              "--cache-from", str(tmp / "C0"), cache=tmp / "C1")
    return _judge_run(code, err, tmp / "h1", right, notes, "checksum")


def cache_dir_inside_cache_from(w: World, tmp: Path) -> tuple[str, str]:
    """The recipes' layout: every run's cache in one folder C, a new run's --cache-dir C/s1
    with --cache-from C: the other caches give their rows, its own is no donor."""
    right = _reference(w, tmp, "--seed", "1")
    code, err, _ = _train(tmp / "h0", w.root / "pairs.jsonl", w.model, cache=tmp / "C" / "s0")
    assert code == 0, err
    before = _snapshot(tmp / "C" / "s0")
    calls, undo = _count_backbone()
    try:
        code, err, notes = _train(tmp / "h1", w.root / "pairs.jsonl", w.model, "--seed", "1",
                                  "--cache-from", str(tmp / "C"), cache=tmp / "C" / "s1")
    finally:
        undo()
    if _snapshot(tmp / "C" / "s0") != before:
        return LOSS, "the donor cache C/s0 changed"
    if code == 0 and calls:
        return SILENT, f"ran the frozen model {len(calls)} times instead of copying: {notes}"
    return _judge_run(code, err, tmp / "h1", right)


def memory_cache_other_data(w: World, tmp: Path) -> tuple[str, str]:
    """train(caches=...) (the library's way to share an in-memory cache between runs) given
    the caches of a run on other data of the same lengths."""
    from sigmoid_head.data.batching import Collator, pad_id
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.training.cache import PositionCache
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train

    pairs = _equal_length_pairs(w)
    val = _write(tmp / "val.jsonl", _pairs(8, seed=3))
    files = [_write(tmp / "a.jsonl", pairs), _write(tmp / "b.jsonl", pairs[::-1])]
    base = SigmoidHeadModel.from_base(str(w.model), device="cpu")
    collate = Collator(pad_id(base.tokenizer), False)
    caches = (PositionCache(base.backbone, collate, None), PositionCache(base.backbone, collate, None))
    kw = dict(model=str(w.model), validation_file=str(val), negatives="token_freq", avoid_dominant=False,
              epochs=2, eval_every=3, batch_size=8, lr=3e-2, patience=0, device="cpu", progress=False)
    with _notices() as notes:
        train(TrainConfig(train_file=str(files[0]), output_dir=str(tmp / "h0"), **kw),
              model=SigmoidHeadModel.from_base(base.backbone), caches=caches)
        train(TrainConfig(train_file=str(files[1]), output_dir=str(tmp / "h1"), **kw),
              model=SigmoidHeadModel.from_base(base.backbone), caches=caches)
        train(TrainConfig(train_file=str(files[1]), output_dir=str(tmp / "right"), **kw),
              model=SigmoidHeadModel.from_base(base.backbone))
    return _judge_run(0, "", tmp / "h1", tmp / "right", notes, "other token ids")


CASES["beyond the issue's cases"] = {
    "cache_dir_train_is_a_file": cache_dir_is_a_file,
    "donor_rows_corrupted": donor_rows_corrupted,
    "memory_cache_reused_on_other_data": memory_cache_other_data,
    "cache_dir_inside_cache_from": cache_dir_inside_cache_from,
}

ALL = [(group, name, fn) for group, cases in CASES.items() for name, fn in cases.items()]


# -- pytest ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "name", "fn"), ALL, ids=[f"{g}:{n}" for g, n, _ in ALL])
def test_case(world, tmp_path, group, name, fn):
    outcome, detail = fn(world, tmp_path)
    assert outcome in (CLEAR, OK), f"{group} / {name}: {outcome}: {detail}"


# -- the table ---------------------------------------------------------------------------------


def table() -> str:
    """Run every case; the outcomes per class as a markdown table, then one line per case."""
    rows: dict[str, Counter] = {}
    per_case = []
    with tempfile.TemporaryDirectory() as d:
        world = make_world(Path(d) / "world")
        for k, (group, name, fn) in enumerate(ALL):
            tmp = Path(d) / f"case{k}"
            tmp.mkdir()
            try:
                outcome, detail = fn(world, tmp)
            except Exception:  # noqa: BLE001 - a case that crashed the harness
                outcome, detail = TRACEBACK, traceback.format_exc()[-300:]
            rows.setdefault(group, Counter())[outcome] += 1
            per_case.append(f"- {group} / {name}: **{outcome}**: {' '.join(str(detail).split())[:240]}")
    cols = (CLEAR, OK, TRACEBACK, SILENT, LOSS)
    lines = ["| class | cases | " + " | ".join(f"{c}s" if c != LOSS else "losses" for c in cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]
    total: Counter = Counter()
    for group, counts in rows.items():
        total.update(counts)
        lines.append(f"| {group} | {sum(counts.values())} | " + " | ".join(str(counts[c]) for c in cols) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | " + " | ".join(f"**{total[c]}**" for c in cols) + " |")
    return "\n".join(lines + [""] + per_case)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(table())
