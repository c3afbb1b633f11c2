"""The documentation site, API reference included, builds with warnings as errors.

``mkdocs build --strict`` renders README-linked pages under docs/ and docs/api.md, whose
``::: sigmoid_head...`` entries mkdocstrings fills from the docstrings: a docstring that
names a parameter the signature lacks, a broken link between pages or a page missing from
the navigation fails this test. mkdocs and mkdocstrings are in the ``dev`` extra.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')")
    pytest.importorskip(
        "mkdocstrings", reason="mkdocstrings is not installed (pip install -e '.[dev]')"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    warnings = [line for line in run.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert run.returncode == 0 and warnings == [], run.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "SigmoidHeadModel" in api and "from_pretrained" in api  # the docstrings were rendered


def test_every_page_is_in_the_navigation() -> None:
    """A page under docs/ that the site does not list would be built but never found."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, flags=re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert sorted(pages - listed) == [], "pages missing from mkdocs.yml's nav: add them there"


def test_the_readme_reads_in_five_minutes() -> None:
    """The README stays a short tour (issue 39: under 250 lines); details go to docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250
