"""Reliability and security, round 4 (issue 50), tried as a hostile user would: config files
that hang, eat memory or are read other than meant, outputs over the config file, plugins
that break rows, the human-label harness and tables on bad sets and options, Mu-SHROOM and
evaluate edge cases, repeated and absurd thread counts, a replaced score file, an all-NaN
selection score.

Every bad case must end in a clear error (one line naming the culprit, nothing lost), every
valid one must run and give the right result. The table of outcomes per class is printed
by::

    PYTHONPATH=src python tests/fuzz/test_round4.py
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from test_bad_heads import CLEAR, OK, SILENT, TRACEBACK, World, make_world, run_cli
from test_round3 import judge_refusal

import sigmoid_head

Case = Callable[[World, Path], tuple[str, str]]
HANG = "hang"
ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "human_qe"
FIXTURE = ROOT / "tests" / "data" / "head_v0_1_0"
SRC = Path(sigmoid_head.__file__).resolve().parents[1]
"""The code under test (PYTHONPATH picks it), given to every child process."""
CASES: dict[str, dict[str, Case]] = {}


def _child(
    argv: list[str], timeout: float = 60, memory: int = 3 << 30, script: str | None = None
) -> tuple[int | None, str, str]:
    """(exit code or None when it ran past ``timeout``, stdout, stderr) of the CLI in a
    fresh interpreter with its address space capped at ``memory`` bytes."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    head = ["-c", script] if script else ["-m", "sigmoid_head.cli"]
    try:
        done = subprocess.run(
            [sys.executable, *head, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            preexec_fn=cap,
        )
    except subprocess.TimeoutExpired:
        return None, "", ""
    return done.returncode, done.stdout, done.stderr


def _eval_files(tmp: Path) -> list[str]:
    """A small, valid evaluate input: scores and 0/1 gold of 6 rows."""
    rows = [
        {"candidate": f"c{i}", "softmax": 0.1 * (i + 1), "softmax_mean_log": -0.1 * i}
        for i in range(6)
    ]
    (tmp / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "g.txt").write_text("0\n1\n0\n1\n1\n0\n")
    return ["--scores", str(tmp / "s.jsonl"), "--gold", str(tmp / "g.txt")]


# -- 1. config files that hang or eat memory ------------------------------------------------


def _bomb(key: str, levels: int = 9) -> str:
    lines = [
        'l0: &l0 ["xxxxxxxx","xxxxxxxx","xxxxxxxx","xxxxxxxx","xxxxxxxx","xxxxxxxx",'
        '"xxxxxxxx","xxxxxxxx","xxxxxxxx"]'
    ]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\n{key}: *l{levels - 1}\n"


def config_child(name: str, make: Callable[[Path], Path]) -> Case:
    """A config file given to evaluate in a child process (30 s, 3 GiB): a clear error."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        cfg = make(tmp)
        code, _, err = _child(["evaluate", "--config", str(cfg), *_eval_files(tmp)], 30)
        if code is None:
            return HANG, "still running after 30 s"
        return judge_refusal(code, err, cfg.name)

    return case


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "c.yaml")
    return tmp / "c.yaml"


def _zero(tmp: Path) -> Path:
    (tmp / "c.yaml").symlink_to("/dev/zero")
    return tmp / "c.yaml"


def _write(name: str, text: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / name).write_text(text)
        return tmp / name

    return make


def config_refused(name: str, text: str, *named: str) -> Case:
    """A config file evaluate must refuse in one line naming the file and ``named``."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        (tmp / name).write_text(text)
        code, err = run_cli(["evaluate", "--config", str(tmp / name), *_eval_files(tmp)])
        return judge_refusal(code, err, name, *named)

    return case


CASES["config hangs"] = {
    "alias_bomb_value": config_child("bomb", _write("c.yaml", _bomb("n-boot"))),
    "alias_bomb_threads": config_child("bomb", _write("c.yaml", _bomb("threads"))),
    "fifo": config_child("fifo", _fifo),
    "link_to_dev_zero": config_child("zero", _zero),
    "yaml_nested_50k": config_refused("c.yaml", "n-boot: " + "[" * 50_000 + "]" * 50_000 + "\n"),
    "json_nested_50k": config_refused("c.json", '{"n-boot": ' + "[" * 50_000 + "]" * 50_000 + "}"),
}


# -- 2. config files read wrongly ------------------------------------------------------------


def config_value(text: str, dest: str, expected, suffix: str = ".yaml") -> Case:
    """A config file whose value of ``dest`` must be ``expected`` (as the flag reads it)."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.cli import _subparser, build_parser
        from sigmoid_head.cli.options import apply_config, read_config

        path = tmp / f"c{suffix}"
        path.write_text(text)
        parser = build_parser(["evaluate"])
        try:
            apply_config(
                _subparser(parser, "evaluate"), str(path), read_config(str(path)), "evaluate"
            )
        except ValueError as err:
            return SILENT, f"refused a valid file: {err}"
        got = getattr(parser.parse_args(["evaluate", "--scores", "s", "--gold", "g"]), dest)
        return (OK, f"{dest}={got!r}") if got == expected else (SILENT, f"{dest}={got!r}")

    return case


def empty_config_name(w: World, tmp: Path) -> tuple[str, str]:
    code, err = run_cli(["evaluate", "--config", "", *_eval_files(tmp), "--no-ci"])
    return judge_refusal(code, err, "--config")


CASES["config read"] = {
    "duplicate_key_yaml": config_refused("c.yaml", "n-boot: 10\nn-boot: 20\n", "n-boot", "twice"),
    "duplicate_key_json": config_refused(
        "c.json", '{"n-boot": 10, "n-boot": 20}', "n-boot", "twice"
    ),
    "empty_name": empty_config_name,
    "yaml11_octal_010": config_value("n-boot: 010\n", "n_boot", 10),
    "yaml11_sexagesimal": config_refused("c.yaml", "n-boot: 1:30\n", "n-boot"),
    "yaml11_hex": config_refused("c.yaml", "n-boot: 0x1A\n", "n-boot"),
    "yaml11_yes": config_refused("c.yaml", "ci: yes\n", "ci"),
    "python_tag": config_refused("c.yaml", "n-boot: !!python/object/apply:os.getpid []\n", "tag"),
    "json_brackets_in_a_string": config_value(
        '{"groups": "' + "[" * 40 + '"}', "groups", "[" * 40, ".json"
    ),
    "valid_yaml": config_value("n-boot: 77\nci: false\n", "n_boot", 77),
    "valid_quoted_string": config_value('groups: "010"\n', "groups", "010"),
}


# -- 3. outputs over the config file ---------------------------------------------------------


def _intact(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text() == text


def score_over_config(w: World, tmp: Path) -> tuple[str, str]:
    cfg, text = tmp / "c.json", '{"quiet": true}'
    cfg.write_text(text)
    (tmp / "in.jsonl").write_text('{"source": "a", "candidate": "b"}\n')
    code, err = run_cli(
        [
            "score",
            "--config",
            str(cfg),
            "--model",
            str(w.model),
            "--device",
            "cpu",
            "--input",
            str(tmp / "in.jsonl"),
            "--to-json",
            str(cfg),
        ]
    )
    verdict = judge_refusal(code, err, "--config")
    return verdict if _intact(cfg, text) else (SILENT, "the config file was overwritten")


def self_label_over_config(w: World, tmp: Path) -> tuple[str, str]:
    cfg, text = tmp / "c.yaml", "max-sources: 2\n"
    cfg.write_text(text)
    code, err = run_cli(
        [
            "self-label",
            "--config",
            str(cfg),
            "--train-file",
            str(w.root / "pairs.jsonl"),
            "--model",
            str(w.model),
            "--device",
            "cpu",
            "-o",
            str(cfg),
        ]
    )
    verdict = judge_refusal(code, err, "--config")
    return verdict if _intact(cfg, text) else (SILENT, "the config file was overwritten")


def out_dir_over_config(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "out").mkdir()
    cfg, text = tmp / "out" / "results.json", '{"no-ci": true}'
    cfg.write_text(text)
    code, err = run_cli(
        ["evaluate", "--config", str(cfg), *_eval_files(tmp), "--out-dir", str(tmp / "out")]
    )
    verdict = judge_refusal(code, err, "--config")
    return verdict if _intact(cfg, text) else (SILENT, "the config file was overwritten")


CASES["config overlap"] = {
    "score_to_json": score_over_config,
    "self_label_output": self_label_over_config,
    "evaluate_out_dir": out_dir_over_config,
}


# -- 4. plugins ----------------------------------------------------------------------------


def _top(rows):
    return rows.logp.max(-1).values


def refused_registration(make: Callable[[], None], *named: str) -> Case:
    """A registration the contract refuses (ValueError naming ``named``); if it went
    through, it is undone."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.registry import columns, methods

        before = set(methods.METHODS), set(columns.COLUMNS)
        try:
            make()
        except ValueError as err:
            ok = all(n in str(err) for n in named)
            return (CLEAR, str(err)) if ok else (SILENT, f"not naming {named}: {err}")
        finally:
            for n in set(methods.METHODS) - before[0]:
                del methods.METHODS[n]
            for n in set(columns.COLUMNS) - before[1]:
                del columns.COLUMNS[n]
        return SILENT, "registered"

    return case


def _method(name: str, unit: str = "log", fn=_top):
    def make() -> None:
        from sigmoid_head.registry.methods import Method, register

        register(Method(name, reads="lm_logits", token_values=fn, token_unit=unit))

    return make


def _column(name: str, compute, rng: str = "[0, 1]", commands=("score", "generate")):
    def make() -> None:
        from sigmoid_head.registry.columns import HIGHER_BETTER, SEQUENCE, Column, register

        register(
            Column(
                name,
                SEQUENCE,
                HIGHER_BETTER,
                rng,
                "a plugin's score",
                compute=compute,
                commands=commands,
            )
        )

    return make


def _score(w: World, tmp: Path, *extra: str) -> tuple[int, str, Path]:
    (tmp / "in.jsonl").write_text(
        "".join(
            json.dumps({"source": s, "candidate": c}) + "\n"
            for s, c in [("la casa", "the house"), ("el perro", "the dog")]
        )
    )
    out = tmp / "o.jsonl"
    code, err = run_cli(
        [
            "score",
            "--quiet",
            "--device",
            "cpu",
            "--model",
            str(w.model),
            "--input",
            str(tmp / "in.jsonl"),
            "--to-json",
            str(out),
            *extra,
        ]
    )
    return code, err, out


def plugin_scored(make: Callable[[], None], name: str, ok: bool, *named: str) -> Case:
    """Score with a registered plugin: refused naming ``name`` (``ok`` False) or scored
    with its column in every row (``ok`` True)."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.registry import columns, methods

        before = set(methods.METHODS), set(columns.COLUMNS)
        try:
            make()
            code, err, out = _score(w, tmp)
        finally:
            for n in set(methods.METHODS) - before[0]:
                del methods.METHODS[n]
            for n in set(columns.COLUMNS) - before[1]:
                del columns.COLUMNS[n]
        if not ok:
            verdict = judge_refusal(code, err, name, *named)
            wrote = out.exists() and out.read_text().strip()
            return verdict if not wrote else (SILENT, "rows written")
        if code != 0:
            return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        good = len(rows) == 2 and all(isinstance(r.get(name), float) for r in rows)
        return (OK, "scored") if good else (SILENT, f"rows: {rows[:1]}")

    return case


class _EntryPoint:
    def __init__(self, name: str, load: Callable[[], object]) -> None:
        self.name, self.value, self._load = name, f"{name}:setup", load

    def load(self) -> object:
        return self._load()


def with_entry_points(eps: list[_EntryPoint], fn: Callable[[], tuple[str, str]]) -> tuple[str, str]:
    """Run ``fn`` with ``eps`` as the installed plugins (loaded afresh), then undo it all."""
    import importlib.metadata as md

    from sigmoid_head.registry import columns, methods

    real, before = md.entry_points, (set(methods.METHODS), set(columns.COLUMNS))
    md.entry_points = lambda group=None, **k: eps if group == methods.ENTRY_POINT_GROUP else []
    methods._plugins["loaded"] = False
    try:
        return fn()
    finally:
        md.entry_points = real
        methods._plugins["loaded"] = True
        for n in set(methods.METHODS) - before[0]:
            del methods.METHODS[n]
        for n in set(columns.COLUMNS) - before[1]:
            del columns.COLUMNS[n]


def registers_then_raises(w: World, tmp: Path) -> tuple[str, str]:
    def load():
        _method("halfplug")()
        raise RuntimeError("broken after registering")

    def run() -> tuple[str, str]:
        import warnings

        from sigmoid_head.registry import methods

        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            methods.load_plugins()
        if "halfplug" in methods.METHODS:
            return SILENT, "reported not loaded, but its method is registered"
        said = [str(x.message) for x in seen if "halfplug" in str(x.message)]
        return (CLEAR, said[0]) if said else (SILENT, "no warning")

    return with_entry_points([_EntryPoint("halfplug", load)], run)


def base_exception_at_load(exc: BaseException, expect_code: int) -> Case:
    """A plugin raising ``exc`` while loading: SystemExit is a warning and the command
    runs on (rows written); KeyboardInterrupt is one line naming the plugin, exit 130."""

    def case(w: World, tmp: Path) -> tuple[str, str]:
        def load():
            raise exc

        def run() -> tuple[str, str]:
            import warnings

            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                code, err, out = _score(w, tmp)
            err += "".join(f"{x.message}\n" for x in seen)
            if "Traceback" in err:
                return TRACEBACK, err[-300:]
            lines = [x for x in err.splitlines() if x.strip()]
            named = [x for x in lines if "badplug" in x]
            if code != expect_code or not named:
                return SILENT, f"exit {code}: {lines[-2:]}"
            if expect_code == 0 and not (out.exists() and out.read_text().strip()):
                return SILENT, "exit 0 with nothing written"
            return CLEAR, named[0]

        return with_entry_points([_EntryPoint("badplug", load)], run)

    return case


NOISY = """
import importlib.metadata as md, os, sys

def tok(rows):
    os.write(1, b"raw bytes on fd 1\\n")
    print("a print during scoring")
    return rows.logp.max(-1).values

def setup():
    from sigmoid_head.registry.methods import Method, register
    register(Method("noisyplug", reads="lm_logits", token_values=tok))

class EP:
    name, value = "noisyplug", "noisyplug:setup"
    def load(self):
        print("a print at import")
        os.write(1, b"raw bytes at import\\n")
        return setup

md.entry_points = lambda group=None, **k: [EP()] if group == "sigmoid_head.methods" else []
from sigmoid_head.cli import main
sys.exit(main(sys.argv[1:]))
"""


def stdout_isolated(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "in.jsonl").write_text('{"source": "la casa", "candidate": "the house"}\n')
    code, out, err = _child(
        [
            "score",
            "--model",
            str(w.model),
            "--device",
            "cpu",
            "--input",
            str(tmp / "in.jsonl"),
            "--to-json",
            "/dev/stdout",
        ],
        300,
        script=NOISY,
    )
    if code != 0:
        return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
    try:
        rows = [json.loads(x) for x in out.splitlines() if x.strip()]
    except ValueError:
        return SILENT, f"stdout is not JSON lines: {out[:120]!r}"
    ok = len(rows) == 1 and "noisyplug" in rows[0] and "a print" in err
    return (OK, "stdout holds the rows alone") if ok else (SILENT, f"{rows} / {err[-200:]}")


def _const(value):
    def fn(rows):
        import torch

        return torch.full((rows.targets.shape[0],), value)

    return fn


def _shaped(kind: str):
    def fn(rows):
        import numpy as np
        import torch

        n = rows.targets.shape[0]
        logp = rows.logp.max(-1).values
        return {
            "short": logp[: n - 1],
            "zero_d": logp.sum(),
            "numpy": logp.numpy(),
            "list": logp.tolist(),
            "strings": ["a"] * n,
            "2d": logp[:, None],
            "complex": torch.zeros(n, dtype=torch.complex64),
            "np_str": np.array(["x"] * n),
            "bool": torch.ones(n, dtype=torch.bool),
        }[kind]

    return fn


def _baseline(value):
    return lambda inputs: [value] * len(inputs.rows)


CASES["plugins"] = {
    "empty_name": refused_registration(_method(""), "name"),
    "colon_name": refused_registration(_method("sigmoid:x"), "sigmoid:x"),
    "reserved_suffix": refused_registration(_method("judge_min"), "judge_min"),
    "clash_combined": refused_registration(_method("combined"), "combined"),
    "clash_entropy_mean": refused_registration(_method("entropy_mean"), "entropy_mean"),
    "clash_token_field": refused_registration(_method("entropy", "probability"), "entropy"),
    "column_clash_method_key": refused_registration(
        _column("softmax_min", _baseline(0.5)), "softmax_min"
    ),
    "column_empty_name": refused_registration(_column("", _baseline(0.5)), "name"),
    "registers_then_raises": registers_then_raises,
    "system_exit_at_import": base_exception_at_load(SystemExit(0), 0),
    "keyboard_interrupt_in_setup": base_exception_at_load(KeyboardInterrupt(), 130),
    "stdout_print_and_os_write": stdout_isolated,
    "probability_2": plugin_scored(_method("p2", "probability", _const(2.0)), "p2", False, "range"),
    "probability_negative": plugin_scored(
        _method("pneg", "probability", _const(-0.5)), "pneg", False, "range"
    ),
    "log_prob_positive": plugin_scored(_method("lpos", "log", _const(0.5)), "lpos", False, "range"),
    "nan_values": plugin_scored(
        _method("pnan", "probability", _const(float("nan"))), "pnan", False, "non-finite"
    ),
    "wrong_length": plugin_scored(_method("short", fn=_shaped("short")), "short", False, "shape"),
    "zero_d": plugin_scored(_method("zerod", fn=_shaped("zero_d")), "zerod", False, "shape"),
    "two_d": plugin_scored(_method("twod", fn=_shaped("2d")), "twod", False, "shape"),
    "strings": plugin_scored(_method("strs", fn=_shaped("strings")), "strs", False),
    "numpy_strings": plugin_scored(_method("npstr", fn=_shaped("np_str")), "npstr", False),
    "complex": plugin_scored(_method("cplx", fn=_shaped("complex")), "cplx", False),
    "bool": plugin_scored(_method("bools", fn=_shaped("bool")), "bools", False),
    "numpy_valid": plugin_scored(_method("npok", fn=_shaped("numpy")), "npok", True),
    "list_valid": plugin_scored(_method("listok", fn=_shaped("list")), "listok", True),
    "baseline_strings": plugin_scored(_column("strjudge", _baseline("good")), "strjudge", False),
    "baseline_out_of_range": plugin_scored(
        _column("bigjudge", _baseline(2.0)), "bigjudge", False, "range"
    ),
    "baseline_wrong_count": plugin_scored(
        _column("fewjudge", lambda i: [0.5]), "fewjudge", False, "rows"
    ),
    "baseline_valid": plugin_scored(_column("okjudge", _baseline(0.25)), "okjudge", True),
}


# -- 5. the harness on bad sets and options ----------------------------------------------


def _load(name: str):
    return importlib.import_module(f"recipes.human_qe.{name}")


def _gold(name: str, split: str, n: int = 8) -> list[dict]:
    with gzip.open(RECIPE / "data" / name / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f][:n]


SHROOM_ROW = {
    "id": "s1",
    "group": "q1",
    "source": "Who?",
    "candidate": "Paris is big",
    "spans": [{"start": 0, "end": 5}],
    "soft_labels": [{"start": 0, "end": 5, "prob": 0.5}],
}


def _data(
    tmp: Path,
    name: str,
    damage: Callable[[list[dict]], object] | None = None,
    raw: bytes | None = None,
) -> Path:
    """A data folder with ``name``'s dev and test (8 texts each); ``damage`` edits the
    test rows, ``raw`` replaces the test file's bytes."""
    data = tmp / "data"
    (data / name).mkdir(parents=True, exist_ok=True)
    for split in ("dev", "test"):
        rows = (
            [{**SHROOM_ROW, "id": f"s{i}", "group": f"q{i}"} for i in range(8)]
            if name == "mushroom-en"
            else _gold(name, split)
        )
        if split == "test" and damage is not None:
            damage(rows)
        path = data / name / f"{split}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        if split == "test" and raw is not None:
            path.write_bytes(raw(path.read_bytes()) if callable(raw) else raw)
    return data


def _harness(argv: list[str]) -> tuple[int, str]:
    run = _load("run")
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            code = run.main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
            if not isinstance(e.code, int):
                err.write(f"{e.code}\n")
        except BaseException:  # noqa: BLE001 - measured
            traceback.print_exc(file=err)
            code = -1
    return code, err.getvalue()


def _harness_argv(data: Path, out: Path, name: str, *extra: str) -> list[str]:
    return [
        "--set",
        name,
        "--quick",
        "--out",
        str(out),
        "--data",
        str(data),
        "--model",
        str(FIXTURE / "base"),
        "--head",
        str(FIXTURE / "head"),
        "--device",
        "cpu",
        "--batch-size",
        "4",
        *extra,
    ]


def bad_set(name: str, damage=None, raw=None, named: tuple[str, ...] = ("test.jsonl.gz",)) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        data = _data(tmp, name, damage, raw)
        code, err = _harness(_harness_argv(data, tmp / "out", name))
        verdict = judge_refusal(code, err, *named)
        return verdict if not (tmp / "out").exists() else (SILENT, "wrote an output folder")

    return case


def bad_option(*extra: str, named: tuple[str, ...], make_out=None) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        data = _data(tmp, "mlqe-roen-word")
        out = tmp / "out"
        if make_out:
            make_out(out)
        code, err = _harness(_harness_argv(data, out, "mlqe-roen-word", *extra))
        return judge_refusal(code, err, *named)

    return case


def _set(field: str, value, row: int = 2):
    def damage(rows: list[dict]) -> None:
        rows[row][field] = value(rows[row]) if callable(value) else value

    return damage


def _keep(n: int):
    def damage(rows: list[dict]) -> None:
        del rows[n:]

    return damage


def valid_quick_run(w: World, tmp: Path) -> tuple[str, str]:
    data = _data(tmp, "mlqe-roen-word")
    code, err = _harness(_harness_argv(data, tmp / "out", "mlqe-roen-word"))
    if code != 0:
        return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
    res = json.loads((tmp / "out" / "results.json").read_text())
    return (OK, "ran") if res["n_test"] == 6 else (SILENT, f"n_test {res['n_test']}")


WORDS = "mlqe-roen-word"
CASES["harness inputs"] = {
    "truncated_gzip": bad_set(WORDS, raw=lambda b: b[: len(b) // 2]),
    "not_gzip": bad_set(WORDS, raw=b'{"id": "x"}\n'),
    "bad_json_line": bad_set(
        WORDS,
        raw=lambda b: gzip.compress(gzip.decompress(b) + b"{oops\n"),
        named=("test.jsonl.gz:9",),
    ),
    "word_bad_not_list": bad_set(
        WORDS, _set("word_bad", "OK BAD"), named=("test.jsonl.gz:3", "word_bad")
    ),
    "word_bad_short": bad_set(
        WORDS, _set("word_bad", lambda r: r["word_bad"][:-1]), named=("test.jsonl.gz:3", "word_bad")
    ),
    "word_bad_long": bad_set(
        WORDS,
        _set("word_bad", lambda r: r["word_bad"] + [0]),
        named=("test.jsonl.gz:3", "word_bad"),
    ),
    "word_bad_value_2": bad_set(
        WORDS,
        _set("word_bad", lambda r: [2] * len(r["word_bad"])),
        named=("test.jsonl.gz:3", "word_bad"),
    ),
    "hter_text": bad_set(WORDS, _set("hter", "high"), named=("test.jsonl.gz:3", "hter")),
    "candidate_number": bad_set(
        WORDS, _set("candidate", 42), named=("test.jsonl.gz:3", "candidate")
    ),
    "candidate_empty": bad_set(
        WORDS, _set("candidate", ""), named=("test.jsonl.gz:3", "candidate")
    ),
    "empty_set": bad_set(WORDS, _keep(0)),
    "one_item_set": bad_set(WORDS, _keep(1)),
    "mqm_score_text": bad_set("mqm-ted-zhen", _set("mqm", "bad"), named=("test.jsonl.gz:3", "mqm")),
    "mqm_span_outside": bad_set(
        "mqm-ted-zhen",
        _set("spans", [{"start": 0, "end": 9999}]),
        named=("test.jsonl.gz:3", "spans"),
    ),
    "shroom_span_past_text": bad_set(
        "mushroom-en", _set("spans", [{"start": 5, "end": 99}]), named=("test.jsonl.gz:3", "spans")
    ),
    "shroom_soft_past_text": bad_set(
        "mushroom-en",
        _set("soft_labels", [{"start": 0, "end": 99, "prob": 0.5}]),
        named=("test.jsonl.gz:3", "soft_labels"),
    ),
    "shroom_prob_3_5": bad_set(
        "mushroom-en",
        _set("soft_labels", [{"start": 0, "end": 5, "prob": 3.5}]),
        named=("test.jsonl.gz:3", "prob"),
    ),
    "limit_0": bad_option("--limit", "0", named=("--limit",)),
    "limit_minus_1": bad_option("--limit", "-1", named=("--limit",)),
    "n_boot_0": bad_option("--n-boot", "0", named=("--n-boot",)),
    "batch_size_0": bad_option("--batch-size", "0", named=("--batch-size",)),
    "out_is_a_file": bad_option(named=("--out",), make_out=lambda p: p.write_text("x")),
    "out_dangling_link": bad_option(
        named=("--out",), make_out=lambda p: p.symlink_to(p.parent / "nowhere")
    ),
    "valid_quick_run": valid_quick_run,
}


# -- 6. the harness and tables never lose committed results -----------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _results(tmp: Path, name: str = WORDS) -> Path:
    """A copy of the committed results of ``name`` (heads left out but one)."""
    dest = tmp / "results" / name
    shutil.copytree(
        RECIPE / "results" / name, dest, ignore=shutil.ignore_patterns("prior*", "smooth*")
    )
    return dest.parent


def _tables(tmp: Path, argv: list[str], results: Path | None = None) -> tuple[int, str]:
    tables, where = _load("tables"), _load("committed")  # RESULTS lives in committed.py
    committed = where.RESULTS  # the module is shared: the committed folder is put back after
    if results is not None:
        where.RESULTS = results
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            code = tables.main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
            if not isinstance(e.code, int):
                err.write(f"{e.code}\n")
        except BaseException:  # noqa: BLE001 - measured
            traceback.print_exc(file=err)
            code = -1
        finally:
            where.RESULTS = committed
    return code, err.getvalue()


def run_into_committed(w: World, tmp: Path) -> tuple[str, str]:
    results = _results(tmp)
    before = _snapshot(results)
    code, err = _harness(_harness_argv(_data(tmp, WORDS), results / WORDS, WORDS))
    verdict = judge_refusal(code, err, "--out")
    return verdict if _snapshot(results) == before else (SILENT, "committed files changed")


def failing_rerun(w: World, tmp: Path) -> tuple[str, str]:
    data, out = _data(tmp, WORDS), tmp / "out"
    code, err = _harness(_harness_argv(data, out, WORDS))
    if code != 0:
        return TRACEBACK, err[-300:]
    before = _snapshot(out)
    (data / WORDS / "test.jsonl.gz").unlink()
    code, err = _harness(_harness_argv(data, out, WORDS, "--n-boot", "5"))
    verdict = judge_refusal(code, err, "test.jsonl.gz")
    return verdict if _snapshot(out) == before else (SILENT, "the earlier run was changed")


def _run_dir(
    tmp: Path,
    edit: Callable[[str, list[dict]], None] | None = None,
    raw_test: Callable[[bytes], bytes] | None = None,
) -> Path:
    tables = _load("tables")
    run = tmp / "run"
    run.mkdir()
    settings = {"model": "m", "head": "heads/paper", "limit": 40, "n_boot": 10, "prompt": "p"}
    (run / "results.json").write_text(json.dumps({"settings": settings}))
    for split in ("dev", "test"):
        rows = tables.read_jsonl_gz(RECIPE / "results" / WORDS / f"{split}.scores.jsonl.gz")[:40]
        if edit:
            edit(split, rows)
        tables.write_jsonl_gz(run / f"{split}.scores.jsonl.gz", rows)
    if raw_test:
        path = run / "test.scores.jsonl.gz"
        path.write_bytes(raw_test(path.read_bytes()))
    return run


def adopt_refused(edit=None, raw_test=None, named: tuple[str, ...] = ()) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        results = _results(tmp)
        before = _snapshot(results)
        run = _run_dir(tmp, edit, raw_test)
        code, err = _tables(tmp, ["--adopt", str(run), "--set", WORDS], results)
        verdict = judge_refusal(code, err, *named)
        return verdict if _snapshot(results) == before else (SILENT, "committed files changed")

    return case


def _reverse_test(split: str, rows: list[dict]) -> None:
    if split == "test":
        rows.reverse()


def _other_candidate(split: str, rows: list[dict]) -> None:
    if split == "test":
        rows[3]["candidate"] = rows[3]["candidate"] + " (edited)"


def adopt_valid(w: World, tmp: Path) -> tuple[str, str]:
    results = _results(tmp)
    heads = _snapshot(results / WORDS / "heads")
    code, err = _tables(tmp, ["--adopt", str(_run_dir(tmp)), "--set", WORDS], results)
    if code != 0:
        return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
    tables = _load("tables")
    rows = tables.read_jsonl_gz(results / WORDS / "test.scores.jsonl.gz")
    ok = len(rows) == 40 and _snapshot(results / WORDS / "heads") == heads
    return (OK, "adopted, heads kept") if ok else (SILENT, f"{len(rows)} rows")


def pack_escape(w: World, tmp: Path) -> tuple[str, str]:
    results = _results(tmp)
    inside = tmp / "a" / "b" / "c"
    inside.mkdir(parents=True)
    code, err = _tables(
        tmp,
        ["--pack", str(_run_dir(tmp)), "--set", WORDS, "--variant", "../../../../escaped"],
        results,
    )
    escaped = [p for p in tmp.rglob("escaped*")]
    verdict = judge_refusal(code, err, "--variant")
    return verdict if not escaped else (SILENT, f"wrote {escaped[0]}")


def check_missing(file: str) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        results = _results(tmp)
        (results / WORDS / file).unlink()
        code, err = _tables(tmp, ["--check", "--sets", WORDS, "--no-variants"], results)
        return judge_refusal(code, err, file)

    return case


def check_no_sets(w: World, tmp: Path) -> tuple[str, str]:
    code, err = _tables(tmp, ["--check", "--sets", ""])
    last = [x for x in err.splitlines() if x.strip()][-1:] or [""]
    return judge_refusal(code, last[0], "--sets")


CASES["harness and tables losses"] = {
    "run_into_a_committed_folder": run_into_committed,
    "failing_rerun_keeps_the_earlier_run": failing_rerun,
    "adopt_test_out_of_order": adopt_refused(_reverse_test, named=("order",)),
    "adopt_candidate_differs": adopt_refused(_other_candidate, named=("candidate",)),
    "adopt_truncated_test": adopt_refused(
        raw_test=lambda b: b[: len(b) // 2], named=("test.scores.jsonl.gz",)
    ),
    "adopt_valid_keeps_heads": adopt_valid,
    "pack_variant_escapes": pack_escape,
    "check_results_missing": check_missing("results.json"),
    "check_scores_missing": check_missing("dev.scores.jsonl.gz"),
    "check_sets_empty": check_no_sets,
}


# -- 8. Mu-SHROOM and evaluate edge cases ---------------------------------------------------

SHROOM = {
    "id": "a",
    "model_input": "Q?",
    "model_output_text": "Paris is the capital of France.",
    "hard_labels": [[0, 5]],
    "soft_labels": [{"start": 0, "end": 5, "prob": 0.6}],
}


def shroom(change: dict, *named: str) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.evaluation.gold_shroom import read_mushroom

        path = tmp / "m.jsonl"
        path.write_text(json.dumps(SHROOM) + "\n" + json.dumps({**SHROOM, **change}) + "\n")
        try:
            items = read_mushroom(path)
        except ValueError as err:
            ok = f"{path}:2" in str(err) and all(n in str(err) for n in named)
            return (CLEAR, str(err)) if ok else (SILENT, f"not naming line 2 / {named}: {err}")
        except Exception:  # noqa: BLE001 - measured
            return TRACEBACK, traceback.format_exc()[-300:]
        return SILENT, f"read: {items[1].spans} {items[1].soft_labels}"

    return case


def shroom_valid(w: World, tmp: Path) -> tuple[str, str]:
    from sigmoid_head.evaluation.gold_shroom import read_mushroom

    path = tmp / "m.jsonl"
    path.write_text(json.dumps(SHROOM) + "\n")
    it = read_mushroom(path)[0]
    ok = it.spans[0]["start"] == 0 and it.spans[0]["end"] == 5 and it.soft_labels[0]["prob"] == 0.6
    return (OK, "read") if ok else (SILENT, str(it))


def empty_gold(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "s.jsonl").write_text("")
    (tmp / "g.jsonl").write_text("")
    code, err = run_cli(
        [
            "evaluate",
            "--scores",
            str(tmp / "s.jsonl"),
            "--gold",
            str(tmp / "g.jsonl"),
            "--gold-format",
            "esa",
            "--no-ci",
        ]
    )
    return judge_refusal(code, err, "g.jsonl")


CASES["mushroom and evaluate"] = {
    "hard_labels_null": shroom({"hard_labels": None}, "hard_labels"),
    "one_element_pair": shroom({"hard_labels": [[3]]}, "hard_labels[0]"),
    "soft_label_without_prob": shroom({"soft_labels": [{"start": 0, "end": 3}]}, "soft_labels[0]"),
    "number_as_text": shroom({"model_output_text": 12345}, "model_output_text"),
    "float_offset": shroom({"hard_labels": [[0, 27.9]]}, "end"),
    "bool_offset": shroom({"hard_labels": [[True, 5]]}, "start"),
    "soft_bool_prob": shroom({"soft_labels": [{"start": 0, "end": 3, "prob": True}]}, "prob"),
    "valid_record": shroom_valid,
    "empty_gold_and_scores": empty_gold,
}


# -- 9. small but misleading -----------------------------------------------------------------


def threads_repeated(w: World, tmp: Path) -> tuple[str, str]:
    code, _, err = _child(
        ["-v", "evaluate", "--threads", "1", "--threads", "2", *_eval_files(tmp), "--no-ci"], 120
    )
    line = next((x for x in err.splitlines() if "threads:" in x), "")
    if code != 0:
        return SILENT, err[-300:]
    return (OK, line) if "threads: 2," in line else (SILENT, f"-v says {line!r}")


def threads_absurd(w: World, tmp: Path) -> tuple[str, str]:
    code, err = run_cli(["evaluate", "--threads", "99999999999999999999", *_eval_files(tmp)])
    return judge_refusal(code, err, "--threads")


def threads_config_absurd(w: World, tmp: Path) -> tuple[str, str]:
    (tmp / "c.yaml").write_text("threads: 100000\n")
    code, err = run_cli(["evaluate", "--config", str(tmp / "c.yaml"), *_eval_files(tmp)])
    return judge_refusal(code, err, "threads")


def replaced_score_file(w: World, tmp: Path) -> tuple[str, str]:
    def scored(name: str, pairs: list[tuple[str, str]]) -> Path:
        (tmp / f"{name}.in.jsonl").write_text(
            "".join(json.dumps({"source": s, "candidate": c}) + "\n" for s, c in pairs)
        )
        out = tmp / f"{name}.jsonl"
        code, err = run_cli(
            [
                "score",
                "--quiet",
                "--device",
                "cpu",
                "--head",
                str(w.head),
                "--input",
                str(tmp / f"{name}.in.jsonl"),
                "--to-json",
                str(out),
            ]
        )
        assert code == 0, err
        return out

    first = scored(
        "a",
        [
            ("la casa", "the house"),
            ("el perro", "the dog"),
            ("un gato", "a cat"),
            ("el sol", "the sun"),
        ],
    )
    if not (tmp / "a.jsonl.mix.json").exists() and not list(tmp.glob("a.jsonl*mix*")):
        return SILENT, "no mix record written"
    other = scored(
        "b",
        [
            ("la luna", "the moon"),
            ("el mar", "the sea"),
            ("un pez", "a fish"),
            ("la flor", "a flower"),
        ],
    )
    shutil.copyfile(other, first)  # another run's rows, same length, under the old name
    (tmp / "g.txt").write_text("1\n0\n1\n0\n")
    err = io.StringIO()
    out = io.StringIO()
    from sigmoid_head.cli import main

    with redirect_stderr(err), redirect_stdout(out):
        code = main(
            [
                "evaluate",
                "--scores",
                str(first),
                "--gold",
                str(tmp / "g.txt"),
                "--no-ci",
                "--methods",
                "combined",
            ]
        )
    text = out.getvalue() + err.getvalue()
    if code != 0:
        return SILENT, text[-300:]
    under = [x for x in text.splitlines() if x.startswith("combined")]
    said = under[-1] if under else ""
    return (CLEAR, said) if "ignored" in said else (SILENT, f"evaluated under {said!r}")


def rerank_all_nan(value) -> Case:
    def case(w: World, tmp: Path) -> tuple[str, str]:
        from sigmoid_head.registry import columns

        _column("nanjudge", _baseline(value), commands=("score", "generate", "rerank"))()
        (tmp / "in.jsonl").write_text('{"source": "la casa"}\n{"source": "el perro"}\n')
        try:
            code, err = run_cli(
                [
                    "rerank",
                    "--quiet",
                    "--device",
                    "cpu",
                    "--head",
                    str(w.head),
                    "--input",
                    str(tmp / "in.jsonl"),
                    "-o",
                    str(tmp / "o.jsonl"),
                    "--select",
                    "nanjudge",
                    "--samples",
                    "2",
                    "--max-new-tokens",
                    "3",
                ]
            )
        finally:
            columns.COLUMNS.pop("nanjudge", None)
        return judge_refusal(code, err, "nanjudge")

    return case


CASES["threads, mix, rerank"] = {
    "threads_repeated_last_wins": threads_repeated,
    "threads_absurd": threads_absurd,
    "threads_absurd_in_config": threads_config_absurd,
    "score_file_replaced_same_length": replaced_score_file,
    "rerank_select_all_nan": rerank_all_nan(float("nan")),
    "rerank_select_all_null": rerank_all_nan(None),
}

ALL = [(group, name, fn) for group, cases in CASES.items() for name, fn in cases.items()]


# -- pytest ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "name", "fn"), ALL, ids=[f"{g}:{n}" for g, n, _ in ALL])
def test_case(world, tmp_path, group, name, fn):
    outcome, detail = fn(world, tmp_path)
    assert outcome in (CLEAR, OK), f"{group} / {name}: {outcome}: {detail}"


def test_the_config_reader_on_arbitrary_yaml_never_escapes(tmp_path):
    """Any text as a YAML config: a mapping or one ValueError line naming the file."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from sigmoid_head.safe.config import read_options

    path = tmp_path / "c.yaml"

    @settings(max_examples=200, deadline=None)
    @given(st.text(alphabet="ab01:&*[]{}!-,\n #'\"x<>|", max_size=80))
    def check(text: str) -> None:
        path.write_text(text)
        try:
            value = read_options(path)
        except ValueError as err:
            assert str(path) in str(err) and "\n" not in str(err)
            return
        assert isinstance(value, dict)

    check()


# -- the table ---------------------------------------------------------------------------------


def table() -> str:
    """Run every case; the outcomes per class as a markdown table."""
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
    cols = (CLEAR, OK, TRACEBACK, SILENT, HANG)
    lines = [
        "| class | cases tried | " + " | ".join(f"{c}s" for c in cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
    ]
    total: Counter = Counter()
    for group, counts in rows.items():
        total.update(counts)
        lines.append(
            f"| {group} | {sum(counts.values())} | "
            + " | ".join(str(counts[c]) for c in cols)
            + " |"
        )
    lines.append(
        f"| **all** | **{sum(total.values())}** | "
        + " | ".join(f"**{total[c]}**" for c in cols)
        + " |"
    )
    return "\n".join(lines + [""] + failures)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(Path(__file__).parent))
    print(table())
