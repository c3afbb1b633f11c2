"""The README's install section against the files that install (issue 51): every extra it
names is one of pyproject.toml's, every `make` target and variable it names is the
Makefile's, what it says `make demo` and `make test` install is what their rules install,
and the version it shows is the package's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NOT_NAMES = {
    "a",
    "an",
    "the",
    "one",
    "optional",
    "each",
    "that",
    "this",
    "no",
    "its",
    "which",
    "any",
    "every",
    "own",
}
"""Words before "extra" that are not an extra's name ("an extra", "that extra", ...)."""


def extras_named(text: str) -> set[str]:
    """Extras a text names: in install brackets (``.[plots]``, ``sigmoid-head[eval]``,
    ``...whl[plots]``), as "`eval` extra" / "plots extra", or as "dev and eval extras"."""
    names = set()
    for group in re.findall(r"(?:\.|sigmoid-head|\.whl)\[([\w,\- ]+)\]", text):
        names |= {g.strip() for g in group.split(",")}
    names |= {m.lower() for m in re.findall(r"(?<![\w-])`?([\w]+)`? extra\b(?!-)", text)}
    for a, b in re.findall(r"(?<![\w-])`?(\w+)`? and `?(\w+)`? extras\b", text):
        if not {a.lower(), b.lower()} & NOT_NAMES:  # "the head and its extras" names none
            names |= {a.lower(), b.lower()}
    return names - NOT_NAMES


def makefile_targets() -> set[str]:
    """Rule names, the stamp files' too (``$(VENV)/.test-installed``); not ``X := ...``."""
    return set(re.findall(r"^([^\s:=#]+):(?!=)", MAKEFILE, re.M))


def makefile_variables() -> set[str]:
    return set(re.findall(r"^([A-Z_]+) \??:?=", MAKEFILE, re.M))


def rule(target: str) -> str:
    """The recipe lines of a Makefile target."""
    block = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)*)", MAKEFILE, re.M)
    assert block, f"no rule {target}"
    return block.group(1)


def installed_extras(target: str) -> set[str]:
    """The extras a target's rule (and the rules it depends on) pip-installs."""
    line = re.search(rf"^{re.escape(target)}:([^\n]*)", MAKEFILE, re.M).group(1)
    out = extras_named(rule(target))
    for dep in line.split():
        if dep in makefile_targets():
            out |= installed_extras(dep)
    return out


def test_every_extra_the_docs_name_exists() -> None:
    for doc in DOCS:
        unknown = extras_named(doc.read_text(encoding="utf-8")) - EXTRAS
        assert not unknown, f"{doc.name} names extras pyproject.toml lacks: {sorted(unknown)}"


def test_the_readme_lists_every_extra() -> None:
    paragraph = README.split("The extras: ", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"(?:^|;\s)`([\w-]+)`", paragraph))
    assert listed == EXTRAS


def test_every_make_target_and_variable_the_docs_name_exists() -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        targets = set(re.findall(r"(?:`|^)make ([a-z][\w-]*)", text, re.M))
        assert targets <= makefile_targets(), f"{doc.name}: {sorted(targets - makefile_targets())}"
        variables = set(re.findall(r"(?:`|^)make [a-z][\w-]*((?: [A-Z_]+=\S+)+)", text, re.M))
        names = {v.split("=")[0] for group in variables for v in group.split()}
        assert names <= makefile_variables(), f"{doc.name}: {sorted(names - makefile_variables())}"


@pytest.mark.parametrize("target", ["demo", "test"])
def test_what_the_readme_says_a_target_installs_is_what_it_installs(target: str) -> None:
    said = re.findall(rf"^make {target} +# ([^\n]*)", README, re.M)
    assert said, f"the README has no `make {target}   # ...` line"
    installed = installed_extras(target)
    for line in said:
        named = extras_named(line)
        assert named, f"the README's line `make {target}   # {line}` names no extra"
        assert named <= installed, f"make {target} does not install {sorted(named - installed)}"
        if target == "demo":  # the demo's lines name all it installs
            assert named == installed


def test_the_readme_shows_the_package_version() -> None:
    version = PYPROJECT["project"]["version"]
    namespace: dict = {}
    exec((ROOT / "src" / "sigmoid_head" / "_version.py").read_text(encoding="utf-8"), namespace)
    assert namespace["__version__"] == version
    wheels = set(re.findall(r"sigmoid_head-([\w.]+)-py3-none-any\.whl", README))
    assert wheels == {version}


def test_the_release_workflow_builds_on_version_tags() -> None:
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    assert re.search(r"tags:\s*\n\s*- ['\"]?v\*", workflow)
    assert "python -m build" in workflow and "twine check" in workflow


def test_the_checker_fails_on_a_name_that_does_not_exist() -> None:
    assert extras_named('pip install ".[plotz]"  # the `evall` extra') == {"plotz", "evall"}
    assert not {"plotz", "evall"} <= EXTRAS
    assert "demoo" not in makefile_targets() and "demo" in makefile_targets()
    assert {"TORCH_INDEX", "TORCH_SPEC", "THREADS"} <= makefile_variables()
