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

The length-normalised score has one name per scale. Score records hold
``<method>_mean_log``, the mean token log-probability (a log, in (-inf, 0]): the name
``combination.json`` files, rerank's selection scores, the CLI summary and the plugin use.
Where a number in [0, 1] is needed (``evaluate``'s default rows, BCE/ECE, calibration
plots, the demo's table, the HTML page's colours) its exponential, the geometric mean of the
token probabilities, is used under another name, ``<method>_geo_mean``
(:data:`GEO_MEAN`, :meth:`Aggregation.probability_key`); it is derived when read, never
stored in a score row. Older names are still read (:data:`OLD_AGGREGATION_NAMES`,
:func:`canonical`, :func:`upgrade_columns`).
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
        from .contract import check_name

        check_name(self.name, "method")
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

    def probability_keys(self) -> list[str]:
        """The names of its distinct sequence scores as numbers in [0, 1] (``evaluate``'s
        default rows, the demo's table: ``<name>``, ``<name>_geo_mean``, ``<name>_min``)."""
        return [AGGREGATIONS[a].probability_key(self.name) for a in self.aggregations
                if AGGREGATIONS[a].distinct]

    def written_keys(self) -> list[str]:
        """Every key this method makes the library write or derive: its sequence scores,
        their probability-scale names, its per-token values, its token and word fields, its
        calibrated and Monte Carlo columns."""
        keys = [*self.keys(), *self.probability_keys(), self.value_key, self.name,
                f"tokens[].{self.name}", f"words[].{self.name}", f"{self.name}_platt",
                f"{self.name}_isotonic"]
        return list(dict.fromkeys(keys + ([f"mc_{self.name}"] if self.monte_carlo else [])))

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


def add_once(table: dict[str, Any], name: str, item: Any, what: str) -> Any:
    """Put ``item`` in a registry ``table`` under ``name``, refused if the name is taken
    (the rule of every registry of the package: this one and the column registry)."""
    if name in table:
        raise ValueError(f"{what} {name!r} is already registered")
    table[name] = item
    return item


def register(method: Method) -> Method:
    """Add a method to :data:`METHODS` (a name may be registered once; none of the keys it
    writes may be one another method or a column writes, see
    :mod:`sigmoid_head.registry.contract`)."""
    if method.name not in METHODS and _plugins.get("builtins_done"):
        from .contract import check_keys

        check_keys(f"method {method.name!r}", method.written_keys(), taken_keys())
    return add_once(METHODS, method.name, method, "method")


KEY_SOURCES: list[Callable[[], dict[str, str]]] = []
"""What else writes keys into rows: the column registry adds its ``taken_keys`` when it is
imported (the package imports it with this module), so that this registry need not import it."""


def taken_keys() -> dict[str, str]:
    """Every key a registered method (or, through :data:`KEY_SOURCES`, column) writes -> who."""
    taken = {k: f"the method {m.name!r}" for m in METHODS.values() for k in m.written_keys()}
    for source in KEY_SOURCES:
        taken.update(source())
    return taken


def unregister(name: str) -> None:
    """Remove a method (tests and plugins that register one for a while)."""
    del METHODS[name]


ENTRY_POINT_GROUP = "sigmoid_head.methods"
"""The entry-point group of plugins: each entry names a module (registering at import) or a
function (called without arguments) that registers methods and columns."""
_plugins = {"loaded": False}


def load_plugins() -> list[str]:
    """Load every plugin of :data:`ENTRY_POINT_GROUP` once (later calls do nothing). A plugin
    that fails to load (any exception, ``SystemExit`` included, or a registration the
    contract of :mod:`sigmoid_head.registry.contract` refuses) is skipped with a one-line
    warning and whatever it registered is removed; ``KeyboardInterrupt`` is raised again as
    :class:`PluginInterrupted`, naming the plugin. A plugin's output to the standard output
    goes to the standard error. Returns the loaded names."""
    if _plugins["loaded"]:
        return []
    _plugins["loaded"] = True
    from importlib.metadata import entry_points

    from ..safe.outputs import stdout_to_stderr

    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        before = _registered()
        try:
            with stdout_to_stderr():
                obj = ep.load()
                if callable(obj):
                    obj()
            loaded.append(ep.name)
        except KeyboardInterrupt:
            _roll_back(before)
            raise PluginInterrupted(f"interrupted while loading the plugin {ep.name!r} "
                                    f"({ep.value})") from None
        except BaseException as err:  # noqa: BLE001 - a broken plugin must not stop the library
            _roll_back(before)
            _warn_not_loaded(ep, err)
    return loaded


class PluginInterrupted(KeyboardInterrupt):
    """A ``KeyboardInterrupt`` while a plugin was loading (its message names the plugin)."""


def _registered() -> tuple[set[str], set[str]]:
    """The names of the registered methods and columns (columns: if that module is loaded)."""
    import sys

    cols = sys.modules.get(f"{__package__}.columns")
    return set(METHODS), set(cols.COLUMNS) if cols is not None else set()


def _roll_back(before: tuple[set[str], set[str]]) -> None:
    """Remove the methods and columns registered since ``before``."""
    import sys

    for name in set(METHODS) - before[0]:
        del METHODS[name]
    cols = sys.modules.get(f"{__package__}.columns")
    for name in set(cols.COLUMNS) - before[1] if cols is not None else ():
        del cols.COLUMNS[name]


def _warn_not_loaded(ep: Any, err: BaseException) -> None:
    import warnings

    text = str(err) if not isinstance(err, SystemExit) else f"exit code {err.code!r}"
    first = text.splitlines()[0][:200] if text else ""
    warnings.warn(f"sigmoid-head plugin {ep.name!r} ({ep.value}) not loaded: "
                  f"{type(err).__name__}: {first}", stacklevel=3)


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


def _renamed(key: str, names: dict[str, str]) -> tuple[str, str] | None:
    """(method, aggregation) when ``key`` is ``<method>_<name>`` with ``name`` in ``names``."""
    load_plugins()
    for m in METHODS:
        for old, new in names.items():
            if key == f"{m}_{old}":
                return m, new
    return None


def canonical(key: str) -> str:
    """A record key of an earlier release under today's name (``softmax_geomean`` ->
    ``softmax_mean_log``; see :data:`OLD_AGGREGATION_NAMES`); other names unchanged
    (``softmax_geo_mean``, the probability-scale name, included)."""
    found = _renamed(key, OLD_AGGREGATION_NAMES)
    return key if found is None else AGGREGATIONS[found[1]].key(found[0])


def ranking_key(key: str) -> str:
    """The record key that ranks outputs as ``key`` does: :func:`canonical`, and a
    probability-scale name as its record key (``softmax_geo_mean`` -> ``softmax_mean_log``).
    For a selection score (rerank), where only the order matters."""
    found = _renamed(key, AGGREGATION_ALIASES)
    return key if found is None else AGGREGATIONS[found[1]].key(found[0])


def probability_key(key: str) -> str:
    """A score name as ``evaluate`` reports it: the length-normalised score of an earlier
    release (``softmax_geomean``, ``softmax_geo``: geometric means) as
    ``softmax_geo_mean``; other names (``softmax_mean_log``, the log) unchanged."""
    found = _renamed(key, OLD_AGGREGATION_NAMES)
    return key if found is None else AGGREGATIONS[found[1]].probability_key(found[0])


def upgrade_columns(columns: dict[str, Any]) -> dict[str, Any]:
    """Score columns (or one record) of an older file under today's names, in place.

    A ``<method>_geomean`` / ``_geo`` value (a geometric mean, in [0, 1]) becomes
    ``<method>_mean_log`` (its log) unless that key is there already. A
    ``<method>_geo_mean`` column (today's probability-scale name) is left as it is.
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
_plugins["builtins_done"] = True
