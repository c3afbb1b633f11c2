"""Every decimal figure in the README and docs/ prose is made from committed data or checked
against it.

What is scanned: README.md and docs/*.md (not docs/results/, made whole by
recipes/bible/default_combination.py and checked by its test, nor the pages in
:data:`NOT_SCANNED`), with these parts taken out first:

* generated blocks, ``<!-- table:NAME -->`` ... ``<!-- /table:NAME -->``
  (``python -m recipes.bible.tables --check`` and tests/recipes/test_bible_tables.py hold them to
  the data);
* fenced code that is a command, a program or a configuration (``bash``, ``python``,
  ``yaml``, ...);
* fenced output marked ``<!-- recorded output: ... -->`` on the line before it: the
  output of one run, shown as a sample (each is listed by
  :func:`test_recorded_outputs_say_what_they_are`);
* inline code (options and commands: ``--lr 1e-3``) and link targets.

Every decimal figure left (``0.816``, ``+0.037``, ``97.0%``, ``2.4x``; not a version such
as 0.7.0) must lie inside a registered claim (``CLAIMS``: the data in tests/docs_claims/,
one module per part of the pages, their sources in ``docs_claims/sources.py``): a piece of
the page's text with a check that computes each of its figures, in order, from the committed data (the
per-item files under docs/results/data/, the generated tables, docs/results/*.md, the
library's defaults); or a setting of the library checked against its code; or, for
timings, a measurement whose command the page gives (kind ``measured``, not data, listed
by name). No page has exempt figures: a figure that none of these can check (a wall
time or score recorded from a run whose logs are not committed) is taken off the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_claims import CLAIMS, FIGURE, ROOT, Claim

NOT_SCANNED = {
    "performance.md": "timings and memory, each printed by the benchmark command given beside it",
    "output_contract.md": "the output contract (field names and ranges), written with the code",
    "api.md": "generated from the docstrings",
}


SCANNED = [ROOT / "README.md"] + [
    p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in NOT_SCANNED
]


GENERATED = re.compile(r"<!-- table:([^ ]+) -->.*?<!-- /table:\1 -->", re.S)


FENCE = re.compile(r"(<!-- recorded output:[^\n]*-->\n)?```([^\n]*)\n.*?```", re.S)


COMMAND_FENCES = {"bash", "sh", "console", "python", "py", "yaml", "yml", "toml"}


def prose(doc: Path) -> tuple[str, list[str]]:
    """The scanned text of a page (one line, spaces collapsed) and its recorded-output marks."""
    text = GENERATED.sub(" ", doc.read_text(encoding="utf-8"))
    recorded = []

    def fence(m: re.Match) -> str:
        if m.group(1):
            recorded.append(m.group(1).strip())
            return " "
        return " " if m.group(2).strip().lower() in COMMAND_FENCES else m.group(0)

    text = FENCE.sub(fence, text)
    text = re.sub(r"\]\([^)\s]+\)", "]", text)
    return re.sub(r"\s+", " ", text), recorded


def _check(claim: Claim, figures: list[str]) -> str | None:
    """None when every figure of the claim equals its value; else what differs."""
    if claim.values is None:
        return None
    want = claim.values()
    if len(want) != len(figures):
        return f"{len(figures)} figures in the text, {len(want)} values: {figures} vs {want}"
    for got, w in zip(figures, want, strict=True):
        if isinstance(w, str):
            signed = w.startswith(("+", "-"))
            ok = float(got) == float(w) and (not signed or got.startswith(("+", "-")))
        else:
            decimals = len(got.split("e")[0].split(".")[1])
            ok = f"{float(got):.{decimals}f}" == f"{w:.{decimals}f}"
        if not ok:
            return f"{got} in the text, {w} from the data"
    return None


def _figures(text: str) -> list[tuple[int, str]]:
    """Decimal figures outside inline code, with their positions."""
    code = [m.span() for m in re.finditer(r"`[^`]+`", text)]
    return [
        (m.start(), m.group())
        for m in FIGURE.finditer(text)
        if not any(a <= m.start() < b for a, b in code)
    ]


def pattern(claim_text: str) -> re.Pattern[str]:
    """The claim with each of its figures (outside inline code) free: a page that changes
    a figure still matches, and the check then compares the page's figure with the data."""
    out, at = [], 0
    for s, f in _figures(claim_text):
        out += [re.escape(claim_text[at:s]), r"[-+]?\d*\.\d+(?:e-?\d+)?"]
        at = s + len(f)
    return re.compile("".join([*out, re.escape(claim_text[at:])]))


def found(text: str, claim: Claim) -> list[re.Match]:
    return list(pattern(claim.text).finditer(text))


def unclaimed(doc: Path, claims: list[Claim]) -> tuple[list[tuple[int, str]], list[str]]:
    """(figures of the page's prose outside every claim, claims not found on the page)."""
    text, _ = prose(doc)
    covered, missing = [], []
    for c in claims:
        hits = found(text, c)
        missing += [] if hits else [c.text]
        covered += [m.span() for m in hits]
    return [(s, f) for s, f in _figures(text) if not any(a <= s < b for a, b in covered)], missing


def _context(text: str, at: int, figure: str) -> str:
    return text[max(0, at - 50) : at + len(figure) + 20].strip()


def unchecked_now() -> list[str]:
    """``page<TAB>figure<TAB>context`` of every unclaimed figure of every scanned page."""
    out = []
    for doc in SCANNED:
        rel = str(doc.relative_to(ROOT))
        text, _ = prose(doc)
        gaps, _ = unclaimed(doc, [c for c in CLAIMS if c.doc == rel])
        out += [f"{rel}\t{f}\t{_context(text, s, f)}" for s, f in gaps]
    return out


def figures_of(claim: Claim) -> list[str]:
    return [f for _, f in _figures(claim.text)]


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.doc}:{c.text[:40]}")
def test_claim_figures_equal_the_data(claim: Claim) -> None:
    """Each registered claim is on its page, and each figure the page gives in it equals
    its source (the registry's own copy of the text must agree too)."""
    hits = found(prose(ROOT / claim.doc)[0], claim)
    assert hits, f"{claim.doc} no longer says (figures aside): {claim.text!r}"
    for m in hits:
        problem = _check(claim, [f for _, f in _figures(m.group())])
        assert problem is None, f"{claim.doc}: {m.group()!r}: {problem}"
    assert _check(claim, figures_of(claim)) is None, (
        f"the registry's copy of {claim.text!r} is stale"
    )


@pytest.mark.parametrize("doc", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_is_claimed(doc: Path) -> None:
    """No decimal figure in a page's prose that no claim covers, on any scanned page."""
    rel = str(doc.relative_to(ROOT))
    loose = [line for line in unchecked_now() if line.startswith(rel + "\t")]
    assert loose == [], (
        f"{rel}: figures that no claim in tests/docs_claims/ checks "
        "(register each with its data source, or take it off the page)"
    )


def test_recorded_outputs_say_what_they_are() -> None:
    """Each fenced output sample that is skipped says which run it came from."""
    marks = [m for doc in SCANNED for m in prose(doc)[1]]
    assert marks and all(len(m) > len("<!-- recorded output:  -->") + 10 for m in marks)


def test_a_changed_figure_fails(tmp_path: Path) -> None:
    """The check catches a figure that differs from the data, and an unregistered one."""
    claim = next(c for c in CLAIMS if c.text == "(0.793 product, 0.819 geo-mean)")
    assert _check(claim, ["0.793", "0.819"]) is None
    assert _check(claim, ["0.793", "0.829"]) is not None
    page = tmp_path / "page.md"
    page.write_text("The head (0.793 product, 0.819 geo-mean) and a loose 0.5.\n", encoding="utf-8")
    gaps, _ = unclaimed(page, [claim])
    assert [f for _, f in gaps] == ["0.5"]
