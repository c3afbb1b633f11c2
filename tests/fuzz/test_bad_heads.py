"""Hostile and careless head folders, base models, extras, pushes and plugin options
(issue 26, items 5 and 8 to 10), tried as a user would: through the command line where
there is one.

Every bad case must end in a one-line error (exit 2 from the CLI, no traceback, nothing
written that a later run would trust); every valid variant must run and give finite
scores. Hypothesis then feeds arbitrary JSON to the extras' and the config's readers:
they return an object whose numbers are sound, or raise a ValueError naming the file.

The table of outcomes (cases tried, clear errors, correct runs, tracebacks, silent wrongs)
is printed by running this file::

    PYTHONPATH=src python tests/fuzz/test_bad_heads.py
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pickle
import shutil
import struct
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from sigmoid_head.cli import main as cli_main

CLEAR, OK, TRACEBACK, SILENT = "clear error", "correct run", "traceback", "silent wrong"


@dataclass(frozen=True)
class World:
    """The tiny base model (M) and a head of it (H), built once."""

    model: Path
    head: Path
    root: Path


def _test_helpers():
    """tests/conftest.py as a module of its own (its tiny model and data builders)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "sigmoid_head_fuzz_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_world(root: Path, model: Path | None = None) -> World:
    """The world in ``root``: ``model`` (default: a new tiny causal model), a head of it,
    and a small pairs file to train on."""
    from sigmoid_head.head.model import SigmoidHeadModel

    helpers = _test_helpers()
    root.mkdir(parents=True, exist_ok=True)
    if model is None:
        tok = helpers.build_tiny_tokenizer(root / "tok")
        model = root / "M"
        helpers.build_tiny_causal(tok).save_pretrained(model)
        tok.save_pretrained(model)
    SigmoidHeadModel.from_base(str(model), device="cpu").save_pretrained(root / "H")
    (root / "pairs.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in helpers.make_pairs(40)))
    return World(Path(model), root / "H", root)


def run_cli(argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of the command, in this process; an exception escaping the CLI
    counts as a traceback (exit code -1)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli_main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:  # noqa: BLE001 - that is what is measured
            traceback.print_exc(file=err)
            code = -1
    return code, err.getvalue()


def judge_refusal(code: int, err: str, *names: str) -> tuple[str, str]:
    """A bad case: a clear error is exit 2 and one line naming ``names``."""
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("Loading", "Writing"))]
    if "Traceback" in err or code not in (0, 2):
        return TRACEBACK, err[-300:]
    if code == 0:
        return SILENT, "exit 0"
    if len(lines) != 1 or not all(n in lines[0] for n in names):
        return TRACEBACK, f"not one line naming {names}: {lines}"
    return CLEAR, lines[0]


def _rows_finite(path: Path) -> bool:
    rows = [json.loads(x, parse_constant=lambda c: float("nan"))
            for x in path.read_text().splitlines()]
    return bool(rows) and all(
        isinstance(v, bool) or not isinstance(v, float) or math.isfinite(v)
        for r in rows for v in r.values())


def score(w: World, tmp: Path, head: Path | None = None, model: Path | str | None = None,
          extra: tuple[str, ...] = ()) -> tuple[int, str, Path]:
    (tmp / "in.jsonl").write_text("".join(json.dumps({"source": s, "candidate": c}) + "\n" for s, c in [
        ("la casa", "the house"), ("el perro", "the dog"), ("una mujer", "a car"),
        ("el gato", "the cat")]))
    out = tmp / "o.jsonl"
    argv = ["score", "--quiet", "--device", "cpu", "--input", str(tmp / "in.jsonl"),
            "--to-json", str(out), "--with-tokens", *extra]
    if head is not None:
        argv += ["--head", str(head)]
    if model is not None:
        argv += ["--model", str(model)]
    code, err = run_cli(argv)
    return code, err, out


# -- head folders ----------------------------------------------------------------------------

def _head_copy(w: World, tmp: Path, tensors=None, config=None, files=None) -> Path:
    head = tmp / "H"
    shutil.copytree(w.head, head)
    if tensors:
        state = load_file(str(head / "head.safetensors"))
        for name, make in tensors.items():
            state[name] = make(state["weight"])
        save_file({k: v.contiguous() for k, v in state.items()}, str(head / "head.safetensors"))
    data = json.loads((head / "head_config.json").read_text())
    data.update({"weights_sha256": None, **(config or {})})
    (head / "head_config.json").write_text(json.dumps(data))
    for name, text in (files or {}).items():
        if isinstance(text, bytes):
            (head / name).write_bytes(text)
        else:
            (head / name).write_text(text if isinstance(text, str) else json.dumps(text))
    return head


def _set(i, j, value):
    def make(w):
        w = w.clone()
        w[i, j] = value
        return w
    return make


def _column(j, value):
    def make(w):
        w = w.clone()
        w[:, j] = value
        return w
    return make


def bad_head(tensors=None, config=None, files=None, named=("H",)):
    def case(w: World, tmp: Path) -> tuple[str, str]:
        head = _head_copy(w, tmp, tensors, config, files)
        code, err, out = score(w, tmp, head, w.model)
        verdict = judge_refusal(code, err, *named)
        if verdict[0] == CLEAR and (out.exists() or Path(str(out) + ".partial").exists()):
            return SILENT, "output written although refused"
        return verdict
    return case


def good_head(tensors=None, config=None, files=None):
    def case(w: World, tmp: Path) -> tuple[str, str]:
        head = _head_copy(w, tmp, tensors, config, files)
        code, err, out = score(w, tmp, head, w.model)
        if "Traceback" in err or code not in (0, 2):
            return TRACEBACK, err[-300:]
        if code != 0:
            return SILENT, f"a valid head refused: {err.strip()[-200:]}"
        return (OK, "finite") if _rows_finite(out) else (SILENT, "non-finite scores")
    return case


V_BIAS = {"bias": True}
CAL = {"format": "sigmoid-head calibration", "version": 1, "feature": "logprob",
       "platt": {"sigmoid": [1.0, 0.5]}, "isotonic": {"sigmoid": [[-5.0, -1.0, 0.0], [0.1, 0.5, 0.9]]},
       "n": 10, "dev": {}}


def cal(**change):
    return json.dumps({k: v for k, v in {**CAL, **change}.items() if v is not None})


CASES: dict[str, dict[str, Callable[[World, Path], tuple[str, str]]]] = {
    "head weights": {
        "nan_column": bad_head({"weight": _column(3, float("nan"))}, named=("weight", "NaN")),
        "one_inf": bad_head({"weight": _set(7, 1, float("inf"))}, named=("weight",)),
        "one_neg_inf": bad_head({"weight": _set(0, 0, float("-inf"))}, named=("weight",)),
        "int32": bad_head({"weight": lambda w: w.to(torch.int32)}, named=("int32",)),
        "int64": bad_head({"weight": lambda w: w.to(torch.int64)}, named=("int64",)),
        "bool": bad_head({"weight": lambda w: w > 0}, named=("bool",)),
        "wrong_shape": bad_head({"weight": lambda w: w[:-1]}, named=("weight shape",)),
        "bias_short": bad_head({"bias": lambda w: torch.zeros(7)}, V_BIAS, named=("bias",)),
        "bias_2d": bad_head({"bias": lambda w: torch.zeros(w.shape[0], 2)}, V_BIAS, named=("bias",)),
        "bias_nan": bad_head({"bias": lambda w: torch.full((w.shape[0],), float("nan"))}, V_BIAS,
                             named=("bias",)),
        "bias_int": bad_head({"bias": lambda w: torch.zeros(w.shape[0], dtype=torch.int32)}, V_BIAS,
                             named=("bias",)),
        "bias_missing": bad_head(config=V_BIAS, named=("bias",)),
        "counts_short": bad_head({"token_counts": lambda w: torch.zeros(3)}, named=("token_counts",)),
        "counts_negative": bad_head({"token_counts": lambda w: -torch.ones(w.shape[0])},
                                    named=("token_counts",)),
        "counts_nan": bad_head({"token_counts": lambda w: torch.full((w.shape[0],), float("nan"))},
                               named=("token_counts",)),
        "valid_float16": good_head({"weight": lambda w: w.half()}),
        "valid_float64": good_head({"weight": lambda w: w.double()}),
        "valid_bias": good_head({"bias": lambda w: torch.zeros(w.shape[0])}, V_BIAS),
    },
    "head_config.json fields": {
        **{f"{k}={v!r}": bad_head(config={k: v}, named=("head_config.json", k)) for k, v in [
            ("bias", "no"), ("rank", "0"), ("rank", True), ("rank", -1), ("base_model", 5),
            ("base_model", ""), ("fingerprint", [1]), ("is_encoder_decoder", "false"),
            ("base_revision", 3), ("library_version", 1.0), ("training", [1]),
            ("vocab_size", "1000"), ("hidden_size", 0), ("weights_sha256", 7)]},
        "not_json": bad_head(files={"head_config.json": "{oops"}, named=("head_config.json",)),
        "not_object": bad_head(files={"head_config.json": "[1]"}, named=("head_config.json",)),
        "missing_fingerprint": bad_head(files={"head_config.json": json.dumps(
            {"base_model": "m", "vocab_size": 1, "hidden_size": 1})}, named=("fingerprint",)),
    },
    "calibration.json": {
        **{name: bad_head(files={"calibration.json": text}, named=("calibration.json",))
           for name, text in [
               ("platt_nan", cal(platt={"sigmoid": [float("nan"), 0]})),
               ("platt_inf", cal(platt={"sigmoid": [float("inf"), 0]})),
               ("platt_strings", cal(platt={"sigmoid": ["1", "0"]})),
               ("platt_three", cal(platt={"sigmoid": [1, 2, 3]})),
               ("platt_bool", cal(platt={"sigmoid": [True, 0]})),
               ("iso_unsorted", cal(isotonic={"sigmoid": [[0, -5, -1], [0.1, 0.5, 0.9]]})),
               ("iso_duplicate_x", cal(isotonic={"sigmoid": [[-1, -1], [0.1, 0.5]]})),
               ("iso_nan", cal(isotonic={"sigmoid": [[-5, float("nan"), 0], [0.1, 0.5, 0.9]]})),
               ("iso_y_nan", cal(isotonic={"sigmoid": [[-5, 0], [float("nan"), 0.5]]})),
               ("iso_lengths", cal(isotonic={"sigmoid": [[-5, 0], [0.1, 0.5, 0.9]]})),
               ("iso_empty", cal(isotonic={"sigmoid": [[], []]})),
               ("iso_y_above_1", cal(isotonic={"sigmoid": [[-5, 0], [0.1, 5]]})),
               ("iso_y_decreasing", cal(isotonic={"sigmoid": [[-5, 0], [0.9, 0.1]]})),
               ("iso_missing_method", cal(isotonic={})),
               ("unknown_method", cal(platt={"zzz": [1, 0]}, isotonic={"zzz": [[0], [0.5]]})),
               ("n_zero", cal(n=0)), ("n_negative", cal(n=-3)), ("n_string", cal(n="10")),
               ("n_float", cal(n=2.5)), ("missing_platt", cal(platt=None)),
               ("missing_n", cal(n=None)), ("dev_list", cal(dev=[1])),
               ("feature_other", cal(feature="prob")), ("garbage", "{not json"),
               ("array", "[1, 2]"), ("invalid_utf8", b"\xff\xfe{")]},
        "valid": good_head(files={"calibration.json": cal()}),
    },
    "error_spans.json": {
        **{name: bad_head(files={"error_spans.json": text}, named=("error_spans.json",))
           for name, text in [
               ("threshold_string", {"threshold": "0.1"}),
               ("threshold_nan", json.dumps({"threshold": float("nan")})),
               ("threshold_zero", {"threshold": 0}), ("threshold_above_1", {"threshold": 2}),
               ("min_words_float", {"min_words": 1.5}), ("min_words_bool", {"min_words": True}),
               ("min_words_zero", {"min_words": 0}), ("method_int", {"method": 3}),
               ("method_unknown", {"method": "zzz"}),
               ("major_nan", json.dumps({"major_below": float("nan")})),
               ("major_string", {"major_below": "x"}), ("major_negative", {"major_below": -1}),
               ("dev_string", {"dev": "x"}), ("array", [1]), ("garbage", "{")]},
        "valid": good_head(files={"error_spans.json": {"threshold": 0.5, "min_words": 1}}),
    },
}


# -- calibrate with bad gold spans: refused naming file:line, nothing written ------------------

def calibrate_spans(spans: list) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        head = _head_copy(w, tmp)
        code, err, dev = score(w, tmp, head, w.model)
        if code != 0:
            return TRACEBACK, f"dev scoring failed: {err[-200:]}"
        (tmp / "gold.txt").write_text("1\n0\n0\n1\n")
        gold = tmp / "spans.jsonl"
        gold.write_text("[]\n" + json.dumps(spans) + "\n[]\n[]\n")
        before = sorted(p.name for p in head.iterdir())
        code, err = run_cli(["calibrate", "--head", str(head), "--scores", str(dev),
                             "--gold", str(tmp / "gold.txt"), "--gold-spans", str(gold)])
        verdict = judge_refusal(code, err, f"{gold}:2")
        if verdict[0] == CLEAR and sorted(p.name for p in head.iterdir()) != before:
            return SILENT, "refused but wrote into the head"
        return verdict
    return case


CASES["gold spans (calibrate)"] = {
    name: calibrate_spans(spans) for name, spans in [
        ("reversed", [[5, 2]]), ("negative", [[-1, 3]]), ("past_end", [[0, 10_000]]),
        ("empty_range", [[2, 2]]), ("string", [["a", 1]]), ("float", [[0.5, 3]]),
        ("bool", [[True, 3]]), ("three_numbers", [[0, 1, 2]]), ("not_a_list", {"x": 1})]}


# -- the authors' formats ----------------------------------------------------------------------

def released(damage: str) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.head.released import save_released

        weight = load_file(str(w.head / "head.safetensors"))["weight"]
        folder = save_released(weight, tmp / "R", str(w.model))
        path, cfg = folder / "model.safetensors", json.loads((folder / "config.json").read_text())
        data = path.read_bytes()
        if damage == "header_2_62":
            path.write_bytes(struct.pack("<Q", 2**62) + data[8:])
        elif damage == "header_length_past_end":
            path.write_bytes(struct.pack("<Q", len(data)) + data[8:])
        elif damage == "offsets_2_62":
            n = struct.unpack("<Q", data[:8])[0]
            header = json.loads(data[8:8 + n])
            header["weight"]["data_offsets"] = [0, 2**62]
            text = json.dumps(header).encode()
            path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])
        elif damage == "cut":
            path.write_bytes(data[:100])
        elif damage == "garbage":
            path.write_bytes(b"garbage")
        elif damage == "int_dtype":
            save_file({"weight": weight.to(torch.int32)}, str(path))
        elif damage == "nan":
            save_file({"weight": _column(0, float("nan"))(weight)}, str(path))
        elif damage == "two_tensors":
            save_file({"weight": weight, "bias": torch.zeros(3)}, str(path))
        elif damage.startswith("config:"):
            key, value = damage.removeprefix("config:").split("=", 1)
            cfg[key] = json.loads(value)
            (folder / "config.json").write_text(json.dumps(cfg))
        model = None if damage.startswith("config:base_model") else w.model
        code, err, out = score(w, tmp, folder, model)
        if damage in VALID_RELEASED:  # valid variants: informational keys read as data
            return (OK, "ran") if code == 0 and _rows_finite(out) else (TRACEBACK, err[-300:])
        return judge_refusal(code, err)
    return case


VALID_RELEASED = ('config:auto_map="sigmoid"', "config:architectures=7")
CASES["authors' released format"] = {d: released(d) for d in [
    "header_2_62", "header_length_past_end", "offsets_2_62", "cut", "garbage", "int_dtype", "nan",
    "two_tensors", "config:vocab_size=[1]", 'config:hidden_size="32"', "config:base_model=5",
    'config:auto_map="sigmoid"', "config:architectures=7"]}


def trainer(what: str) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        weight = load_file(str(w.head / "head.safetensors"))["weight"]
        run = tmp / "output"
        ckpt = run / "checkpoint-40"
        ckpt.mkdir(parents=True)
        save_file({"weight": weight}, str(ckpt / "model.safetensors"))
        (ckpt / "trainer_state.json").write_text('{"global_step": 40}')
        (ckpt / "training_args.bin").write_bytes(pickle.dumps(_Evil(tmp)))
        if what == "valid_with_base":
            code, err, out = score(w, tmp, ckpt, w.model)
            if code == 0 and _rows_finite(out) and not (tmp / "RAN").exists():
                return OK, "loaded"
            return TRACEBACK, err[-300:]
        if what == "bad_trainer_state":
            (ckpt / "trainer_state.json").write_text("[oops")
            code, err, out = score(w, tmp, ckpt, w.model)
            return (OK, "loaded") if code == 0 else (TRACEBACK, err[-300:])
        if what == "int_weight":
            save_file({"weight": weight.to(torch.int32)}, str(ckpt / "model.safetensors"))
            return judge_refusal(*score(w, tmp, ckpt, w.model)[:2], "int32")
        target = ckpt if what == "no_base_model" else run
        return judge_refusal(*score(w, tmp, target, None if what == "no_base_model" else w.model)[:2])
    return case


CASES["authors' Trainer checkpoint"] = {k: trainer(k) for k in [
    "valid_with_base", "bad_trainer_state", "no_base_model", "output_folder", "int_weight"]}


# -- pickles -----------------------------------------------------------------------------------

class _Evil:
    def __init__(self, tmp: Path) -> None:
        self.marker = str(tmp / "RAN")

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def model_pickle(kind: str) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        folder = tmp / "M"
        shutil.copytree(w.model, folder)
        (folder / "model.safetensors").unlink()
        if kind == "evil":
            data = pickle.dumps(_Evil(tmp))
        elif kind == "garbage":
            data = b"garbage"
        else:
            buf = io.BytesIO()
            torch.save({"x": torch.ones(3)}, buf)
            data = buf.getvalue()[:200]
        (folder / "pytorch_model.bin").write_bytes(data)
        verdict = judge_refusal(*score(w, tmp, None, folder)[:2], str(folder))
        return (SILENT, "the pickle ran") if (tmp / "RAN").exists() else verdict
    return case


def state_pt(kind: str) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        out = tmp / "out"
        argv = ["train", "--train-file", str(w.root / "pairs.jsonl"), "--output-dir", str(out),
                "--model", str(w.model), "--batch-size", "8", "--eval-every", "2",
                "--validation-fraction", "0.2", "--no-progress", "--device", "cpu",
                "--keep-checkpoints"]
        code, err = run_cli([*argv, "--max-steps", "2"])
        if code != 0:
            return TRACEBACK, f"first run failed: {err[-300:]}"
        state = out / "checkpoint" / "state.pt"
        if kind == "evil":
            state.write_bytes(pickle.dumps(_Evil(tmp)))
        elif kind == "garbage":
            state.write_bytes(b"\x80\x02garbage")
        elif kind == "cut":
            state.write_bytes(state.read_bytes()[:300])
        else:
            torch.save({"head": {"weight": torch.ones(2)}}, state)
        verdict = judge_refusal(*run_cli([*argv, "--max-steps", "4"]), "state.pt")
        return (SILENT, "the pickle ran") if (tmp / "RAN").exists() else verdict
    return case


CASES["pickles"] = {
    **{f"base_model_{k}": model_pickle(k) for k in ("evil", "garbage", "cut_zip")},
    **{f"checkpoint_state_pt_{k}": state_pt(k) for k in ("evil", "garbage", "cut", "not_a_state")},
}


# -- push --------------------------------------------------------------------------------------

def push(env: dict[str, str], extra: tuple[str, ...] = ()) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        saved = {k: os.environ.get(k) for k in (*env, "HF_TOKEN")}
        os.environ.update({"HF_TOKEN": "hf_test", **env})
        try:
            return judge_refusal(*run_cli(["push", str(w.head), "tester/h", *extra]))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return case


CASES["push"] = {
    "unreachable_endpoint": push({"HF_ENDPOINT": "http://127.0.0.1:9"}),
    "offline": push({"HF_HUB_OFFLINE": "1"}),
    "bad_license": push({"HF_ENDPOINT": "http://127.0.0.1:9"}, ("--license", "mit\nevil: 1")),
    "bad_license_card_only": push({}, ("--card-only", "--license", "<b>")),
}


# -- the LM-Polygraph plugin's options ---------------------------------------------------------

def estimator(cfg: dict) -> Callable[[World, Path], tuple[str, str]]:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        try:
            from sigmoid_head.integrations.polygraph import load_estimator
        except ImportError:
            return OK, "lm-polygraph not installed (skipped)"
        try:
            load_estimator(cfg)
        except ValueError as err:
            return (CLEAR, str(err)) if "\n" not in str(err) else (TRACEBACK, str(err))
        except Exception:  # noqa: BLE001
            return TRACEBACK, traceback.format_exc()[-300:]
        return SILENT, "accepted"
    return case


CASES["polygraph load_estimator"] = {json.dumps(c): estimator(c) for c in [
    {"level": "claim"}, {"level": 3}, {"method": "entropy", "level": "token"},
    {"method": "entropy", "aggregation": "min"}, {"level": "token", "aggregation": "min"},
    {"agregation": "min"}, {"method": "zzz"}, {"aggregation": "mean"}]}

ALL = [(group, name, fn) for group, cases in CASES.items() for name, fn in cases.items()]


# -- pytest ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("group", "name", "fn"), ALL, ids=[f"{g}:{n}" for g, n, _ in ALL])
def test_case(world, tmp_path, group, name, fn):
    outcome, detail = fn(world, tmp_path)
    assert outcome in (CLEAR, OK), f"{group} / {name}: {outcome}: {detail}"


# -- hypothesis: arbitrary JSON for the readers of a head folder ------------------------------

_NUMBERS = st.one_of(st.integers(-10, 10), st.floats(allow_nan=True, allow_infinity=True),
                     st.booleans(), st.none(), st.text(max_size=3))
_JSON = st.recursive(_NUMBERS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["sigmoid", "softmax", "zzz", "platt", "isotonic", "n", "dev", "threshold", "min_words",
         "method", "major_below", "feature"]), inner, max_size=5)), max_leaves=12)
_CALIBRATION = st.fixed_dictionaries({}, optional={
    "platt": st.one_of(_JSON, st.dictionaries(st.sampled_from(["sigmoid", "softmax"]),
                                              st.lists(_NUMBERS, max_size=3), max_size=2)),
    "isotonic": st.one_of(_JSON, st.dictionaries(st.sampled_from(["sigmoid", "softmax"]), st.lists(
        st.lists(_NUMBERS, max_size=4), max_size=3), max_size=2)),
    "n": _NUMBERS, "dev": _JSON, "feature": _NUMBERS})
def _points(pairs: list[tuple[float, float]]) -> list[list[float]]:
    by_x = dict(pairs)
    return [sorted(by_x), sorted(by_x.values())]


_NEAR_VALID_CALIBRATION = st.builds(  # mostly valid: are their predictions sound?
    lambda methods, ab, points, n: {
        "platt": {m: list(ab) for m in methods},
        "isotonic": {m: _points(points) for m in methods}, "n": n},
    st.lists(st.sampled_from(["sigmoid", "softmax"]), min_size=1, max_size=2, unique=True),
    st.tuples(st.floats(-60, 60), st.floats(-1e6, 1e6)),
    st.lists(st.tuples(st.floats(-1e6, 5), st.floats(0, 1)), min_size=1, max_size=5),
    st.integers(1, 10**6))
_NEAR_VALID_CONFIG = st.builds(
    lambda base, field, value: {**base, field: value},
    st.just({"base_model": "m", "vocab_size": 8, "hidden_size": 4, "fingerprint": "f"}),
    st.sampled_from(["base_model", "vocab_size", "hidden_size", "fingerprint", "bias", "rank",
                     "training", "base_revision", "is_encoder_decoder", "library_version",
                     "weights_sha256"]),
    _JSON | st.sampled_from([True, False, 0, 2, "x", None, {}, {"lr": 1}]))
_VALID_CONFIG = st.fixed_dictionaries(  # well typed: every field must come back as read
    {"base_model": st.text(min_size=1).filter(str.strip), "vocab_size": st.integers(1, 10**6),
     "hidden_size": st.integers(1, 10**4), "fingerprint": st.text(min_size=1)},
    optional={"bias": st.booleans(), "rank": st.integers(0, 64),
              "training": st.dictionaries(st.text(max_size=5), _NUMBERS, max_size=3),
              "base_revision": st.none() | st.text(), "is_encoder_decoder": st.booleans(),
              "library_version": st.text(max_size=8), "weights_sha256": st.none() | st.text()})
_NEAR_VALID_SPANS = st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["sigmoid", "softmax", "boostedprob", "zzz"]),
    "threshold": st.floats(0, 1.2), "min_words": st.integers(0, 4),
    "major_below": st.floats(-0.1, 1.1), "dev": st.none() | st.dictionaries(st.text(max_size=3), _NUMBERS)})
_SPANS = st.fixed_dictionaries({}, optional={k: _NUMBERS for k in (
    "method", "threshold", "min_words", "major_below", "dev")})
_CONFIG = st.fixed_dictionaries({"base_model": _NUMBERS, "vocab_size": _NUMBERS,
                                 "hidden_size": _NUMBERS, "fingerprint": _NUMBERS},
                                optional={k: _JSON for k in (
                                    "bias", "rank", "training", "base_revision",
                                    "is_encoder_decoder", "library_version", "weights_sha256")})
_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TALLY: dict[str, Counter] = {}


def _tally(kind: str, outcome: str) -> None:
    TALLY.setdefault(kind, Counter())[outcome] += 1


@_FUZZ
@given(data=_CALIBRATION | _NEAR_VALID_CALIBRATION)
def test_calibration_reader_on_arbitrary_json(data):
    from sigmoid_head.evaluation.calibration import Calibrator

    try:
        c = Calibrator.from_dict(data, "H/calibration.json")
    except ValueError as err:
        assert str(err).startswith("H/calibration.json") and "\n" not in str(err)
        _tally("calibration.json (random)", CLEAR)
        return
    rows = [{f"{m}_logprob": x} for m in c.platt for x in (-50.0, -1.0, 0.0)]
    for m in c.platt:
        for kind in ("platt", "isotonic"):
            p = c.predict([r for r in rows if f"{m}_logprob" in r], m, kind)
            assert all(math.isfinite(v) and 0 <= v <= 1 for v in p), (m, kind, p)
    _tally("calibration.json (random)", OK)


@_FUZZ
@given(data=_SPANS | _NEAR_VALID_SPANS)
def test_error_spans_reader_on_arbitrary_json(data):
    from sigmoid_head.evaluation.spans import SpanConfig, find_errors

    try:
        cfg = SpanConfig.from_dict(data, "H/error_spans.json")
    except ValueError as err:
        assert str(err).startswith("H/error_spans.json") and "\n" not in str(err)
        _tally("error_spans.json (random)", CLEAR)
        return
    words = [{"word": "a", cfg.method: 0.01}, {"word": "b", cfg.method: 0.9}]
    for e in find_errors("a b", words, cfg):
        assert 0 <= e["confidence"] <= 1 and e["severity"] in ("minor", "major")
    _tally("error_spans.json (random)", OK)


@_FUZZ
@given(data=_CONFIG | _NEAR_VALID_CONFIG | _VALID_CONFIG)
def test_head_config_reader_on_arbitrary_json(data):
    from sigmoid_head.head.folder import CONFIG_FIELD_TYPES, HeadConfig

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "head_config.json"
        path.write_text(json.dumps(data))
        try:
            config = HeadConfig.from_file(path)
        except ValueError as err:
            assert str(path) in str(err) and "\n" not in str(err)
            _tally("head_config.json (random)", CLEAR)
            return
    for key, (ok, _) in CONFIG_FIELD_TYPES.items():
        assert ok(getattr(config, key)), key
    _tally("head_config.json (random)", OK)


PROPERTIES = [test_calibration_reader_on_arbitrary_json, test_error_spans_reader_on_arbitrary_json,
              test_head_config_reader_on_arbitrary_json]


# -- the table ---------------------------------------------------------------------------------

def table() -> str:
    """Run every case and property; the outcomes per class as a markdown table."""
    rows: dict[str, Counter] = {}
    failures = []
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
            if outcome not in (CLEAR, OK):
                failures.append(f"{group} / {name}: {outcome}: {detail}")
    for prop in PROPERTIES:
        try:
            prop()
        except Exception:  # noqa: BLE001 - a property that found a counterexample
            failures.append(f"{prop.__name__}: {traceback.format_exc()[-300:]}")
            TALLY.setdefault(prop.__name__, Counter())[SILENT] += 1
    rows.update(TALLY)
    cols = (CLEAR, OK, TRACEBACK, SILENT)
    lines = ["| class | cases tried | " + " | ".join(f"{c}s" for c in cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]
    total = Counter()
    for group, counts in rows.items():
        total.update(counts)
        lines.append(f"| {group} | {sum(counts.values())} | "
                     + " | ".join(str(counts[c]) for c in cols) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | "
                 + " | ".join(f"**{total[c]}**" for c in cols) + " |")
    return "\n".join(lines + [""] + failures)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    print(table())
