"""Committed results files are compared with the rebuilt ones as numbers, not bytes
(recipes/common/compare.py, issue 61): rounding noise of another CPU passes, a real change
fails, and text, counts and rounded figures stay exact."""

from __future__ import annotations

import json

import pytest

from recipes.common.compare import REL, compare, tolerance_note

RAW = {"platt": {"a": 0.4726568370135307, "b": 2.4030815854322}, "n": 6420, "id": "roen-test-14"}


def _json(d: dict) -> str:
    return json.dumps(d, indent=1)


def test_a_change_in_the_16th_digit_passes() -> None:
    """The case that failed on another machine: two Platt parameters in their last digit."""
    other = {**RAW, "platt": {"a": 0.47265683701353056, "b": 2.4030815854321994}}
    got = compare(_json(RAW), _json(other))
    assert got.ok, got.problem
    assert 0 < got.largest < 1e-15
    assert "largest relative difference" in tolerance_note([got])


@pytest.mark.parametrize("a", [0.4727568370135307, 0.4726568370135307 * (1 + 10 * REL)])
def test_a_change_at_the_fourth_significant_digit_fails(a: float) -> None:
    other = {**RAW, "platt": {"a": a, "b": 2.4030815854322}}
    got = compare(_json(RAW), _json(other))
    assert not got.ok
    assert got.problem.startswith("line 3: 0.4726568370135307 committed") and "relative difference" in got.problem


def test_counts_ids_and_text_are_exact() -> None:
    assert not compare(_json(RAW), _json({**RAW, "n": 6421})).ok
    assert "integers differ" in compare(_json(RAW), _json({**RAW, "n": 6421})).problem
    assert not compare(_json(RAW), _json({**RAW, "id": "roen-test-15"})).ok
    renamed = _json(RAW).replace('"platt"', '"plat"')
    got = compare(_json(RAW), renamed)
    assert not got.ok and "text differs" in got.problem
    assert not compare(_json(RAW), _json(RAW) + "\n").ok  # a line more is a difference
    assert not compare(_json(RAW), _json({**RAW, "extra": 1.5})).ok


def test_rounded_figures_are_compared_as_printed() -> None:
    """A table's 0.256 is rounded by the code that writes it: a figure one unit off in its
    last digit is a change (a hand edit), not noise."""
    row = "| softmax | 0.256 [0.230, 0.281] | +0.034 | p < 0.001 |\n"
    assert compare(row, row).ok
    assert not compare(row, row.replace("0.256", "0.257")).ok
    assert not compare(row, row.replace("+0.034", "+0.035")).ok
    assert "rounded figures differ" in compare(row, row.replace("0.256", "0.257")).problem


def test_nan_and_infinity_are_text_and_never_pass_as_numbers() -> None:
    assert not compare('{"x": NaN}', '{"x": 0.1234567890123}').ok
    assert not compare('{"x": 1.0000000000000002}', '{"x": Infinity}').ok


def test_fitted_statistics_have_their_own_stated_tolerance() -> None:
    """Kendall's tau of a fitted ridge moved by 5.0e-06 relative on another CPU (a near-tie
    swapped): within FITTED_REL for those files only; the fourth digit still fails."""
    from recipes.common.compare import FITTED_REL

    committed, moved = '{"kendall": 0.2596446041643501}', '{"kendall": 0.2596433188045673}'
    assert not compare(committed, moved).ok
    assert compare(committed, moved, FITTED_REL).ok
    assert not compare(committed, '{"kendall": 0.2597446041643501}', FITTED_REL).ok  # 3.9e-4
    assert compare(committed, '{"kendall": 0.2596703}', FITTED_REL).ok  # ten swapped pairs, 9.9e-5
