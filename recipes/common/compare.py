"""A committed results file against the one rebuilt from committed data: numbers within a
stated tolerance, everything else exact.

Floating-point reductions are not bit-identical across CPUs, BLAS builds and thread counts,
so a float that went through an optimizer or a BLAS call (a Platt parameter, a fitted
coefficient) may come back different in its 16th digit on another machine. A byte-exact
check of such a file passes only where it was written. Here both texts are cut into their
numbers and the text between them:

- the text between numbers (words, ids' letters, table rules, JSON keys) must be equal;
- integers (counts, ids, seeds) must be equal;
- a number printed at full precision on either side (``FULL_DIGITS`` significant digits or
  more: a float written by ``json.dumps`` or ``repr``) is a raw float: equal within
  ``REL`` relative or ``ABS`` absolute difference, whichever is larger;
- any other number is a figure rounded by the code that writes the table (``0.256``,
  ``+0.034``): the rebuilt side is rounded by the same code, so it must be equal as printed.
  (A figure can still flip in its last digit if its unrounded value sits within about 1e-16
  of a rounding boundary; none of the committed figures does.)

``REL`` sits far above float64 rounding (about 1e-16 per operation, a few orders more after
an optimizer's iterations) and far below any change that matters: a change in a value's
fourth significant digit is a relative change of 1e-4 or more and fails.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
FULL_DIGITS = 10
"""Significant digits from which a printed number is a raw float, not a rounded figure."""
REL = 1e-7
"""Relative tolerance of raw floats."""
FITTED_REL = 1e-4
"""Relative tolerance of the statistics of a model fitted during the rebuild (a logistic
regression or a ridge stopped at a solver tolerance): predictions that nearly tie can swap
order on another CPU, which moves a rank statistic (Kendall's tau, ROC-AUC) by one pair in
n(n-1)/2. On a machine other than the writer's, Kendall's tau of the ridge segment model
moved by 5.0e-06 relative (recipes/human_qe/results/combination-pe-all.json); rebuilt with
numpy's AVX-512 paths off, the same statistic of the pe-all seed-1 model moved by 9.9e-06,
one pair of the 450 MQM segments (``tests/check_portable.py``). 1e-4 leaves room for about
ten such swaps; a change in the fourth significant digit (several 1e-4 relative) fails."""
ABS = 1e-12
"""Absolute tolerance of raw floats (values at or near zero)."""


@dataclass(frozen=True)
class Comparison:
    """What a comparison found.

    Attributes:
        ok: every number agrees within its tolerance and all other text is equal.
        problem: the first disagreement (``line N: ...``), empty when ``ok``.
        largest: the largest relative difference among the raw floats compared (0.0 if none).
    """

    ok: bool
    problem: str = ""
    largest: float = 0.0


def _digits(token: str) -> int:
    """Significant digits of a printed number."""
    mantissa = re.split(r"[eE]", token.lstrip("+-"))[0].replace(".", "").lstrip("0")
    return len(mantissa)


def _is_integer(token: str) -> bool:
    return not any(c in token for c in ".eE")


def _pair(old: str, new: str, rel_tol: float) -> tuple[bool, float, str]:
    """(agrees, relative difference when both are raw floats, why not)."""
    if _is_integer(old) and _is_integer(new):
        return old == new, 0.0, "integers differ"
    if max(_digits(old), _digits(new)) < FULL_DIGITS:
        return old == new, 0.0, "rounded figures differ"
    a, b = float(old), float(new)
    diff = abs(a - b)
    rel = diff / max(abs(a), abs(b)) if diff else 0.0
    ok = math.isfinite(diff) and diff <= max(ABS, rel_tol * max(abs(a), abs(b)))
    return ok, rel, f"relative difference {rel:.1e} > {rel_tol:.0e}"


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def compare(committed: str, rebuilt: str, rel_tol: float = REL) -> Comparison:
    """Compare a committed text with the rebuilt one (see the module's docstring).

    Args:
        committed: the file as committed.
        rebuilt: the same file as rebuilt from the data.
        rel_tol: relative tolerance of raw floats (:data:`REL`; :data:`FITTED_REL` for the
            statistics of a model fitted during the rebuild).

    Returns:
        A :class:`Comparison`; its ``problem`` names the first line that differs.
    """
    if committed == rebuilt:
        return Comparison(True)
    olds, news = list(NUMBER.finditer(committed)), list(NUMBER.finditer(rebuilt))
    old_text, new_text = NUMBER.split(committed), NUMBER.split(rebuilt)
    largest = 0.0
    for i, (o, n) in enumerate(zip(olds, news, strict=False)):
        if old_text[i] != new_text[i]:
            return Comparison(False, _text_problem(committed, rebuilt), largest)
        ok, rel, why = _pair(o.group(), n.group(), rel_tol)
        if not ok:
            return Comparison(False, f"line {_line(committed, o.start())}: {o.group()} committed, "
                                     f"{n.group()} rebuilt ({why})", largest)
        largest = max(largest, rel)
    if len(olds) != len(news) or old_text[len(olds)] != new_text[len(news)]:
        return Comparison(False, _text_problem(committed, rebuilt), largest)
    return Comparison(True, "", largest)


def _text_problem(committed: str, rebuilt: str) -> str:
    """The first line whose text differs, numbers aside."""
    a, b = committed.splitlines(), rebuilt.splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if NUMBER.sub("#", x) != NUMBER.sub("#", y):
            return f"line {i}: text differs: {x.strip()[:80]!r} committed, {y.strip()[:80]!r} rebuilt"
    return f"{len(a)} lines committed, {len(b)} rebuilt"


def tolerance_note(results: list[Comparison]) -> str:
    """One line on how close the files that agree are (for a passing check's output)."""
    largest = max((r.largest for r in results if r.ok), default=0.0)
    return (f"numbers compared within relative {REL:.0e} (raw floats; {FITTED_REL:.0e} for "
            f"statistics of models fitted in the rebuild) and as printed (rounded figures); "
            f"largest relative difference {largest:.1e}")
