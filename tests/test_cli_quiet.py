"""Quiet, readable output (issue 51): a warning is one line with no source line under it,
and ``--quiet`` leaves no progress bar, transformers' "Loading weights" included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_cli import FIXTURE, _pairs, run

SRC = str(Path(__file__).resolve().parents[1] / "src")

_WARNS = (
    "import sys, warnings\n"
    "import sigmoid_head.cli as c\n"
    "def run(args):\n"
    "    warnings.warn('pearson: an input is constant; the correlation is NaN')\n"
    "    return 0\n"
    "c.command_module('push').run = run\n"
    "sys.argv = ['sigmoid-head', 'push', 'h', 'r']\n"
    "sys.exit(c.main())\n"
)


def test_a_warning_is_one_line_without_its_source() -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-c", _WARNS], capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == [
        "warning: pearson: an input is constant; the correlation is NaN (UserWarning, <string>:4)"
    ]


def test_quiet_leaves_no_progress_bar(tmp_path: Path) -> None:
    src, cand = _pairs(tmp_path)
    common = [
        "score",
        "-s",
        str(src),
        "-t",
        str(cand),
        "--head",
        str(FIXTURE / "head"),
        "--model",
        str(FIXTURE / "base"),
        "--device",
        "cpu",
        "--to-json",
    ]
    loud = run(*common, str(tmp_path / "a.jsonl"))
    assert loud.returncode == 0, loud.stderr
    assert "Loading weights" in loud.stderr  # the bar this test is about is there without it
    quiet = run(*common, str(tmp_path / "b.jsonl"), "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert "Loading weights" not in quiet.stderr and "it/s]" not in quiet.stderr
    assert "%|" not in quiet.stderr + quiet.stdout  # no tqdm bar of any kind


def test_quiet_switches_are_undone_after_the_command(monkeypatch) -> None:
    """--quiet run from Python must not leave the caller's process without progress bars
    (the environment variable leaked into later subprocesses of the same process)."""
    import transformers.utils.logging as tlog

    from sigmoid_head.cli import quiet_libraries

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    tlog.enable_progress_bar()
    restore = quiet_libraries()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and not tlog.is_progress_bar_enabled()
    restore()
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ and tlog.is_progress_bar_enabled()
    tlog.disable_progress_bar()  # a caller's own choice is kept
    quiet_libraries()()
    assert not tlog.is_progress_bar_enabled()
    tlog.enable_progress_bar()


_FAILS_AFTER_LOADING = (
    "import sys\n"
    "import sigmoid_head.cli as c\n"
    "def run(args):\n"
    "    import transformers  # the Hub is imported while --quiet's variable is set\n"
    "    raise ValueError('the candidates do not fit')\n"
    "c.command_module('score').run = run\n"
    "sys.argv = ['sigmoid-head', 'score', '-s', 's.txt', '-t', 't.txt', '--head', 'h', '--quiet']\n"
    "sys.exit(c.main())\n"
)


def test_quiet_ends_with_the_commands_own_last_line(tmp_path: Path) -> None:
    """With --quiet nothing is printed after the command's last line (the Hub warned that
    it could not enable its bars again, after the output and after an error message)."""
    src, cand = _pairs(tmp_path)
    ok = run("score", "-s", str(src), "-t", str(cand), "--head", str(FIXTURE / "head"),
             "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet",
             "--to-json", str(tmp_path / "a.jsonl"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr.strip() == "", ok.stderr  # quiet: nothing on stderr at all
    assert ok.stdout.strip().splitlines()[-1].startswith("combined = "), ok.stdout[-300:]
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    bad = subprocess.run([sys.executable, "-c", _FAILS_AFTER_LOADING], capture_output=True,
                         text=True, env=env, timeout=300)
    assert bad.returncode == 2, bad.stderr
    lines = [line for line in bad.stderr.splitlines() if line.strip()]
    assert lines[-1] == "sigmoid-head score: error: the candidates do not fit", bad.stderr


def test_the_hub_imported_under_quiet_gets_its_bars_back(monkeypatch) -> None:
    """A library that read the variable at import is put back to the caller's setting."""
    import importlib

    from sigmoid_head.cli import quiet_libraries

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    hub_modules = [m for m in sys.modules if m.split(".")[0] == "huggingface_hub"]
    saved = {m: sys.modules.pop(m) for m in hub_modules}  # as if not imported yet
    try:
        restore = quiet_libraries()
        tqdm = importlib.import_module("huggingface_hub.utils.tqdm")
        assert tqdm.HF_HUB_DISABLE_PROGRESS_BARS is True  # read from --quiet's variable
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the Hub's "Cannot enable progress bars" fails here
            restore()
        assert tqdm.HF_HUB_DISABLE_PROGRESS_BARS is None and not tqdm.are_progress_bars_disabled()
    finally:
        for m in [m for m in sys.modules if m.split(".")[0] == "huggingface_hub"]:
            del sys.modules[m]
        sys.modules.update(saved)
