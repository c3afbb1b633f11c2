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

READS = {
    "head": "the Sigmoid Head and the hidden states at the LM head's input, position by position "
            "(its token_values gets a sigmoid_head.scoring.token_scores.PassRows view)",
    "lm_logits": "the LM's log-softmax and its dominant sets, position by position (a PassRows "
                 "view)",
    "attention": "what its own capture records during the pass (the attention weights), the "
                 "softmax log-probabilities of the scored tokens and each sequence's earlier "
                 "tokens (a sigmoid_head.scoring.captured.SequenceRows view); computed only "
                 "when asked for",
}
"""What a method can read from the frozen forward pass -> what that gives its ``token_values``."""


@dataclass(frozen=True)
class Method:
    """One scoring method."""

    name: str
    """Prefix of every score key of the method (``sigmoid``, ``softmax``, ...)."""
    reads: str
    """What it reads from the pass: one of :data:`READS`."""
    token_values: str | Callable[[Any], Any] | None
    """``"module:function"`` (or the function) giving its per-token values: reading ``head``
    or ``lm_logits``, the (R,) values of R scored positions from a ``PassRows`` view; reading
    ``attention``, the (B, T) values of B sequences from a ``SequenceRows`` view. None: not
    computed by the library (a method whose values come from elsewhere)."""
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
    ``CorpusConfig`` and it runs when their ``active()`` is true. None: always computed (a
    method reading ``attention``: computed when asked for by name, ``rauq=...``)."""
    capture: str | Callable[..., Any] | None = None
    """Reading ``attention`` (and only then): ``"module:function"`` (or the function) of
    ``capture(model, config)``, a context manager over the backbone's model for the pass that
    yields a recorder of what the method reads
    (:class:`sigmoid_head.scoring.captured.Recorder`); ``config`` is what it was asked for with."""

    def __post_init__(self) -> None:
        from .contract import check_name

        check_name(self.name, "method")
        if self.reads not in READS:
            raise ValueError(f"{self.name}: reads must be one of {tuple(READS)}, got {self.reads!r}")
        if (self.capture is not None) != (self.reads == "attention"):
            raise ValueError(f"{self.name}: a method reading attention declares its capture, "
                             "and only such a method does")
        if self.reads == "attention" and self.token_values is None:
            raise ValueError(f"{self.name}: a method reading attention needs its token_values")
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
            raise ValueError(f"{self.name}: the library does not compute its values")
        return _resolved(self.token_values)

    def capture_function(self) -> Callable[..., Any]:
        """The capture (methods reading ``attention``), imported on first use."""
        if self.capture is None:
            raise ValueError(f"{self.name}: it reads {self.reads}, and captures nothing")
        return _resolved(self.capture)


def _resolved(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """A ``"module:function"`` path imported (a function as it is)."""
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)
