"""Every field of a ``score``/``generate`` output record: its direction and range.

``sigmoid-head score --describe`` (and ``generate --describe``) prints this table, so no
user has to guess whether a number is a confidence or an uncertainty. ``<m>`` stands for
each registered scoring method (:mod:`sigmoid_head.methods`: ``sigmoid`` (the head),
``softmax``, ``boostedprob``, ``rauq``, ...) and ``sigmoid:<name>`` for a further head.
Pure Python, no torch.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .. import methods as registry


class Field(NamedTuple):
    """One output field."""

    name: str
    direction: str
    """"higher = better", "higher = worse" or "-" (a count, an offset, a label)."""
    range: str
    meaning: str


HIGHER_BETTER, HIGHER_WORSE, NEITHER = "higher = better", "higher = worse", "-"
FIELDS: tuple[Field, ...] = (
    Field("<m>", HIGHER_BETTER, "[0, 1]", "product of the token probabilities"),
    Field("<m>_logprob", HIGHER_BETTER, "(-inf, 0]", "sum of the token log-probabilities"),
    Field("<m>_mean_log", HIGHER_BETTER, "(-inf, 0]", "mean token log-probability"),
    Field("<m>_min", HIGHER_BETTER, "[0, 1]", "lowest token probability"),
    Field("<m>_platt, <m>_isotonic", HIGHER_BETTER, "[0, 1]",
          "calibrated probability that the output is good (calibrate --gold)"),
    Field("combined", HIGHER_BETTER, "[0, 1]", "exp(combined_log)"),
    Field("combined_log", HIGHER_BETTER, "(-inf, 0]",
          "w * head mean log + (1 - w) * baseline log, nats per token"),
    Field("entropy_mean", HIGHER_WORSE, "[0, ln |V|]",
          "mean softmax entropy in nats: an uncertainty (evaluate shows -entropy_mean)"),
    Field("mc_softmax, mc_sigmoid", HIGHER_BETTER, "(-inf, 0]",
          "minus the Monte Carlo sequence entropy"),
    Field("self_judge", HIGHER_BETTER, "[0, 1]", "P(yes) / (P(yes) + P(no)) of the LM judging its output"),
    Field("comet_kiwi", HIGHER_BETTER, "about [0, 1]", "CometKiwi quality score"),
    Field("dominant_mean", NEITHER, "[0, 200]", "mean size of the dominant token set"),
    Field("n_tokens", NEITHER, "[1, inf)", "scored tokens, special tokens included"),
    Field("finished, truncated", NEITHER, "true/false", "generation ended with EOS / "
          "the prompt or the candidate was cut to fit the model (a warning names the input's "
          "file:line)"),
    Field("tokens[].<m>", HIGHER_BETTER, "[0, 1]", "probability of the token (--with-tokens)"),
    Field("tokens[].entropy", HIGHER_WORSE, "[0, ln |V|]", "softmax entropy at the token, nats"),
    Field("tokens[].n_dominant", NEITHER, "[0, 200]", "dominant-set size at the token"),
    Field("tokens[].start, .end", NEITHER, "[0, len(candidate)]",
          "character offsets of the token in the candidate, end exclusive"),
    Field("words[].<m>", HIGHER_BETTER, "[0, 1]", "product of the word's token probabilities"),
    Field("words[].start, .end", NEITHER, "[0, len(candidate)]",
          "character offsets of the word (whitespace stripped), end exclusive"),
    Field("errors[].start, .end", NEITHER, "[0, len(candidate)]",
          "character offsets of an error span, end exclusive (same as words')"),
    Field("errors[].confidence", HIGHER_WORSE, "[0, 1]",
          "1 - the span's lowest word score: higher = more surely an error"),
    Field("errors[].severity", NEITHER, "minor/major", "major below the saved major_below"),
)
"""Every field, in the order :func:`describe` lists them."""


def describe() -> str:
    """The fields as a Markdown table (field, direction, range, meaning)."""
    rows = ["| field | direction | range | meaning |", "|---|---|---|---|"]
    rows += [f"| `{f.name}` | {f.direction} | {f.range} | {f.meaning} |" for f in FIELDS]
    return "\n".join(rows) + "\n"


def method_pattern() -> str:
    """What ``<m>`` stands for: a registered method, or ``sigmoid:<name>`` for a further
    head (read when asked, so a method registered later is covered)."""
    names = "|".join(re.escape(n) for n in sorted(registry.names(), key=len, reverse=True))
    return rf"(?:{names}|sigmoid:[^_]+)"


def _names(f: Field) -> list[str]:
    """The names a field entry covers: ``"tokens[].start, .end"`` -> two names."""
    parts = [p.strip() for p in f.name.split(",")]
    root = parts[0].rsplit(".", 1)[0] if "." in parts[0] else ""
    return [root + p if p.startswith(".") else p for p in parts]


def field_for(name: str) -> Field | None:
    """The :data:`FIELDS` entry of the output field ``name`` (e.g. ``softmax_mean_log``,
    ``tokens[].start``); None when no entry describes it."""
    method = method_pattern()
    for f in FIELDS:
        for n in _names(f):
            if re.fullmatch(re.escape(n).replace(re.escape("<m>"), method), name):
                return f
    return None
