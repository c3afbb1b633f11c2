"""Reliability, round 5 (issue 59): labelled and mixed training, and the learned quality
model, tried as a careless or hostile user would.

``train --labelled-file`` (alone and mixed with ``--train-file``): missing, odd and malformed
gold files, options that do not go together, loss weights out of range, and leakage (a
validation file that is the training file, a copy of it or shares items with it; one file as
both ``--train-file`` and ``--labelled-file``). ``calibrate --quality-model`` and the
``learned_quality`` column: a refused refit, a model copied from another head, files that
break the schema or are huge, and the valid runs.

Every bad case must end in a clear error (exit 2, one line naming the culprit), every valid
one must run and give the right result (a partial overlap: one warning line that counts it).
Outcomes: clear error, correct run, traceback, silent wrong, loss. The table per class::

    PYTHONPATH=src python tests/fuzz/test_round5_labels.py
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import shutil
import tempfile
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_bad_heads import CLEAR, OK, SILENT, TRACEBACK, World, make_world, run_cli, score
from test_round3 import judge_refusal

LOSS = "loss"
Case = Callable[[World, Path], tuple[str, str]]
CASES: dict[str, dict[str, Case]] = {}
SCORES = ("sigmoid_mean_log", "softmax_mean_log")


@functools.cache
def _helpers():
    """tests/conftest.py as a module (its pairs builder)."""
    from test_bad_heads import _test_helpers

    return _test_helpers()


# -- labelled data ---------------------------------------------------------------------------


def _items(n: int, seed: int) -> list[tuple[str, str, list[str]]]:
    """(source, MT, word labels) of ``n`` pairs, about one MT word in three swapped (BAD)."""
    from sigmoid_head.data.self_labels import word_labels

    pairs = _helpers().make_pairs(n, seed=seed)
    rng = random.Random(seed)
    vocab = sorted({w for p in pairs for w in p["target"].split()})
    out = []
    for p in pairs:
        mt = " ".join(w if rng.random() < 0.65 else rng.choice(vocab) for w in p["target"].split())
        out.append((p["source"], mt, word_labels(mt, [p["target"]])))
    return out


def _wmt(folder: Path, name: str, items: list, src: bool = True) -> Path:
    """A WMT tags file (one tag a whitespace word) with its .mt (and .src) beside."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {".mt": [m for _, m, _ in items], ".tags": [" ".join(lab) for _, _, lab in items]}
    if src:
        files[".src"] = [s for s, _, _ in items]
    for suffix, lines in files.items():
        (folder / f"{name}{suffix}").write_text("".join(x + "\n" for x in lines))
    return folder / f"{name}.tags"


def _spans(mt: str, labels: list[str]) -> list[dict]:
    from sigmoid_head.data.self_labels import words

    return [{"start": a, "end": b, "severity": "major"}
            for (_, a, b), lab in zip(words(mt), labels, strict=True) if lab == "BAD"]


def _esa(path: Path, items: list, source: bool = True) -> Path:
    """Span JSONL that is also a pairs file: source, target (the MT) and error_spans."""
    rows = [{**({"source": s} if source else {}), "target": m, "error_spans": _spans(m, lab)}
            for s, m, lab in items]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _mqm_tsv(path: Path, items: list) -> Path:
    head = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    rows = []
    for k, (s, m, lab) in enumerate(items):
        bad = [w for w, x in zip(m.split(), lab, strict=True) if x == "BAD"]
        cat, sev = ("Accuracy/Mistranslation", "Major") if bad else ("No-error", "No-error")
        marked = m.replace(bad[0], f"<v>{bad[0]}</v>", 1) if bad else m
        rows.append(f"sysA\td1\t1\t{k + 1}\tr1\t{s}\t{marked}\t{cat}\t{sev}\n")
    path.write_text(head + "".join(rows))
    return path


def _train(w: World, tmp: Path, *args: str) -> tuple[int, str, list[str]]:
    """``train`` in this process: (exit code, stderr, this library's warnings)."""
    argv = ["train", "--model", str(w.model), "--output-dir", str(tmp / "out"), "--device", "cpu",
            "--no-progress", "--max-steps", "2", "--batch-size", "8", "--max-length", "64",
            "--eval-every", "1", "--lr", "1e-3", *args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, err = run_cli(argv)
    ours = [str(x.message) for x in caught if "sigmoid_head" in x.filename]
    return code, err, ours


def _trained(tmp: Path, code: int, err: str, ours: list[str], warned: str | None = None
             ) -> tuple[str, str]:
    """A valid run: exit 0, a head saved with finite validation losses, and exactly the one
    warning that names ``warned`` (or none)."""
    if code != 0:
        return TRACEBACK, f"a valid run stopped, exit {code}: {err[-300:]}"
    cfg = json.loads((tmp / "out" / "head_config.json").read_text())
    losses = [h["val_loss"] for h in cfg["training"].get("history", [])]
    if not all(isinstance(x, float) and math.isfinite(x) for x in losses):
        return SILENT, f"validation losses {losses}"
    expect = [m for m in ours if warned and warned in m]
    if warned and len(expect) != 1:
        return SILENT, f"no single warning naming {warned!r}: {ours}"
    if not warned and any("training examples" in m or "trained twice" in m for m in ours):
        return SILENT, f"a leakage warning on clean data: {ours}"
    return OK, expect[0] if expect else f"{len(losses)} validation losses"


def refused(make: Callable[[World, Path], list[str]], *named: str) -> Case:
    """A training run that must stop with one line naming ``named``."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        code, err, _ = _train(w, tmp, *make(w, tmp))
        return judge_refusal(code, err, *named)

    return case


def runs(make: Callable[[World, Path], list[str]], warned: str | None = None) -> Case:
    """A training run that must train (with the one warning naming ``warned``)."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        return _trained(tmp, *_train(w, tmp, *make(w, tmp)), warned)

    return case


def _tags(tmp: Path, n: int = 40, seed: int = 1, **kw) -> Path:
    return _wmt(tmp / "gold", "train", _items(n, seed), **kw)


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "gold.tags")
    return tmp / "gold.tags"


def _dir(tmp: Path) -> Path:
    (tmp / "gold.tags").mkdir()
    return tmp / "gold.tags"


def _copy(path: Path, name: str) -> Path:
    """A byte-identical copy of a tags file (with its .mt and .src) under another name."""
    for suffix in (".tags", ".mt", ".src"):
        shutil.copy(path.with_suffix(suffix), path.with_name(name + suffix))
    return path.with_name(name + ".tags")


def _partial(tmp: Path) -> tuple[Path, Path]:
    """Labelled train (40 items) and dev (5 of them and 15 others)."""
    train = _items(40, 1)
    seen = {(s, m) for s, m, _ in train}
    other = [x for x in _items(60, 2) if (x[0], x[1]) not in seen][:15]
    return _wmt(tmp / "gold", "train", train), _wmt(tmp / "gold", "dev", train[:5] + other)


def _long_sources(tmp: Path) -> Path:
    items = [(" ".join(["el perro come pan"] * 40), m, lab) for _, m, lab in _items(10, 3)]
    return _wmt(tmp / "gold", "train", items)


def _bad_tags(tmp: Path) -> Path:
    path = _tags(tmp)
    lines = path.read_text().splitlines()
    lines[2] += " OK OK"
    path.write_text("\n".join(lines) + "\n")
    return path


L = "--labelled-file"
LV = "--labelled-validation-file"
CASES["train --labelled-file, mixed objective"] = {
    # bad files and options: one line naming the culprit
    "missing_file": refused(lambda w, t: [L, str(t / "none.tags")], "none.tags", "does not exist"),
    "directory": refused(lambda w, t: [L, str(_dir(t))], "gold.tags", "directory"),
    "fifo": refused(lambda w, t: [L, str(_fifo(t))], "gold.tags", "FIFO"),
    "unknown_format": refused(lambda w, t: [L, str(w.root / "pairs.jsonl")], "pairs.jsonl"),
    "format_without_source": refused(
        lambda w, t: [L, str(_tags(t)), "--labelled-format", "ragtruth"], "labelled_format"),
    "tags_without_src": refused(lambda w, t: [L, str(_tags(t, src=False))], "train.src"),
    "tags_not_matching_mt": refused(lambda w, t: [L, str(_bad_tags(t))], "train.tags"),
    "spans_without_source": refused(
        lambda w, t: [L, str(_esa(t / "g.jsonl", _items(20, 1), source=False))], "g.jsonl:1"),
    "validation_without_labelled": refused(
        lambda w, t: ["--train-file", str(w.root / "pairs.jsonl"), LV, str(_tags(t))],
        "labelled_validation_file"),
    "reference_weight_1e38": refused(
        lambda w, t: ["--train-file", str(w.root / "pairs.jsonl"), L, str(_tags(t)),
                      "--reference-weight", "1e38"], "reference_weight", "at most"),
    "reference_weight_zero": refused(
        lambda w, t: ["--train-file", str(w.root / "pairs.jsonl"), L, str(_tags(t)),
                      "--reference-weight", "0"], "reference_weight"),
    "datasets_engine": refused(
        lambda w, t: [L, str(_tags(t)), "--data-engine", "datasets"], "memory"),
    "every_item_past_max_length": refused(lambda w, t: [L, str(_long_sources(t))], "train.tags"),
    # leakage: refused when the validation data is the training data, counted when partial
    "labelled_validation_is_labelled_file": refused(
        lambda w, t: [L, str(_tags(t)), LV, str(t / "gold" / "train.tags")],
        LV, "same file"),
    "labelled_validation_is_a_copy": refused(
        lambda w, t: [L, str(_tags(t)), LV, str(_copy(_tags(t), "dev"))], LV, "copy"),
    "mixed_validation_is_train_file": refused(
        lambda w, t: ["--train-file", str(w.root / "pairs.jsonl"), "--validation-file",
                      str(w.root / "pairs.jsonl"), L, str(_tags(t))], "--validation-file"),
    "train_file_is_labelled_file": refused(
        lambda w, t: ["--train-file", str(_esa(t / "g.jsonl", _items(30, 1))),
                      L, str(t / "g.jsonl")], "--labelled-file", "trained twice"),
    "labelled_validation_shares_items": runs(
        lambda w, t: [L, str(_partial(t)[0]), LV, str(t / "gold" / "dev.tags")],
        "5 of 20 validation examples"),
    # valid runs
    "labelled_alone": runs(lambda w, t: [L, str(_tags(t)), "--validation-fraction", "0.2"]),
    "mixed_with_references": runs(
        lambda w, t: ["--train-file", str(w.root / "pairs.jsonl"), L, str(_tags(t)),
                      "--reference-weight", "0.5", "--bad-weight", "2"]),
    "google_mqm_tsv": runs(lambda w, t: [L, str(_mqm_tsv(t / "g.tsv", _items(30, 1)))]),
    "span_jsonl_with_held_out_file": runs(
        lambda w, t: [L, str(_esa(t / "g.jsonl", _items(30, 1))),
                      LV, str(_esa(t / "d.jsonl", _items(12, 9)))]),
}


# -- the learned quality model ---------------------------------------------------------------


def _head(w: World, tmp: Path, name: str = "H", perturb: bool = False) -> Path:
    """A copy of the world's head; with ``perturb``, another head (its weights moved)."""
    if not perturb:
        shutil.copytree(w.head, tmp / name)
        return tmp / name
    import torch

    from sigmoid_head.head.model import SigmoidHeadModel

    model = SigmoidHeadModel.from_pretrained(str(w.head), str(w.model), device="cpu")
    with torch.no_grad():
        model.head.weight.add_(0.01)
    model.save_pretrained(tmp / name)
    return tmp / name


def _dev(w: World, tmp: Path, head: Path, informative: bool = True) -> list[str]:
    """calibrate's options for 60 dev rows (the head's real rows, jittered) and a quality
    made of two of their scores (``informative``) or equal to one (the fit cannot beat it)."""
    import numpy as np

    code, err, out = score(w, tmp, head, w.model)
    assert code == 0, err
    base = [json.loads(x) for x in out.read_text().splitlines()]
    rng = np.random.default_rng(0)
    rows, quality = [], []
    for i in range(60):
        r = {k: v for k, v in base[i % len(base)].items() if k not in ("tokens", "words")}
        for k in SCORES + ("softmax_min", "entropy_mean"):
            r[k] = float(r[k]) * math.exp(rng.normal()) if k.endswith("_min") else float(r[k]) + rng.normal()
        rows.append(r)
        q = r["sigmoid_mean_log"] + r["softmax_mean_log"] + 0.1 * rng.normal()
        quality.append(q if informative else r["softmax_mean_log"])
    (tmp / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "q.txt").write_text("".join(f"{q}\n" for q in quality))
    return ["calibrate", "--head", str(head), "--scores", str(tmp / "dev.jsonl"),
            "--quality", str(tmp / "q.txt"), "--quality-model"]


def _learned(w: World, tmp: Path, head: Path) -> tuple[int, str, list[dict]]:
    code, err, out = score(w, tmp, head, w.model)
    rows = [json.loads(x) for x in out.read_text().splitlines()] if code == 0 else []
    return code, err, rows


def _sha(head: Path) -> str:
    return json.loads((head / "head_config.json").read_text())["weights_sha256"]


def _model_json(head: Path, **change) -> dict:
    """A valid quality_model.json object for ``head``, with ``change`` applied."""
    data = {"features": list(SCORES), "mean": [-2.0, -2.0], "scale": [0.5, 0.5],
            "coef": [1.0, 0.5], "intercept": 0.1, "alpha": 1.0, "dev": {"n": 60},
            "head_sha256": _sha(head)}
    data.update(change)
    return {k: v for k, v in data.items() if v is not None}


def broken(**change) -> Case:
    """A quality_model.json that breaks the schema: score must refuse it in one line."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        head = _head(w, tmp)
        (head / "quality_model.json").write_text(json.dumps(_model_json(head, **change)))
        code, err, rows = _learned(w, tmp, head)
        if code == 0 and rows and "learned_quality" in rows[0]:
            return SILENT, f"applied: learned_quality {rows[0]['learned_quality']}"
        return judge_refusal(code, err, "quality_model.json")

    return case


def _huge(w: World, tmp: Path) -> tuple[str, str]:
    head = _head(w, tmp)
    n = 60_000  # about 2.5 MB of names that look like features, and their numbers
    names = [f"m{i}_mean_log" for i in range(n)]
    data = _model_json(head, features=names, mean=[0.0] * n, scale=[1.0] * n, coef=[0.0] * n)
    (head / "quality_model.json").write_text(json.dumps(data))
    code, err, rows = _learned(w, tmp, head)
    if code == 0:
        return SILENT, f"{(head / 'quality_model.json').stat().st_size} bytes read"
    return judge_refusal(code, err, "quality_model.json", "bytes")


def _refit_refused(w: World, tmp: Path) -> tuple[str, str]:
    head = _head(w, tmp)
    code, err = run_cli(_dev(w, tmp, head))
    if code != 0 or not (head / "quality_model.json").is_file():
        return TRACEBACK, f"the first fit was not saved: {err[-200:]}"
    code, err = run_cli(_dev(w, tmp, head, informative=False))  # "not saved"
    if code != 0:
        return TRACEBACK, err[-300:]
    code, err, rows = _learned(w, tmp, head)
    if any("learned_quality" in r for r in rows) or (head / "quality_model.json").exists():
        return SILENT, "the old quality model is still applied after a refused refit"
    return OK, "removed"


def _from_other_head(w: World, tmp: Path) -> tuple[str, str]:
    other = _head(w, tmp, "H2", perturb=True)
    code, err = run_cli(_dev(w, tmp, other))
    if code != 0 or not (other / "quality_model.json").is_file():
        return TRACEBACK, f"the fit was not saved: {err[-200:]}"
    head = _head(w, tmp)
    shutil.copy(other / "quality_model.json", head / "quality_model.json")
    code, err, rows = _learned(w, tmp, head)
    if code == 0:
        return SILENT, "applied to a head it was not fitted for"
    return judge_refusal(code, err, "quality_model.json", "another head")


def _fitted_and_applied(w: World, tmp: Path) -> tuple[str, str]:
    from sigmoid_head.evaluation.quality_model import QualityModel

    head = _head(w, tmp)
    code, err = run_cli(_dev(w, tmp, head))
    saved = QualityModel.load(head) if code == 0 else None
    if saved is None or getattr(saved, "head_sha256", None) != _sha(head):
        return SILENT, "not saved, or not tied to its head"
    code, err, rows = _learned(w, tmp, head)
    want = saved.predict(rows) if code == 0 else []
    ok = code == 0 and all(abs(r["learned_quality"] - v) < 1e-9 for r, v in zip(rows, want, strict=True))
    return (OK, "applied to every row") if ok else (SILENT, err[-300:])


class _Loaded:
    """What :meth:`Explanations.load` reads of a loaded head: its extras, source and config."""

    def __init__(self, head: Path, data: dict) -> None:
        self.extras = {"quality_model.json": data}
        self.source = str(head)
        self.config = type("Config", (), {"weights_sha256": _sha(head)})()


def _apply(head: Path, data: dict) -> tuple[list[dict], list[str]]:
    """The model ``data`` applied to two rows as score applies it: (rows, notices)."""
    from sigmoid_head.scoring.corpus import Explanations

    ex = Explanations.load(_Loaded(head, data), "score")
    rows = [{"sigmoid_mean_log": -1.0, "softmax_mean_log": -1.5} for _ in range(2)]
    ex.apply(rows, keep_tokens=False)
    return rows, ex.notices()


def _lacking_feature(w: World, tmp: Path) -> tuple[str, str]:
    head = _head(w, tmp)
    rows, notes = _apply(head, _model_json(head, features=["sigmoid_mean_log", "rauq_mean_log"]))
    if any("learned_quality" in r for r in rows) or not any("rauq_mean_log (2)" in n for n in notes):
        return SILENT, f"{rows} {notes}"
    return OK, "no learned_quality, one notice naming the feature"


def _legacy_file(w: World, tmp: Path) -> tuple[str, str]:
    head = _head(w, tmp)
    rows, notes = _apply(head, _model_json(head, head_sha256=None))
    if not all("learned_quality" in r for r in rows):
        return SILENT, "a model written before the head was recorded was dropped"
    if not any("unchecked" in n for n in notes):
        return SILENT, "a model that names no head applied without a word"
    return OK, "applied, with a notice that it is unchecked"


def _calibrate_without_quality(w: World, tmp: Path) -> tuple[str, str]:
    head = _head(w, tmp)
    argv = _dev(w, tmp, head)
    argv[argv.index("--quality")] = "--gold-spans"
    return judge_refusal(*run_cli(argv), "--quality-model needs --quality")


CASES["calibrate --quality-model, the learned-quality column"] = {
    "refused_refit_leaves_no_old_model": _refit_refused,
    "copied_from_another_head": _from_other_head,
    "coefficient_string": broken(coef=["0.5", 0.5]),
    "coefficient_bool": broken(coef=[True, 0.5]),
    "features_a_string": broken(features="softmax_min", mean=[0.0] * 11, scale=[1.0] * 11,
                                coef=[0.1] * 11),
    "unknown_feature": broken(features=["sigmoid_mean_log", "source"]),
    "huge_file": _huge,
    "coefficient_null": broken(coef=[None, 0.5]),
    "fitted_and_applied": _fitted_and_applied,
    "rows_lacking_a_feature": _lacking_feature,
    "legacy_file_names_no_head": _legacy_file,
    "quality_model_without_quality": _calibrate_without_quality,
}

ALL = [(group, name, fn) for group, cases in CASES.items() for name, fn in cases.items()]


# -- pytest ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "name", "fn"), ALL, ids=[f"{g.split()[0]}:{n}" for g, n, _ in ALL])
def test_case(world, tmp_path, group, name, fn):
    outcome, detail = fn(world, tmp_path)
    assert outcome in (CLEAR, OK), f"{group} / {name}: {outcome}: {detail}"


@pytest.mark.parametrize("kind", ["self_generated", "datasets_engine", "hard_link"])
def test_a_validation_file_that_is_a_training_file_is_refused_before_the_model_loads(
        tmp_path, kind):
    """The other validation files too, whatever the engine: refused before any model is
    read (the model named here does not exist)."""
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in _helpers().make_pairs(20)))
    kw: dict = {"train_file": str(pairs), "validation_file": str(pairs)}
    if kind == "self_generated":
        own = tmp_path / "own.jsonl"
        own.write_text(json.dumps({"source": "la casa", "target": "the house",
                                   "word_labels": ["OK", "OK"]}) + "\n")
        kw = {"train_file": str(pairs), "self_generated": str(own),
              "self_validation_file": str(own)}
    elif kind == "datasets_engine":
        kw["data_engine"] = "datasets"
    else:
        os.link(pairs, tmp_path / "dev.jsonl")
        kw["validation_file"] = str(tmp_path / "dev.jsonl")
    config = TrainConfig(output_dir=str(tmp_path / "out"), model=str(tmp_path / "no-model"),
                         device="cpu", progress=False, **kw)
    with pytest.raises(ValueError, match="same file as .*its own training data"):
        train(config)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(
        ["0.5", "sigmoid_mean_log", "softmax_min", "n_tokens", "combined_log", "a" * 64]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12)
_KEYS = ("features", "mean", "scale", "coef", "intercept", "alpha", "dev", "head_sha256")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=8))
@example({"features": "softmax_min", "mean": [0.0] * 11, "scale": [1.0] * 11,
          "coef": [0.0] * 11, "intercept": 0.0, "alpha": 1.0})
@example({"features": ["sigmoid_mean_log"], "mean": ["0.5"], "scale": [True], "coef": [1],
          "intercept": 0, "alpha": 1})
def test_the_quality_model_reader_on_arbitrary_json(data):
    """Any JSON object as quality_model.json: a model of known features and finite float
    numbers, or one ValueError line naming the file."""
    from sigmoid_head.evaluation.quality_model import EXTRA, NOT_FEATURES, SUFFIXES, QualityModel

    def is_feature(f: object) -> bool:
        return isinstance(f, str) and (f.endswith(SUFFIXES) or f in EXTRA) and not f.startswith(NOT_FEATURES)

    try:
        model = QualityModel.from_dict(data, "H/quality_model.json")
    except ValueError as err:
        assert str(err).startswith("H/quality_model.json: ") and "\n" not in str(err)
        return
    assert model.features and all(is_feature(f) for f in model.features)
    numbers = (*model.mean, *model.scale, *model.coef, model.intercept, model.alpha)
    assert all(type(x) is float and math.isfinite(x) for x in numbers)
    assert all(data[k] is not True and data[k] is not False for k in ("intercept", "alpha"))


# -- the table ---------------------------------------------------------------------------------


def table() -> str:
    """Run every case; the outcomes per class as a markdown table, then one line per case."""
    rows: dict[str, Counter] = {}
    lines_per_case = []
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
            lines_per_case.append(f"- {group} / {name}: {outcome}: {' '.join(detail.split())[:160]}")
    cols = (CLEAR, OK, TRACEBACK, SILENT, LOSS)
    lines = ["| surface | cases | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    total: Counter = Counter()
    for group, counts in rows.items():
        total.update(counts)
        lines.append(f"| {group} | {sum(counts.values())} | "
                     + " | ".join(str(counts[c]) for c in cols) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | "
                 + " | ".join(f"**{total[c]}**" for c in cols) + " |")
    return "\n".join(lines + [""] + lines_per_case)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(table())
