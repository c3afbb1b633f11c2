"""The package's layers: a module imports only from its own layer or the layers below it.

Layers, lowest first (docs/development.md, "Package layout"): the version, the embedded
model, token colours in a terminal, safe input and output (safe/) and the registries of
methods, columns and baseline settings (registry/); data; the frozen language model (lm/);
the head, its folder and the Hub (head/); the pipelines (training, scoring, evaluation) and
the integrations beside them (LM-Polygraph); the demo and the CLI. The package __init__ is
the public facade and may name anything (lazily).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "src" / "sigmoid_head"
LAYERS = [
    {"_version", "embedded", "terminal", "safe", "registry", "plugin", "methods", "columns",
     "baseline_settings"},
    {"data"},
    {"lm"},
    {"head"},
    {"training", "scoring", "evaluation", "integrations"},
    {"demo", "cli"},
]


def _layer(top: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top in names)


def _imports() -> dict[str, set[str]]:
    """Module path (relative to the package) -> top-level package parts it imports."""
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if rel.name == "__init__.py" and len(rel.parts) == 1:
            continue
        here = list(rel.parts[:-1])
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = here[: len(here) - (node.level - 1)]
                parts = base + (node.module.split(".") if node.module else [])
                found |= {parts[0]} if parts else {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sigmoid_head"):
                parts = node.module.split(".")[1:]
                found |= {parts[0]} if parts else {a.name for a in node.names}
        out[str(rel)] = found
    return out


def test_every_module_is_in_a_layer() -> None:
    tops = {Path(m).parts[0].removesuffix(".py") for m in _imports()}
    assert tops == set().union(*LAYERS)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [(m, t) for m, targets in _imports().items() for t in targets
              if _layer(t) > _layer(Path(m).parts[0].removesuffix(".py"))]
    assert upward == []


def test_the_library_imports_nothing_from_the_cli() -> None:
    """The CLI sits on the library, never under it: no module outside cli/ imports from it
    (the demo's streamed generations take their colours from terminal, not cli/)."""
    assert sorted(m for m, targets in _imports().items()
                  if "cli" in targets and Path(m).parts[0] != "cli") == []


def test_evaluation_needs_no_torch() -> None:
    """evaluation/ reads only torch-free parts: of head/, its files and extras only."""
    import re

    for module, targets in _imports().items():
        if module.startswith("evaluation"):
            assert targets <= {"evaluation", "data", "safe", "registry", "head"}, module
            text = (PKG / module).read_text(encoding="utf-8")
            assert "import torch" not in text and "from ..data.batching" not in text, module
            head_parts = set(re.findall(r"from \.\.head\.([a-z_]+) import", text))
            assert head_parts <= {"files", "extras"}, module
            assert "from ..head import" not in text, module
    for torch_free in ("safe/files.py", "safe/text.py", "head/files.py", "head/extras.py"):
        if (PKG / torch_free).exists():
            assert "import torch" not in (PKG / torch_free).read_text(encoding="utf-8"), torch_free


def test_the_package_docstring_lists_the_same_layers() -> None:
    """The layer list in sigmoid_head/__init__.py's docstring is this file's LAYERS."""
    import re

    import sigmoid_head

    doc = sigmoid_head.__doc__.split("Package layout", 1)[1]
    bullets = re.split(r"\n\* ", doc)[1:]
    named = [{n.rstrip("/") for n in re.findall(r"``([a-z_]+/?)``", b)} for b in bullets]
    assert named == LAYERS


DEV_DOC = PKG.parents[1] / "docs" / "development.md"
TREE_MARK = "<!-- layout: src/sigmoid_head -->"


def layout_block(text: str) -> list[str]:
    """The lines of the module tree that follows ``TREE_MARK`` (its fenced block)."""
    after = text.split(TREE_MARK, 1)[1]
    body = after.split("```", 2)[1]
    return [line for line in body.splitlines()[1:] if line.strip()]


def named_in_tree(lines: list[str]) -> set[str]:
    """Paths relative to the package that the tree names: one entry per line, two spaces
    of indent per level under the root line, a folder ending in ``/``."""
    root, *entries = lines
    assert root.strip() == "src/sigmoid_head/", root
    named, stack = set(), []
    for line in entries:
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0 and indent >= 2, f"odd indent: {line!r}"
        depth = indent // 2 - 1
        assert depth <= len(stack), f"skips a level: {line!r}"
        name = line.split()[0]
        stack = stack[:depth] + [name.rstrip("/")]
        named.add("/".join(stack) + ("/" if name.endswith("/") else ""))
    return named


def on_disk() -> set[str]:
    """Every module of the package (a subpackage's ``__init__.py`` is its folder) and every
    folder, relative to the package."""
    out = set()
    for path in PKG.rglob("*"):
        rel = path.relative_to(PKG)
        if "__pycache__" in rel.parts or rel.parts[0].endswith(".egg-info"):
            continue
        if path.is_dir():
            out.add(f"{rel}/")
        elif path.suffix == ".py" and not (rel.name == "__init__.py" and len(rel.parts) > 1):
            out.add(str(rel))
    return out


def test_the_documented_layout_is_the_package() -> None:
    """The module tree in docs/development.md names every module and folder of
    src/sigmoid_head/ and nothing that is not there."""
    named = named_in_tree(layout_block(DEV_DOC.read_text(encoding="utf-8")))
    real = on_disk()
    assert sorted(real - named) == [], "modules the layout in docs/development.md does not name"
    assert sorted(named - real) == [], "names in docs/development.md's layout that do not exist"


def test_the_layout_check_catches_a_missing_and_a_stale_module() -> None:
    lines = layout_block(DEV_DOC.read_text(encoding="utf-8"))
    named = named_in_tree(lines)
    assert "scoring/decoding.py" in named and "cli/__main__.py" in named
    stale = [*lines, "  cli/", "    output.py          gone"]
    assert "cli/output.py" in named_in_tree(stale) - on_disk()
    missing = [line for line in lines if "decoding.py" not in line]
    assert "scoring/decoding.py" in on_disk() - named_in_tree(missing)
