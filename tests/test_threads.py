"""The thread policy every command applies before torch starts (sigmoid_head.cli.threads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sigmoid_head.cli import _threads_option, main, threads

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.mark.parametrize(
    ("cpus", "load", "machine", "want"),
    [
        (2, 0.2, 2, 2),  # an idle laptop: every CPU
        (2, 4.0, 2, 1),  # a shared machine under load: one thread, never zero
        (2, 1.0, 2, 1),
        (4, 10.0, 64, 4),  # a 4-CPU affinity mask on a big machine with room to spare
        (64, 10.0, 64, 54),
        (8, None, 8, 8),  # no load average on this system
    ],
)
def test_default_threads_leaves_the_busy_cpus_alone(cpus, load, machine, want) -> None:
    got = threads.default_threads(
        cpus=cpus, load=load if load is not None else 0.0, machine_cpus=machine
    )
    assert got == want


def test_usable_cpus_is_the_affinity_mask() -> None:
    n = threads.usable_cpus()
    assert 1 <= n <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        assert n <= len(os.sched_getaffinity(0))


def test_threads_option_is_read_before_parsing() -> None:
    assert _threads_option(["score", "--threads", "3"]) == 3
    assert _threads_option(["score", "--threads=2", "-s", "x"]) == 2
    assert _threads_option(["score", "--threads", "zero"]) is None
    assert _threads_option(["score"]) is None
    assert _threads_option(["score", "--", "--threads", "3"]) is None


def _child(code: str, env: dict[str, str], *args: str) -> str:
    keep = {
        k: v
        for k, v in os.environ.items()
        if k
        not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    res = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**keep, **env, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


_PROBE = (
    "import os, sys\n"
    "from sigmoid_head.cli import main\n"
    "import sigmoid_head.cli as c\n"
    "def run(args):\n"
    "    import torch\n"
    "    print(os.environ.get('OMP_WAIT_POLICY'), torch.get_num_threads())\n"
    "    return 0\n"
    "mod = c.command_module('push')\n"
    "mod.run = run\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_a_command_sets_the_policy_before_torch_starts() -> None:
    out = _child(_PROBE, {}, "push", "--threads", "1", "h", "r").split()
    assert out == ["PASSIVE", "1"]
    default = threads.default_threads()
    assert _child(_PROBE, {}, "push", "h", "r").split() == ["PASSIVE", str(default)]


def test_the_users_settings_win_unless_threads_is_given() -> None:
    env = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"}
    assert _child(_PROBE, env, "push", "h", "r").split() == ["ACTIVE", "1"]
    assert _child(_PROBE, env, "push", "--threads", "2", "h", "r").split() == ["ACTIVE", "2"]


def test_threads_in_process_sets_torchs_count_and_leaves_the_environment() -> None:
    import torch

    before, env = torch.get_num_threads(), dict(os.environ)
    try:
        assert threads.apply(1) == {}
        assert torch.get_num_threads() == 1
        assert dict(os.environ) == env
    finally:
        torch.set_num_threads(before)


def test_every_command_has_the_threads_option(capsys) -> None:
    from sigmoid_head.cli import COMMANDS

    for name in COMMANDS:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        assert "--threads N" in capsys.readouterr().out, name


def test_a_missing_dependency_is_one_line_naming_the_extra(capsys, monkeypatch) -> None:
    import sigmoid_head.cli as cli

    mod = cli.command_module("push")

    def run(args):
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    monkeypatch.setattr(mod, "run", run)
    assert main(["push", "h", "r"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("sigmoid-head push: error: No module named 'matplotlib'")
    assert "pip install 'sigmoid-head[plots]'" in err


_LIBRARY = (
    "import os, sigmoid_head\n"
    "sigmoid_head.SigmoidHeadModel  # a torch-using name, looked up before torch starts\n"
    "import torch\n"
    "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads())\n"
)


def test_the_python_api_applies_the_policy_before_torch_starts() -> None:
    policy, count, torch_count = _child(_LIBRARY, {}).split()
    assert policy == "PASSIVE" and count == torch_count and int(count) >= 1
    env = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "ACTIVE"}  # the user's settings win
    assert _child(_LIBRARY, env).split() == ["ACTIVE", "1", "1"]


def test_set_threads_is_the_one_call_for_python() -> None:
    code = ("import os, sigmoid_head\nsigmoid_head.set_threads(1)\nimport torch\n"
            "print(os.environ['OMP_WAIT_POLICY'], torch.get_num_threads())\n")
    assert _child(code, {}).split() == ["PASSIVE", "1"]
    import torch

    import sigmoid_head

    before = torch.get_num_threads()
    try:  # torch already started: only the count changes
        line = sigmoid_head.set_threads(1)
        assert torch.get_num_threads() == 1 and line.startswith("threads: 1 (torch had started")
    finally:
        torch.set_num_threads(before)
