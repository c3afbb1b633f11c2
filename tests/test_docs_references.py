"""Every file path and ``module.function`` that the docs name in backticks exists.

Read: README.md, docs/*.md and recipes/**/README*.md. A *path* is a backticked word with a
slash whose first part is a tracked top-level folder or file (``tests/test_cli.py``,
``src/sigmoid_head/demo.py``, ``docs/results.md``); outputs a run writes (``runs/...``)
start elsewhere and are not checked. A trailing ``:line`` or ``::test`` is dropped, and a
glob (``*``) must match something. A *reference* is a backticked dotted name whose first
part is a module of the package (``dominant.find_dominant``,
``sigmoid_head.scoring.generate.generate_and_score``, ``scoring.force_decode``): the
longest module prefix is imported (any package module ending in it) and the rest must be
attributes of it, or a field of a dataclass named there.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import subprocess
from pathlib import Path

import pytest

import sigmoid_head

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
               *(ROOT / "recipes").rglob("README*.md")])
def _tracked_top() -> set[str]:
    """Top-level names git tracks (a machine's run outputs, ``runs/`` or ``data/``, are
    not); every top-level name where git is missing."""
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = []
    return {f.split("/")[0] for f in files} or {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}


TOP = _tracked_top()
TICKED = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
MODULES = sorted(m.name.removeprefix("sigmoid_head.") for m in
                 pkgutil.walk_packages(sigmoid_head.__path__, "sigmoid_head."))


def _spans(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)  # code blocks
    return [m.group(1).strip() for m in TICKED.finditer(text)]


def _paths(doc: Path) -> set[str]:
    out = set()
    for span in _spans(doc):
        word = span.split()[0] if span.split() else ""
        word = re.split(r"::|:(?=\d)", word)[0].rstrip(".,;:)")
        if "/" in word and word.split("/")[0] in TOP and "{" not in word and "<" not in word:
            out.add(word)
    return out


def _modules_for(prefix: str) -> list[str]:
    """Package modules named by ``prefix`` (``generate`` -> cli.generate, scoring.generate)."""
    prefix = prefix.removeprefix("sigmoid_head.")
    return [m for m in MODULES if m == prefix or m.endswith("." + prefix)]


def _resolves(name: str) -> bool | None:
    """True/False when ``name`` starts with a package module, None when it does not."""
    parts = name.removesuffix("()").split(".")
    if parts[0] == "sigmoid_head" and len(parts) > 1:
        parts = parts[1:]
    for cut in range(len(parts), 0, -1):
        modules = _modules_for(".".join(parts[:cut]))
        if modules:
            return any(_has(importlib.import_module(f"sigmoid_head.{m}"), parts[cut:])
                       for m in modules)
    return None


def _has(obj: object, attrs: list[str]) -> bool:
    for a in attrs:
        fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
        if not hasattr(obj, a) and a not in fields:
            return False
        obj = getattr(obj, a, None)
    return True


def _references(doc: Path) -> set[str]:
    out = set()
    for span in _spans(doc):
        name = re.sub(r"\(.*\)$", "", span)  # a call: `f(x=1)` names f
        if DOTTED.fullmatch(name) and "/" not in name and not re.search(r"\.(py|md|json|jsonl|sh|txt|csv|gz|html|png|toml|safetensors)$", name):
            out.add(name)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_exist(doc: Path) -> None:
    missing = sorted(p for p in _paths(doc)
                     if not (any(ROOT.glob(p)) if "*" in p else (ROOT / p).exists()))
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_functions_exist(doc: Path) -> None:
    missing = sorted(r for r in _references(doc) if _resolves(r) is False)
    assert missing == [], f"{doc.relative_to(ROOT)} names functions that do not exist"


def test_the_checker_catches_what_the_issue_found(tmp_path: Path) -> None:
    """The names docs/performance.md carried before this test existed are caught."""
    assert _resolves("score.sigmoid_scores") is False
    assert _resolves("train.make_optimizer") is False
    assert _resolves("dominant.find_dominant") is True
    assert _resolves("scoring.generate.score_generated") is True
    assert _resolves("torch.topk") is None
    doc = tmp_path / "y.md"
    doc.write_text("`scoring.force_decode.score_examples(sigmoid_only=True)`, `a.b c`\n")
    assert _references(doc) == {"scoring.force_decode.score_examples"}
    doc = tmp_path / "x.md"
    doc.write_text("see `tests/test_train.py` and `src/sigmoid_head/demo.py`, `runs/x/y`\n")
    assert _paths(doc) == {"tests/test_train.py", "src/sigmoid_head/demo.py"}
