"""Every field of a ``score``/``generate`` output record: its direction and range.

``sigmoid-head score --describe`` (and ``generate --describe``) prints this table, so no
user has to guess whether a number is a confidence or an uncertainty. The fields are the
entries of the column registry (:mod:`sigmoid_head.registry.columns`), so a column registered there
(by the package or a plugin) is described here too. ``<m>`` stands for each registered
scoring method (:mod:`sigmoid_head.registry.methods`: ``sigmoid`` (the head), ``softmax``,
``boostedprob``, ``rauq``, ...) and ``sigmoid:<name>`` for a further head. Pure Python, no
torch.
"""

from __future__ import annotations

from typing import NamedTuple

from ..registry import columns as cols


class Field(NamedTuple):
    """One output field."""

    name: str
    direction: str
    """"higher = better", "higher = worse" or "-" (a count, an offset, a label)."""
    range: str
    meaning: str


HIGHER_BETTER, HIGHER_WORSE, NEITHER = cols.HIGHER_BETTER, cols.HIGHER_WORSE, cols.NEITHER


def row_fields() -> tuple[Field, ...]:
    """Every field of a score/generate row, in the order :func:`describe` lists them (the
    registry's columns, rerank's own row fields left out)."""
    return tuple(Field(*r) for r in cols.describe_rows(lambda c: c.level != cols.RERANK))


def __getattr__(name: str) -> object:
    if name == "FIELDS":  # read when asked, so a column registered later is listed
        return row_fields()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe() -> str:
    """The fields as a Markdown table (field, direction, range, meaning), then what ``<m>``
    and ``<mc>`` stand for: the methods registered now (a plugin's included)."""
    return table(row_fields()) + "\n" + method_names()


def method_names() -> str:
    """The lines naming the methods behind ``<m>`` (and ``<mc>``) in :func:`describe`."""
    from ..registry import methods as registry

    every = ", ".join(f"`{m.name}`" for m in registry.methods())
    mc = ", ".join(f"`{m.name}`" for m in registry.methods() if m.monte_carlo)
    out = f"`<m>` stands for each scoring method: {every} (and `sigmoid:<name>` for a further head).\n"
    return out + (f"`<mc>` stands for those Monte Carlo entropy applies to: {mc}.\n" if mc else "")


def table(rows: tuple[Field, ...]) -> str:
    """Fields as a Markdown table."""
    lines = ["| field | direction | range | meaning |", "|---|---|---|---|"]
    lines += [table_row(f) for f in rows]
    return "\n".join(lines) + "\n"


def table_row(f: Field) -> str:
    """One field as a Markdown table row; a ``|`` inside a cell (``[0, ln |V|]``) is escaped,
    so the table stays one of four columns when pasted."""
    cells = (f"`{f.name}`", f.direction, f.range, f.meaning)
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def method_pattern() -> str:
    """What ``<m>`` stands for: a registered method, or ``sigmoid:<name>`` for a further
    head (read when asked, so a method registered later is covered)."""
    return cols.method_pattern()


def field_for(name: str) -> Field | None:
    """The entry of the output field ``name`` (e.g. ``softmax_mean_log``,
    ``tokens[].start``); None when no entry describes it."""
    c = cols.column_for(name)
    if c is None or c.level == cols.RERANK:
        return None
    shown = ", ".join(c.expand()) if "<mc>" in c.name else c.name
    return Field(shown, c.direction, c.range, c.meaning)
