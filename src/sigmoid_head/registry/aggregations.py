"""The aggregations of a method's token scores into sequence scores, and their names.

The length-normalised score has one name per scale. Score records hold
``<method>_mean_log``, the mean token log-probability (a log, in (-inf, 0]): the name
``combination.json`` files, rerank's selection scores, the CLI summary and the plugin use.
Where a number in [0, 1] is needed (``evaluate``'s default rows, BCE/ECE, calibration
plots, the demo's table, the HTML page's colours) its exponential, the geometric mean of the
token probabilities, is used under another name, ``<method>_geo_mean``
(:data:`GEO_MEAN`, :meth:`Aggregation.probability_key`); it is derived when read, never
stored in a score row. Older names are still read (:data:`OLD_AGGREGATION_NAMES`;
:func:`sigmoid_head.registry.methods.canonical`, :func:`~sigmoid_head.registry.methods.
upgrade_columns`). Pure Python and numpy, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Aggregation:
    """How a sequence's (T,) token log-probabilities become one sequence score."""

    name: str
    """Its name; the record key is ``<method><suffix>``."""
    suffix: str
    """Appended to the method name to give the record key."""
    log_value: Callable[[np.ndarray], float]
    """(T,) float64 token log-probabilities -> the aggregate, in log space."""
    stored_as_log: bool
    """The record holds the log value (else its exponential, a probability)."""
    label: str
    """Its column header on the HTML page, which shows every aggregation as a number in
    [0, 1] (:meth:`probability`): the name of that number."""
    distinct: bool = True
    """False for an aggregation that only restates another in other units (the log of the
    product): left out of tables, the page and the plugin's estimators."""
    probability_name: str = ""
    """The name of its value as a number in [0, 1] when the record holds a log
    (``geo_mean`` for ``mean_log``); empty: the record holds that number already."""

    def key(self, method: str) -> str:
        """The record key of ``method``'s score under this aggregation."""
        return f"{method}{self.suffix}"

    def probability_key(self, method: str) -> str:
        """The name of ``method``'s score as a number in [0, 1] (``softmax_geo_mean`` for
        ``mean_log``; the record key when the record holds that number)."""
        return f"{method}_{self.probability_name}" if self.probability_name else self.key(method)

    def stored(self, log_probs: np.ndarray) -> float:
        """The value a record holds."""
        v = self.log_value(log_probs)
        return v if self.stored_as_log else math.exp(v)

    def probability(self, stored: float) -> float:
        """The stored value as a number in [0, 1] (``exp`` of a log value)."""
        return math.exp(stored) if self.stored_as_log else stored


GEO_MEAN = "geo_mean"
"""The name of the length-normalised score as a number in [0, 1]: ``<method>_geo_mean`` =
``exp(<method>_mean_log)``, the geometric mean of the token probabilities. ``evaluate``
derives it from the score rows (it is not a column of them); the demo's table and the HTML
page show it."""
AGGREGATIONS: dict[str, Aggregation] = {
    "product": Aggregation("product", "", lambda lp: float(lp.sum()), False, "product"),
    "logprob": Aggregation("logprob", "_logprob", lambda lp: float(lp.sum()), True,
                           "log product", distinct=False),
    "mean_log": Aggregation("mean_log", "_mean_log", lambda lp: float(lp.sum()) / lp.size, True,
                            GEO_MEAN, probability_name=GEO_MEAN),
    "min": Aggregation("min", "_min", lambda lp: float(lp.min()), False, "min"),
}
"""Aggregation name -> how it is computed and stored (the paper multiplies token scores)."""
OLD_AGGREGATION_NAMES = {"geomean": "mean_log", "geo": "mean_log"}
"""Record-key suffixes earlier releases used for the length-normalised score
(``evaluate``'s ``_geomean``, the demo's ``_geo``), whose values were geometric means in
[0, 1]: :func:`upgrade_columns` reads them as ``_mean_log`` (their log)."""
AGGREGATION_ALIASES = {GEO_MEAN: "mean_log", **OLD_AGGREGATION_NAMES}
"""Other spellings of an aggregation accepted where only the ranking matters (the plugin's
``aggregation: geo_mean``, rerank's ``softmax@geo_mean``): the geometric mean ranks as the
mean log-probability does."""


def aggregation_name(name: str) -> str:
    """The aggregation that ``name`` (an aggregation or one of
    :data:`AGGREGATION_ALIASES`) stands for; other names unchanged."""
    return AGGREGATION_ALIASES.get(name, name)
