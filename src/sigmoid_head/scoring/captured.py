"""Methods that read the pass's attention (``reads="attention"``: RAUQ), for force-decoding
and generation alike.

Such a method declares two functions in the registry
(:class:`~sigmoid_head.registry.method_type.Method`):

* ``capture(model, config)``: a context manager over the backbone's model for the pass,
  yielding a :class:`Recorder` of what the method reads (RAUQ: one attention diagonal per
  selected layer; eager attention inside the block);
* ``token_values(rows)``: its per-token values from a :class:`SequenceRows` view: what the
  recorder recorded at the query predicting each scored token, the softmax log-probabilities
  of those tokens, and each sequence's earlier tokens (a sequence's values are computed
  together, in one padded batch).

A method reading attention is computed only when asked for: by its name as a keyword of the
scoring functions (``score_records(..., rauq=RauqConfig())``; None or False: not asked), or
through its settings in :class:`~.corpus_config.CorpusConfig` (``--rauq``). The ``config``
its functions get is the keyword's value, or those settings. :class:`PassCaptures` is what
:mod:`.force_decode` and :mod:`.generate` run, whatever the methods.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ..registry import methods as registry
from ..registry.contract import DeferredChecks, token_values


class Recorder(Protocol):
    """What a method's capture yields."""

    def clear(self) -> None:
        """Forget what was recorded (before the next batch)."""

    def at(self, row: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """(N, ...) what was recorded at (row, query) of the single forward call."""

    def per_step(self) -> torch.Tensor | None:
        """(B, S, ...) what was recorded at the last query of each of S forward calls (the
        generation steps), or None when that is not known (the outputs are force-decoded)."""


@dataclass
class SequenceRows:
    """B scored sequences of one pass, padded to T tokens: what a method reading attention
    computes its values from.

    Attributes:
        logp: (B, T) the softmax log-probability of each scored token.
        captured: (B, T, ...) what the method's recorder recorded at the query predicting it.
        lengths: (B,) scored tokens per sequence (>= 1); positions past them are padding.
        config: the method's settings, as asked for.
    """

    logp: torch.Tensor
    captured: torch.Tensor
    lengths: torch.Tensor
    config: Any = None


def on_positions(values: Callable[[SequenceRows], torch.Tensor], log_p: torch.Tensor,
                 captured: torch.Tensor, row: torch.Tensor, n_rows: int,
                 config: Any = None) -> torch.Tensor:
    """``values`` of N flat positions, those of a row in sequence order (as
    ``Backbone.positions`` gives them): padded to (B, T) in float64, computed, unpadded.

    Args:
        values: (B, T) values from a :class:`SequenceRows` view.
        log_p: (N,) token log-probabilities.
        captured: (N, ...) what was recorded at each position's query.
        row: (N,) the sequence of each position, non-decreasing.
        n_rows: number of sequences.
        config: passed on in the view.

    Returns:
        (N,) the values per position.
    """
    lengths = torch.bincount(row, minlength=n_rows)  # (B,)
    starts = torch.cumsum(lengths, 0) - lengths
    step = torch.arange(row.numel(), device=row.device) - starts[row]  # (N,)
    t = int(lengths.max())
    pad_p = log_p.new_zeros((n_rows, t), dtype=torch.float64)
    pad_c = captured.new_zeros((n_rows, t, *captured.shape[1:]))
    pad_p[row, step], pad_c[row, step] = log_p.double(), captured
    return values(SequenceRows(pad_p, pad_c, lengths.clamp_min(1), config))[row, step]


def asked_methods(opt_in: Mapping[str, Any]) -> list[tuple[registry.Method, Any]]:
    """The methods reading attention asked for by name, with their settings (a value of None
    or False: not asked), in registry order.

    Raises:
        TypeError: a name that is not a registered method reading attention (as for an
            unknown keyword argument).
    """
    readers = {m.name: m for m in registry.methods("attention")}
    unknown = sorted(set(opt_in) - set(readers))
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (the methods that can be "
                        f"asked for by name: {', '.join(readers) or 'none'})")
    return [(m, opt_in[name]) for name, m in readers.items()
            if opt_in.get(name) is not None and opt_in.get(name) is not False]


class PassCaptures:
    """The captures of the methods asked for, entered together around a pass (nothing
    without any), and their values from what they recorded (also after the block: a
    generation's steps are read once it is done)."""

    def __init__(self, model: torch.nn.Module, asked: list[tuple[registry.Method, Any]]) -> None:
        self.model, self.asked = model, list(asked)
        self.recorders: list[tuple[registry.Method, Any, Recorder]] = []
        self._stack = contextlib.ExitStack()

    def __bool__(self) -> bool:
        return bool(self.asked)

    def __enter__(self) -> PassCaptures:
        self.recorders = []
        with contextlib.ExitStack() as stack:
            for method, config in self.asked:
                capture = method.capture_function()(self.model, config)
                self.recorders.append((method, config, stack.enter_context(capture)))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: Any) -> bool | None:
        """Leave every capture (the model as it was); what they recorded stays readable."""
        return self._stack.__exit__(*exc)

    def clear(self) -> None:
        """Forget what was recorded (before the next batch)."""
        for _, _, recorder in self.recorders:
            recorder.clear()

    def forced(self, logp: torch.Tensor, row: torch.Tensor, query: torch.Tensor,
               n_rows: int, later: DeferredChecks | None = None) -> dict[str, torch.Tensor]:
        """Each method's (N,) values at N force-decoded positions, by its value key.

        Args:
            logp: (N,) the softmax log-probability of each scored token.
            row: (N,) its sequence (non-decreasing).
            query: (N,) the position of the query predicting it.
            n_rows: sequences in the pass.
            later: the pass's pending range checks, settled by the caller (None: here, one
                wait for the device).
        """
        own = later is None
        out, later = {}, later if later is not None else DeferredChecks()
        for method, config, recorder in self.recorders:
            values = on_positions(method.values_function(), logp, recorder.at(row, query), row,
                                  n_rows, config)
            out[method.value_key] = token_values(method.name, method.token_unit, values,
                                                 row.numel(), later)
        if own:
            later.settle()
        return out

    def generated(self, logp: torch.Tensor, lengths: torch.Tensor
                  ) -> dict[str, torch.Tensor] | None:
        """Each method's (B * S,) values at the S steps of B generated rows, by its value key;
        None when a recorder cannot tell them apart (the outputs are force-decoded instead).

        Args:
            logp: (B, S) the softmax log-probability of each generated token.
            lengths: (B,) tokens kept per row (up to its first EOS, inclusive).
        """
        out, later = {}, DeferredChecks()
        for method, config, recorder in self.recorders:
            captured = recorder.per_step()  # step s predicts token s
            if captured is None or captured.shape[1] != logp.shape[1]:
                return None
            values = method.values_function()(SequenceRows(logp, captured, lengths, config))
            out[method.value_key] = token_values(method.name, method.token_unit,
                                                 values.flatten(), logp.numel(), later)
        later.settle()
        return out
