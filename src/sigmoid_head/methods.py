"""The one registry of scoring methods and of the aggregations of their token scores.

A *method* gives every scored token a probability-like confidence: the Sigmoid Head's
probability, the LM's softmax probability, BoostedProb, RAUQ's confidence. Each is
declared once here (:data:`METHODS`) with what it reads from the frozen forward pass, the
function computing its per-token values, and the sequence aggregations that apply; every
consumer (token scores and records, ``evaluate``, the HTML page, calibration, the combined
score, the CLI summary, the demo, the LM-Polygraph plugin) iterates this registry.

Adding a baseline is one file (its per-token function) plus one :func:`register` line
(below, or in a plugin: a distribution whose entry point in the group
:data:`ENTRY_POINT_GROUP` names a module or function that registers it; plugins are loaded
on the registry's first use, a broken one with a one-line warning), e.g.::

    register(Method("margin", reads="lm_logits",
                    token_values="sigmoid_head.scoring.margin:token_log_probs"))

``token_values`` is a ``"module:function"`` path (or the function itself), resolved only by
the scoring code (:mod:`sigmoid_head.scoring.token_scores`), so this module and everything
that only reads score files (``evaluate``) stay free of torch. The function gets a
:class:`sigmoid_head.scoring.token_scores.PassRows` view of R scored positions and returns
(R,) natural-log probabilities (``token_unit="log"``) or probabilities (``"probability"``).

The length-normalised score has one name everywhere: ``mean_log`` (``<method>_mean_log``,
the mean token log-probability). It is the name score records have always carried and
the one ``combination.json`` files and the CLI summary use; where a number in [0, 1] is
needed (BCE, calibration plots, colours) its exponential, the geometric mean of the token
probabilities, is used under the same name. Older names are still read
(:data:`OLD_AGGREGATION_NAMES`, :func:`canonical`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import numpy as np

from .baseline_settings import RauqSettings

READS = ("head", "lm_logits", "attention")
"""What a method reads from the pass: the Sigmoid Head's row of the token at the LM head's
input, the LM's logits (softmax, dominant set), or the attention weights (asked for)."""


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
    """Its name in tables and on the HTML page."""
    distinct: bool = True
    """False for an aggregation that only restates another in other units (the log of the
    product): left out of tables, the page and the plugin's estimators."""

    def key(self, method: str) -> str:
        """The record key of ``method``'s score under this aggregation."""
        return f"{method}{self.suffix}"

    def stored(self, log_probs: np.ndarray) -> float:
        """The value a record holds."""
        v = self.log_value(log_probs)
        return v if self.stored_as_log else math.exp(v)

    def probability(self, stored: float) -> float:
        """The stored value as a number in [0, 1] (``exp`` of a log value)."""
        return math.exp(stored) if self.stored_as_log else stored


AGGREGATIONS: dict[str, Aggregation] = {
    "product": Aggregation("product", "", lambda lp: float(lp.sum()), False, "product"),
    "logprob": Aggregation("logprob", "_logprob", lambda lp: float(lp.sum()), True,
                           "log product", distinct=False),
    "mean_log": Aggregation("mean_log", "_mean_log", lambda lp: float(lp.sum()) / lp.size, True,
                            "mean_log (geo-mean)"),
    "min": Aggregation("min", "_min", lambda lp: float(lp.min()), False, "min"),
}
"""Aggregation name -> how it is computed and stored (the paper multiplies token scores)."""
OLD_AGGREGATION_NAMES = {"geo_mean": "mean_log", "geomean": "mean_log", "geo": "mean_log"}
"""Names earlier releases used for ``mean_log`` (the plugin's ``geo_mean``, ``evaluate``'s
``_geomean``, the demo's ``_geo``); still accepted."""


@dataclass(frozen=True)
class Method:
    """One scoring method."""

    name: str
    """Prefix of every score key of the method (``sigmoid``, ``softmax``, ...)."""
    reads: str
    """What it reads from the pass: one of :data:`READS`."""
    token_values: str | Callable[[Any], Any] | None
    """``"module:function"`` (or the function) giving the (R,) per-token values of R scored
    positions from a ``PassRows`` view; None when the scoring path fills them itself (RAUQ,
    which needs each sequence's earlier tokens)."""
    token_unit: str = "log"
    """``"log"``: the function returns log-probabilities; ``"probability"``: probabilities."""
    aggregations: tuple[str, ...] = tuple(AGGREGATIONS)
    """The keys of :data:`AGGREGATIONS` that apply."""
    label: str = ""
    """Its name in prose and legends (default: ``name``)."""
    combination_parts: tuple[str, ...] = ()
    """Aggregations offered as the softmax-side part of the combined score
    (:mod:`sigmoid_head.evaluation.combination`)."""
    monte_carlo: bool = True
    """Monte Carlo sequence entropy applies (``generate --mc-samples`` writes ``mc_<name>``
    from its sampled outputs' log-probabilities)."""
    settings: type | None = None
    """Settings dataclass of an opt-in method (RAUQ's); its fields are settings of
    ``CorpusConfig`` and it runs when their ``active()`` is true. None: always computed."""

    def __post_init__(self) -> None:
        if self.reads not in READS:
            raise ValueError(f"{self.name}: reads must be one of {READS}, got {self.reads!r}")
        if self.token_unit not in ("log", "probability"):
            raise ValueError(f"{self.name}: token_unit must be 'log' or 'probability'")
        unknown = set(self.aggregations) - set(AGGREGATIONS)
        if unknown or not set(self.combination_parts) <= set(self.aggregations):
            raise ValueError(f"{self.name}: unknown aggregations {sorted(unknown)}")

    @property
    def value_key(self) -> str:
        """The key of its per-token values among the pass's values (``<name>_log``, or the
        name for probabilities)."""
        return f"{self.name}_log" if self.token_unit == "log" else self.name

    def keys(self, distinct_only: bool = False) -> list[str]:
        """The record keys of its sequence scores, in aggregation order."""
        return [AGGREGATIONS[a].key(self.name) for a in self.aggregations
                if AGGREGATIONS[a].distinct or not distinct_only]

    def values_function(self) -> Callable[[Any], Any]:
        """The per-token function, imported on first use."""
        if self.token_values is None:
            raise ValueError(f"{self.name}: its values are filled by the scoring path")
        if callable(self.token_values):
            return self.token_values
        module, _, name = self.token_values.partition(":")
        return getattr(import_module(module), name)


METHODS: dict[str, Method] = {}
"""Method name -> its declaration, in the order records, tables and pages show them."""


def register(method: Method) -> Method:
    """Add a method to :data:`METHODS` (a name may be registered once)."""
    if method.name in METHODS:
        raise ValueError(f"method {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove a method (tests and plugins that register one for a while)."""
    del METHODS[name]


ENTRY_POINT_GROUP = "sigmoid_head.methods"
"""The entry-point group of plugins: each entry names a module (registering at import) or a
function (called without arguments) that registers methods and columns."""
_plugins = {"loaded": False}


def load_plugins() -> list[str]:
    """Load every plugin of :data:`ENTRY_POINT_GROUP` once (later calls do nothing); a
    plugin that fails to load is skipped with a one-line warning. Returns the loaded names."""
    if _plugins["loaded"]:
        return []
    _plugins["loaded"] = True
    import warnings
    from importlib.metadata import entry_points

    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if callable(obj):
                obj()
            loaded.append(ep.name)
        except Exception as err:  # a broken plugin must not stop the library
            first = str(err).splitlines()[0] if str(err) else ""
            warnings.warn(f"sigmoid-head plugin {ep.name!r} ({ep.value}) not loaded: "
                          f"{type(err).__name__}: {first}", stacklevel=2)
    return loaded


def methods(reads: str | None = None) -> list[Method]:
    """The registered methods (those reading ``reads`` only, when given)."""
    load_plugins()
    return [m for m in METHODS.values() if reads is None or m.reads == reads]


def names(reads: str | None = None) -> tuple[str, ...]:
    """The registered method names (see :func:`methods`)."""
    return tuple(m.name for m in methods(reads))


def aggregation_of(key: str) -> tuple[Method, Aggregation] | None:
    """(method, aggregation) of a record key such as ``softmax_mean_log``, else None."""
    load_plugins()
    for m in METHODS.values():
        for a in m.aggregations:
            if AGGREGATIONS[a].key(m.name) == key:
                return m, AGGREGATIONS[a]
    return None


def canonical(key: str) -> str:
    """A score name with an old aggregation suffix renamed (``softmax_geomean`` ->
    ``softmax_mean_log``; see :data:`OLD_AGGREGATION_NAMES`); other names unchanged."""
    load_plugins()
    for m in METHODS:
        for old, new in OLD_AGGREGATION_NAMES.items():
            if key == f"{m}_{old}":
                return AGGREGATIONS[new].key(m)
    return key


def upgrade_columns(columns: dict[str, Any]) -> dict[str, Any]:
    """Score columns (or one record) of an older file under today's names, in place.

    A ``<method>_geomean`` / ``_geo`` value (a geometric mean, in [0, 1]) becomes
    ``<method>_mean_log`` (its log) unless that key is there already.
    """
    for key in list(columns):
        new = canonical(key)
        if new != key:
            value = columns.pop(key)
            columns.setdefault(new, np.log(np.maximum(value, 1e-300)))
    return columns


def sequence_scores(method: str, log_probs: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Every sequence score of one method from its (T,) token log-probabilities, T >= 1
    (a name that is not registered gets every aggregation)."""
    aggs = METHODS[method].aggregations if method in METHODS else tuple(AGGREGATIONS)
    lp = np.asarray(log_probs, dtype=np.float64)
    if lp.ndim != 1 or lp.size == 0:
        raise ValueError(f"{method}: need a non-empty 1-D array of log-probabilities")
    return {AGGREGATIONS[a].key(method): AGGREGATIONS[a].stored(lp) for a in aggs}


# ----------------------------------------------------------------------------- the methods
register(Method("sigmoid", reads="head", label="Sigmoid Head",
                token_values="sigmoid_head.scoring.token_scores:sigmoid_log"))
register(Method("softmax", reads="lm_logits", label="softmax",
                token_values="sigmoid_head.scoring.token_scores:softmax_log",
                combination_parts=("min", "mean_log")))
register(Method("boostedprob", reads="lm_logits", label="BoostedProb", token_unit="probability",
                token_values="sigmoid_head.scoring.token_scores:boostedprob",
                combination_parts=("mean_log",), monte_carlo=False))
register(Method("rauq", reads="attention", label="RAUQ", token_values=None, monte_carlo=False,
                settings=RauqSettings))
