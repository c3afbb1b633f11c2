"""``sigmoid-head demo`` runs from an installed wheel, with no source checkout around it.

The wheel is built offline from a copy of the project (``pip wheel --no-deps
--no-build-isolation --no-index``: setuptools from the running environment), installed
without dependencies into a fresh virtual environment whose only other packages are this
environment's (a ``.pth`` line pointing at its site-packages), and the demo's ``--smoke``
mode runs there on the tiny base model of tests/data, in a folder outside the checkout.
It finds the Bible sample as package data. Skipped, with the reason, when no wheel can be
built here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_BASE = ROOT / "tests" / "data" / "head_v0_1_0" / "base"


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", HF_HUB_OFFLINE="1")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    project = tmp / "project"  # a copy, so the build leaves no build/ or egg-info behind
    project.mkdir()
    shutil.copy(ROOT / "pyproject.toml", project)
    shutil.copy(ROOT / "README.md", project)
    shutil.copytree(ROOT / "src", project / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    res = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                "--no-index", "-w", str(tmp / "dist"), str(project)], cwd=tmp)
    if res.returncode != 0:
        pytest.skip(f"cannot build a wheel offline here: {res.stderr.strip().splitlines()[-1:]}")
    return next((tmp / "dist").glob("sigmoid_head-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed and this one's packages visible."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    res = _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=env_dir.parent)
    assert res.returncode == 0, res.stderr
    python = env_dir / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=env_dir).stdout.strip())
    (purelib / "_project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    res = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
               cwd=env_dir)
    assert res.returncode == 0, res.stderr
    return env_dir


def test_the_wheel_ships_the_bible_sample(wheel: Path) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for split in ("train", "dev", "test"):
        assert f"sigmoid_head/bible_sample/para_{split}.jsonl.gz" in names


def test_demo_smoke_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    where = _run([str(python), "-c", "import sigmoid_head.demo as d; print(d.__file__); "
                  "print(d.sample_dir())"], cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    module, sample = where.stdout.split()
    assert module.startswith(str(venv)) and sample.startswith(str(venv)), where.stdout
    res = _run([str(venv / "bin" / "sigmoid-head"), "demo", "--smoke", "--model", str(TINY_BASE),
                "--out-dir", "out"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "[5/5]" in res.stdout
    for name in ("results.md", "tokens.html", "stream.jsonl"):
        assert (tmp_path / "out" / name).is_file(), name
