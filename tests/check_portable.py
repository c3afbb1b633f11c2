"""The committed results whose figures pass through BLAS or an optimizer, rebuilt once more on
an older CPU's code paths and another thread count: a byte-exact check cannot come back.

Usage (``make test`` runs it after the suite)::

    python tests/check_portable.py

The rebuild runs in a child process with

- ``NPY_DISABLE_CPU_FEATURES`` naming every AVX-512 target (and x86-64-v4) that numpy would
  dispatch to on this CPU, so its loops take the AVX2 paths an older CPU takes;
- ``OPENBLAS_CORETYPE=Haswell``, OpenBLAS's kernels for an AVX2 CPU;
- two threads for OpenBLAS, where the suite runs one, and two for OpenMP in the child of the
  supervised analysis (:data:`OPENMP_THREADS`).

What is rebuilt: the analyses of recipes/human_qe (``analyses.outputs``: the feature
combinations, fitted logistic regressions and ridges; error-free detection, Platt scaling
fitted by an optimizer; not those of ``NO_BLAS``, which fit nothing), compared with the
committed figure files and the page's tables as ``python -m recipes.human_qe.tables
--check`` compares them (recipes/common/compare.py). The
other committed tables are bootstrap counts and rounded figures of committed scores: no BLAS
call and no optimizer sits between the data and them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = "SIGMOID_HEAD_PORTABLE_CHILD"
SETS = ("mlqe-roen-word", "mqm-ted-zhen")


def older_cpu_env(features: dict[str, bool], dispatch: list[str], openmp_threads: int = 2) -> dict[str, str]:
    """The environment of a child: numpy's AVX-512 targets off (those this CPU has and
    numpy dispatches to: disabling one it does not dispatch is an error), OpenBLAS on its
    Haswell kernels with two threads, ``openmp_threads`` OpenMP threads."""
    wide = [t for t in dispatch if features.get(t) and ("AVX512" in t or t == "X86_V4")]
    env = {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": str(openmp_threads),
           "OPENBLAS_NUM_THREADS": "2", CHILD: "1"}
    if wide:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(wide)
    return env


def _numpy_targets() -> tuple[dict[str, bool], list[str]]:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return dict(__cpu_features__), list(__cpu_dispatch__)


PARTS = (frozenset({"supervised", "supervised-pool", "combination", "combination-pe-all", "wmt22"}),
         frozenset({"lopo", "error-free", "combination-pe-all_s1", "combination-pe-all_s2"}))
"""The analyses each child rebuilds, two children at once (the suite's two cores), about equal in
time: ``main`` prints when each child ends, the figure to balance them by (2026-12-02, with
every ``combination-pe-all`` in the first child: 105 s and 81 s; with ``_s1`` in the first
child and no ``supervised-pool``, in ``make test``: 95 s and 90 s; with ``supervised-pool``
fitting its own ``lr`` and ``gbm`` on the pool's 451,343 words and the split as now: 136 s and
106 s, alone on the machine; ``combination-pe-all`` moved to the second child: 135 s and
130 s, so it stays). ``supervised-pool`` sits with ``supervised``: they share one fit of its
opponents (``supervised._opponents``). The README's table of
:mod:`recipes.human_qe.which_score` reads them and ``lopo``: made in the child of
``supervised`` from its and ``supervised-pool``'s fresh figures, it reads ``lopo``'s committed
figures, which the other child rebuilds and compares."""
OPENMP_THREADS = (2, 1)
"""OpenMP threads of each child (OpenBLAS keeps two in both). OpenMP is scikit-learn's here,
above all in its gradient-boosted trees, fitted in ``supervised`` (two threads: the
thread-count check of that code) and in ``lopo`` (one): ``lopo`` fits them often on small
data, where a second thread that sleeps between parallel regions, beside the other child,
doubled its time (2026-12-02, part 1 alone with the machine busy:
``SIGMOID_HEAD_PORTABLE_CHILD=1 SIGMOID_HEAD_PORTABLE_PART=1 OPENBLAS_CORETYPE=Haswell
OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 python tests/check_portable.py``: 167 s; with
``OMP_NUM_THREADS=1``: 120 s)."""
PART = "SIGMOID_HEAD_PORTABLE_PART"
NO_BLAS = frozenset({"dev-choices", "sparse-check"})
"""Analyses not rebuilt here: nothing is fitted in them (dev thresholds and MCC are counts,
the bootstraps integer draws), so a BLAS or an optimizer cannot move their figures;
``python -m recipes.human_qe.tables --check`` rebuilds them."""


def rebuild_and_compare(part: int | None = None) -> int:
    """In the child: the analyses of ``PARTS[part]`` (all when None) rebuilt and compared; 0
    when all agree."""
    sys.path.insert(0, str(ROOT))
    from recipes.common.compare import FITTED_REL, REL, compare, tolerance_note
    from recipes.human_qe import analyses, tables

    files, blocks = analyses.outputs(SETS, only=None if part is None else PARTS[part])
    pages = {doc: doc.read_text() for doc in (tables.DOC, tables.README)}
    found = {key: (doc, span) for doc, text in pages.items() for key, span in tables.doc_blocks(text).items()}
    results, bad = [], 0
    for path, text in files.items():
        rel = FITTED_REL if path.name in tables.FITTED_FILES else REL
        results.append(compare(path.read_text() if path.exists() else "", text, rel))
        if not results[-1].ok:
            bad += 1
            print(f"{path.relative_to(ROOT)}: {results[-1].problem}")
    for key, text in blocks.items():
        if key not in found:
            bad += 1
            print(f"neither docs/human_labels.md nor README.md has a block {key}")
            continue
        doc, (start, end) = found[key]
        results.append(compare(pages[doc][start:end], text))
        if not results[-1].ok:
            bad += 1
            print(f"{doc.relative_to(ROOT)}, block {key}: {results[-1].problem}")
    print(f"{len(files)} files and {len(blocks)} page tables rebuilt: "
          + (f"{bad} differ" if bad else f"they match; {tolerance_note(results)}"))
    return 1 if bad else 0


def main() -> int:
    if os.environ.get(CHILD):
        part = os.environ.get(PART)
        return rebuild_and_compare(None if part is None else int(part))
    targets = _numpy_targets()
    envs = [{**older_cpu_env(*targets, openmp_threads=n), PART: str(k)} for k, n in enumerate(OPENMP_THREADS)]
    shown = " ".join(f"{k}={v!r}" if " " in v else f"{k}={v}" for k, v in envs[0].items()
                     if k not in (CHILD, PART, "OMP_NUM_THREADS"))
    print(f"check_portable: the BLAS/optimizer results rebuilt with {shown}, in {len(PARTS)} "
          f"children at once (OpenMP threads: {', '.join(map(str, OPENMP_THREADS))})", flush=True)
    start = time.monotonic()
    children = [subprocess.Popen([sys.executable, __file__], cwd=ROOT, env={**os.environ, **env}) for env in envs]
    codes: dict[int, int] = {}
    while len(codes) < len(children):  # each child's end, in the order they end
        for k, child in enumerate(children):
            if k not in codes and child.poll() is not None:
                codes[k] = child.returncode
                print(f"check_portable: child {k} ({', '.join(sorted(PARTS[k]))}) ended at "
                      f"{time.monotonic() - start:.0f} s", flush=True)
        time.sleep(0.2)
    failed = any(codes.values())
    print(f"check_portable: {'FAILED' if failed else 'passed'} in {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
