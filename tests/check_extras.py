"""The suite passes without each optional extra: run the test files that touch one, with it hidden.

Usage (``make test`` runs it after the suite)::

    SIGMOID_HEAD_RECORD_EXTRAS=.pytest-extras.json python -m pytest -q
    python tests/check_extras.py --record .pytest-extras.json

For every extra in pyproject.toml's ``[project.optional-dependencies]`` other than ``dev``
(which the tests need), the packages it alone brings are found from the installed
distributions (an extra that is not installed is already absent: the suite just ran without
it). The test files at risk are those that import such a package or a ``sigmoid_head`` module
that imports one when it loads, read two ways: statically from the test files' own imports,
and from the record the suite writes when ``SIGMOID_HEAD_RECORD_EXTRAS`` is set (imports made
while each file's tests ran, library code included). Those files then run in a child pytest
with the extra's packages hidden (``tests/extras_blocker/sitecustomize.py``: importing them
raises ModuleNotFoundError, in pytest and in every process it starts). A test that needs an
extra must skip when it is absent (``pytest.importorskip``) or pass without it; otherwise this
script exits 1 and names the extra. An extra whose packages another extra hides too (plots
inside eval) reruns only the files that touch the wider extra's other packages: the wider
rerun already ran the rest with its packages hidden (:func:`covered_by`).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
PACKAGE = ROOT / "src" / "sigmoid_head"
BLOCKER = TESTS / "extras_blocker"


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_modules() -> dict[str, set[str]]:
    """{extra: top-level import names that it alone brings}, for the installed extras only."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    by_dist: dict[str, set[str]] = {}
    for top, dists in md.packages_distributions().items():
        for dist in dists:
            by_dist.setdefault(_norm(dist), set()).add(top)
    needed = {
        top
        for req in extras.get("dev", [])
        for top in by_dist.get(_norm(_requirement_name(req)), ())
    }
    found: dict[str, set[str]] = {}
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        tops = {
            top for req in requirements for top in by_dist.get(_norm(_requirement_name(req)), ())
        } - needed
        tops = {t for t in tops if not t.startswith("_") and t.isidentifier()}
        if tops:
            found[extra] = tops
    return found


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool, top_level_only: bool) -> set[str]:
    """Absolute names a module imports (at load time only when ``top_level_only``)."""
    names: set[str] = set()
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if top_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if (
            top_level_only
            and isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names


def package_needs() -> dict[str, set[str]]:
    """{sigmoid_head module: every top-level package it imports when it loads, transitively}."""
    direct: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        direct[module] = _imports(
            ast.parse(path.read_text()), module, path.name == "__init__.py", top_level_only=True
        )
    closure: dict[str, set[str]] = {}

    def visit(module: str, seen: set[str]) -> set[str]:
        if module in closure:
            return closure[module]
        tops: set[str] = set()
        for name in direct.get(module, ()):
            if name.startswith("sigmoid_head"):
                for candidate in (name, name.rpartition(".")[0]):
                    if candidate in direct and candidate not in seen:
                        tops |= visit(candidate, seen | {candidate})
            else:
                tops.add(name.partition(".")[0])
        closure[module] = tops
        return tops

    for module in direct:
        visit(module, {module})
    return closure


def files_at_risk(
    tops: set[str], record: dict[str, list[str]], needs: dict[str, set[str]]
) -> list[str]:
    """Test files (relative to tests/) that import one of ``tops``, directly or through the package."""

    def touches(names) -> bool:
        return any(n.partition(".")[0] in tops or needs.get(n, set()) & tops for n in names)

    risky = {file for file, names in record.items() if touches(names)}
    for path in TESTS.rglob("test_*.py"):
        rel = str(path.relative_to(TESTS))
        if rel not in risky and touches(
            _imports(ast.parse(path.read_text()), "tests", False, top_level_only=False)
        ):
            risky.add(rel)
    return sorted(risky)


def covered_by(
    extra: str, found: dict[str, set[str]], files: list[str], record: dict[str, list[str]],
    needs: dict[str, set[str]],
) -> tuple[str | None, list[str]]:
    """(the extra whose rerun already runs ``files`` with ``extra``'s packages hidden, the
    files it does not cover), or (None, files).

    An extra B that hides every package of ``extra`` and more (the eval extra brings
    matplotlib, as the plots extra does, and sacrebleu) reruns each of these files with
    ``extra``'s packages hidden and the others hidden too. For a file that never touches the
    others (not in the import record, not imported by the file, not even named in its
    text, as ``pytest.importorskip("sacrebleu")`` would name it), hiding them changes
    nothing, so B's rerun is the rerun ``extra`` would make; only the files that do touch
    them are run again for ``extra``."""
    tops = found[extra]
    wider = [b for b, t in sorted(found.items()) if b != extra and t > tops]
    if not wider:
        return None, files
    best, left = None, files
    for b in wider:
        more = found[b] - tops
        touching = set(files_at_risk(more, record, needs))
        rest = [f for f in files
                if f in touching or any(m in (TESTS / f).read_text() for m in more)]
        if best is None or len(rest) < len(left):
            best, left = b, rest
    return best, left


def _run_all(runs: list[tuple[str, str, list[str], dict]], at_once: int) -> list[tuple[str, int]]:
    """Every rerun, ``at_once`` at a time (each a single pytest process: several reruns side
    by side keep the cores busier than one rerun spread over workers); each one's output is
    printed whole, under its header, when it ends. Returns (extra, exit code) per rerun."""
    import tempfile

    pending, active, codes = list(runs), [], []
    while pending or active:
        while pending and len(active) < at_once:
            extra, header, command, env = pending.pop(0)
            out = tempfile.TemporaryFile()  # noqa: SIM115 (closed when the rerun ends)
            active.append((extra, header, out, subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                                                stderr=subprocess.STDOUT)))
        for entry in list(active):
            extra, header, out, proc = entry
            if proc.poll() is None:
                continue
            active.remove(entry)
            out.seek(0)
            print(header, flush=True)
            sys.stdout.write(out.read().decode(errors="replace"))
            sys.stdout.flush()
            out.close()
            codes.append((extra, proc.returncode))
        if active:
            time.sleep(0.2)
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, help="the import record the suite wrote")
    parser.add_argument("--list", action="store_true", help="print the files; run nothing")
    parser.add_argument("--extra", action="append", help="check only this extra (repeatable)")
    parser.add_argument("--workers", type=int, default=0,
                        help="reruns side by side, one pytest process each (0 or 1: one after another)")
    args = parser.parse_args(argv)
    record = json.loads(args.record.read_text()) if args.record and args.record.exists() else {}
    if args.record and not record:
        print(f"check_extras: no import record at {args.record}; static imports only")
    needs = package_needs()
    runs = []  # (extra, header, command, env) of every rerun
    found = extras_modules()
    for extra, tops in sorted(found.items()):
        if args.extra and extra not in args.extra:
            continue
        files = files_at_risk(tops, record, needs)
        header = f"check_extras: without [{extra}] (hiding {', '.join(sorted(tops))}): {len(files)} test files"
        wider, left = (None, files) if args.extra else covered_by(extra, found, files, record, needs)
        if wider is not None:
            header += (f"; {len(files) - len(left)} of them already run without [{wider}], which hides "
                       f"these and {', '.join(sorted(found[wider] - tops))} (untouched by them)")
            files = left
        if args.list or not files:
            print(header)
            print("".join(f"  {f}\n" for f in files), end="")
            continue
        env = dict(
            os.environ,
            SIGMOID_HEAD_HIDE_MODULES=",".join(sorted(tops)),
            PYTHONPATH=os.pathsep.join(
                p for p in (str(BLOCKER), os.environ.get("PYTHONPATH")) if p
            ),
        )
        env.pop("SIGMOID_HEAD_RECORD_EXTRAS", None)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   *(str(TESTS / f) for f in files)]
        runs.append((extra, header, command, env))
    failed = [extra for extra, code in _run_all(runs, max(1, args.workers)) if code not in (0, 5)]
    if failed:
        print(
            f"check_extras: the suite fails without the extra(s) {', '.join(failed)}: a test "
            "that needs one must skip when it is absent (pytest.importorskip)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
