"""The one registry of scoring methods and of the aggregations of their token scores.

A *method* gives every scored token a probability-like confidence: the Sigmoid Head's
probability, the LM's softmax probability, BoostedProb, RAUQ's confidence. Each is
declared once (a :class:`~.method_type.Method`: what it reads from the frozen forward pass,
the function computing its per-token values, and the sequence aggregations that apply, of
:mod:`.aggregations`) and registered here (:data:`METHODS`); every consumer (token scores
and records, ``evaluate``, the HTML page, calibration, the combined score, the CLI summary,
the demo, the LM-Polygraph plugin) iterates this registry. The built-in methods are
:mod:`.builtin_methods`.

Adding a baseline is one file (its per-token function) plus one entry of
:data:`~.builtin_methods.BUILTIN_METHODS`, or one :func:`register` line in a plugin (a
distribution whose entry point in the group :data:`ENTRY_POINT_GROUP` names a module or
function that registers it; plugins are loaded on the registry's first use, a broken one with
a one-line warning), e.g.::

    register(Method("margin", reads="lm_logits",
                    token_values="sigmoid_head.scoring.margin:token_log_probs"))

``token_values`` is a ``"module:function"`` path (or the function itself), resolved only by
the scoring code (:mod:`sigmoid_head.scoring.token_scores`), so this module and everything
that only reads score files (``evaluate``) stay free of torch. What the function gets
follows from what the method declares it reads (:data:`~.method_type.READS`): a
:class:`sigmoid_head.scoring.token_scores.PassRows` view of R scored positions, returning
(R,) natural-log probabilities (``token_unit="log"``) or probabilities (``"probability"``);
or, for a method reading ``attention`` (RAUQ), which also declares its ``capture``, a
:class:`sigmoid_head.scoring.captured.SequenceRows` view of whole sequences.

This module also names the types and tables of :mod:`.method_type` and :mod:`.aggregations`
(``from sigmoid_head.registry.methods import Method, register`` is a plugin's import).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .aggregations import (
    AGGREGATION_ALIASES,
    AGGREGATIONS,
    GEO_MEAN,
    OLD_AGGREGATION_NAMES,
    Aggregation,
    aggregation_name,
)
from .builtin_methods import BUILTIN_METHODS
from .method_type import READS, Method

__all__ = [
    "AGGREGATIONS", "AGGREGATION_ALIASES", "ENTRY_POINT_GROUP", "GEO_MEAN", "KEY_SOURCES",
    "METHODS", "OLD_AGGREGATION_NAMES", "READS", "Aggregation", "Method", "PluginInterrupted",
    "add_once", "aggregation_name", "aggregation_of", "canonical", "load_plugins", "methods",
    "names", "probability_key", "ranking_key", "register", "sequence_scores", "taken_keys",
    "unregister", "upgrade_columns",
]

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


for _builtin in BUILTIN_METHODS:
    register(_builtin)
_plugins["builtins_done"] = True
