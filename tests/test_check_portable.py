"""tests/check_portable.py (issue 61): the older CPU it imitates is one numpy accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_portable  # noqa: E402


def test_only_dispatched_avx512_targets_this_cpu_has_are_disabled() -> None:
    features = {"X86_V3": True, "X86_V4": True, "AVX512_ICL": True, "AVX512_SPR": False, "AVX512F": True}
    env = check_portable.older_cpu_env(features, ["X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"])
    assert env["NPY_DISABLE_CPU_FEATURES"] == "X86_V4 AVX512_ICL"
    assert env["OPENBLAS_CORETYPE"] == "Haswell" and env["OMP_NUM_THREADS"] == "2"
    assert check_portable.older_cpu_env(features, ["X86_V3"], openmp_threads=1)["OMP_NUM_THREADS"] == "1"
    older = check_portable.older_cpu_env({"X86_V3": True}, ["X86_V3"])  # an AVX2 machine
    assert "NPY_DISABLE_CPU_FEATURES" not in older


def test_numpy_starts_with_that_environment_and_takes_the_narrower_paths() -> None:
    env = check_portable.older_cpu_env(*check_portable._numpy_targets())
    code = ("from numpy._core._multiarray_umath import __cpu_features__ as f\n"
            "import os\n"
            "off = os.environ.get('NPY_DISABLE_CPU_FEATURES', '').split()\n"
            "assert not any(f[t] for t in off), off\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_two_children_rebuild_every_analysis_once() -> None:
    from recipes.human_qe import analyses

    names = [*analyses._modules(), "wmt22"]
    parts = check_portable.PARTS
    assert sorted([*(n for p in parts for n in p), *check_portable.NO_BLAS]) == sorted(names)  # each once
    assert not check_portable.NO_BLAS & {"supervised", "lopo", "combination", "error-free"}  # fitted ones stay
    assert not any({"lopo", "supervised"} <= p for p in parts)  # the two longest run apart
    assert len(check_portable.OPENMP_THREADS) == len(parts)
    # the trees' thread-count check: the child of supervised runs them on two OpenMP threads
    assert check_portable.OPENMP_THREADS[next(k for k, p in enumerate(parts) if "supervised" in p)] == 2
