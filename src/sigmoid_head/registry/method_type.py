"""The Method type: what one scoring method declares (what it reads from the forward pass,
where its per-token values come from, which aggregations apply). The registry itself, and
the lookups by name, are :mod:`sigmoid_head.registry.methods`; the built-in methods are
:mod:`sigmoid_head.registry.builtin_methods`. No torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from .aggregations import AGGREGATIONS

READS = ("head", "lm_logits", "attention")
"""What a method reads from the pass: the Sigmoid Head's row of the token at the LM head's
input, the LM's logits (softmax, dominant set), or the attention weights (asked for)."""


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
