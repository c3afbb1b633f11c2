"""p-values of paired tests: the analytic (normal) p, Holm's correction of a family, and
the text every report prints (the p with its sidedness, the family it was corrected in).

:func:`.bootstrap.paired_bootstrap` produces the tests these functions read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def normal_p(delta: float, se: float, higher_is_better: bool = True,
             alternative: str = "two-sided") -> float:
    """The p of a delta under a normal approximation with standard error ``se``.

    Two-sided: ``P(|Z| >= |delta| / se)``; ``"better"`` (one-sided, A better):
    ``P(Z >= delta / se)`` with the sign of ``delta`` flipped when lower is better. A zero
    ``se`` gives p = 1 for a zero delta and 0 otherwise; NaN stays NaN.
    """
    if math.isnan(delta) or math.isnan(se):
        return math.nan
    signed = delta if higher_is_better else -delta
    if se <= 0:
        if alternative == "two-sided":
            return 1.0 if delta == 0 else 0.0
        return 1.0 if signed <= 0 else 0.0
    z = signed / se
    if alternative == "two-sided":
        return float(math.erfc(abs(z) / math.sqrt(2.0)))
    return float(0.5 * math.erfc(z / math.sqrt(2.0)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values of one family of tests, in the input order.

    Sorted ascending, the i-th smallest (i = 1..m) gets ``(m - i + 1) * p``, made
    non-decreasing along the sorted order and capped at 1. Rejecting where the adjusted p
    is below alpha controls the family-wise error rate at alpha. NaN entries stay NaN and
    do not count towards m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]  # (m,)
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out.tolist()


def add_holm(tests: Mapping[Any, dict[str, Any]], family: str) -> None:
    """Holm-correct a family of :func:`paired_bootstrap` results in place.

    Adds ``p_holm``, ``family`` (the description given) and ``family_size`` to each, and
    ``p_holm_normal`` (the same correction of ``p_normal``) where every test has one.

    Args:
        tests: name -> a paired_bootstrap result dict (all from one family, e.g. a table's
            comparisons against one baseline).
        family: what the family is, in words (printed beside corrected p-values).
    """
    names = list(tests)
    for name, adj in zip(names, holm([tests[k]["p_value"] for k in names]), strict=True):
        tests[name].update(p_holm=adj, family=family, family_size=len(names))
    if names and all("p_normal" in tests[k] for k in names):
        for name, adj in zip(names, holm([tests[k]["p_normal"] for k in names]), strict=True):
            tests[name]["p_holm_normal"] = adj


def describe_p(test: Mapping[str, Any], digits: int = 3, family: bool = True,
               analytic: bool = False) -> str:
    """A p-value as text with its sidedness, and its Holm correction where there is one.

    ``p = 0.012 (two-sided)``; ``p = 0.012 (two-sided), Holm p = 0.036 over 3: <family>``
    (without ``: <family>`` when ``family`` is False, for a table that states its family
    once). A bootstrap p of 0 is written as ``p < 1/n_boot``. With ``analytic``, the
    analytic (normal) p of the same test follows, Holm-corrected where the family is:
    ``...; analytic Holm p = 2.1e-05``, which resolves what the resamples cannot.
    """

    def one(p: float) -> str:
        n_boot = test.get("n_boot") or 0
        if p == 0 and n_boot:
            return f"< {1 / n_boot:.{digits}g}"
        return f"= {p:.{digits}f}"

    text = f"p {one(test['p_value'])} ({test.get('alternative', 'two-sided')})"
    if "p_holm" in test:
        text += f", Holm p {one(test['p_holm'])} over {test['family_size']}"
        text += f": {test['family']}" if family else ""
    if analytic and "p_normal" in test:
        holm_normal = test.get("p_holm_normal")
        text += (f"; analytic Holm p = {holm_normal:.2g}" if holm_normal is not None
                 else f"; analytic p = {test['p_normal']:.2g}")
    return text
