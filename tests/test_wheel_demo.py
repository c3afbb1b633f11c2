"""The wheel as a user gets it: ``pip install sigmoid-head`` with its DEFAULT dependencies.

The wheel is built from a copy of the project (``pip wheel --no-deps --no-build-isolation``:
setuptools from the running environment, with no deprecation warning about the licence
metadata), then installed into a fresh virtual environment that sees nothing of this one
(no system site packages, no ``.pth``): pip resolves the default dependencies from the
configured indexes (torch==2.13.0 CPU first, the machine's local wheel; the rest from the
package index or pip's cache), so a missing dependency shows here. In that environment
``sigmoid-head demo --smoke`` runs on the tiny base model of tests/data (it skips its
figures with a one-line notice: matplotlib is the ``plots`` extra) and ``sigmoid-head
score`` scores a pair; ``evaluate --out-dir`` (figures) refuses in one line naming the extra. Slow
(a few minutes, mostly pip), so marked ``integration``; skipped, with the reason, only
when no wheel can be built or pip can reach no index here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_BASE = ROOT / "tests" / "data" / "head_v0_1_0" / "base"
TORCH = "torch==2.13.0"

pytestmark = pytest.mark.integration


def _run(
    args: list[str], cwd: Path, timeout: int = 900, **extra: str
) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        # PYTHONDONTWRITEBYTECODE too: the environment is installed without .pyc files
        # (--no-compile below), so the first command writes those of the modules it
        # imports and the later ones read them
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                     "PYTHONDONTWRITEBYTECODE")
    }
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", HF_HUB_OFFLINE="1", **extra)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """(the wheel, the build's output)."""
    tmp = tmp_path_factory.mktemp("wheel")
    project = tmp / "project"  # a copy, so the build leaves no build/ or egg-info behind
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project)
    shutil.copytree(
        ROOT / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    res = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp / "dist"),
            str(project),
        ],
        cwd=tmp,
        PIP_NO_INDEX="1",
    )
    if res.returncode != 0:
        pytest.skip(f"cannot build a wheel offline here: {res.stderr.strip().splitlines()[-1:]}")
    return next((tmp / "dist").glob("sigmoid_head-*.whl")), res.stdout + res.stderr


@pytest.fixture(scope="module")
def venv(built: tuple[Path, str], tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel and its default dependencies only."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    res = _run([sys.executable, "-m", "venv", str(env_dir)], cwd=env_dir.parent)
    assert res.returncode == 0, res.stderr
    # --no-compile: no .pyc for every module of every package up front; Python compiles the
    # modules the tests import when they first import them
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    res = _run([*pip, TORCH], cwd=env_dir)  # the CPU build first, so nothing pulls the CUDA one
    if res.returncode != 0:
        pytest.skip(f"pip cannot install {TORCH} here: {res.stderr.strip().splitlines()[-1:]}")
    res = _run([*pip, str(built[0])], cwd=env_dir)
    assert res.returncode == 0, res.stderr[-3000:]
    return env_dir


def test_the_wheel_ships_the_bible_sample_and_its_licence(built: tuple[Path, str]) -> None:
    import zipfile

    wheel, log = built
    names = zipfile.ZipFile(wheel).namelist()
    for split in ("train", "dev", "test"):
        assert f"sigmoid_head/bible_sample/para_{split}.jsonl.gz" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta
    assert "deprecat" not in log.lower(), [x for x in log.splitlines() if "eprecat" in x]


def test_default_dependencies_leave_out_the_extras(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "bin" / "python")
    res = _run(
        [
            python,
            "-c",
            "import importlib.util as u; "
            "print([m for m in ('matplotlib', 'scipy', 'sklearn') if u.find_spec(m)])",
        ],
        cwd=tmp_path,
    )
    assert res.stdout.strip() == "[]", res.stdout  # else the test below would hide a gap


def test_demo_smoke_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    where = _run(
        [
            str(python),
            "-c",
            "import sigmoid_head.demo.run as d; print(d.__file__); print(d.sample_dir())",
        ],
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    module, sample = where.stdout.split()
    assert module.startswith(str(venv)) and sample.startswith(str(venv)), where.stdout
    res = _run(
        [
            str(venv / "bin" / "sigmoid-head"),
            "demo",
            "--smoke",
            "--model",
            str(TINY_BASE),
            "--out-dir",
            "out",
        ],
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "[5/5]" in res.stdout
    assert "figures skipped: matplotlib is not installed" in res.stdout
    assert "pip install 'sigmoid-head[plots]'" in res.stdout
    for name in ("results.md", "tokens.html", "stream.jsonl", "head/head.safetensors"):
        assert (tmp_path / "out" / name).is_file(), name
    assert not (tmp_path / "out" / "head" / "checkpoint").exists()


def test_score_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "src.txt").write_text("The LORD is my shepherd.\n")
    (tmp_path / "cand.txt").write_text("The Lord is my shepherd.\n")
    res = _run(
        [
            str(venv / "bin" / "sigmoid-head"),
            "score",
            "-s",
            "src.txt",
            "-t",
            "cand.txt",
            "--model",
            str(TINY_BASE),
            "--to-json",
            "out.jsonl",
        ],
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "1 output" in res.stdout and (tmp_path / "out.jsonl").is_file()


def test_a_missing_extra_is_one_line(venv: Path, tmp_path: Path) -> None:
    """``evaluate --out-dir`` (its figures) without matplotlib: one line naming the extra."""
    (tmp_path / "s.jsonl").write_text(
        "".join(f'{{"softmax": {p}}}\n' for p in (0.9, 0.2, 0.7, 0.4))
    )
    (tmp_path / "gold.txt").write_text("1\n0\n1\n0\n")
    res = _run(
        [
            str(venv / "bin" / "sigmoid-head"),
            "evaluate",
            "--scores",
            "s.jsonl",
            "--gold",
            "gold.txt",
            "--no-ci",
            "--out-dir",
            "ev",
        ],
        cwd=tmp_path,
    )
    assert res.returncode != 0
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert "sigmoid-head[plots]" in res.stderr
