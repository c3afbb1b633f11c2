"""The contract every registered method and column keeps, plugins' included.

A plugin (an entry point of ``sigmoid_head.methods``) is code the library runs; what it
registers and what it returns enter every score row. The contract is enforced at the two
places where a plugin's work enters the library:

* **at registration** (:func:`check_method`, :func:`check_column`, called by
  :func:`sigmoid_head.methods.register` and :func:`sigmoid_head.registry.columns.register`): a
  name is non-empty, of letters, digits and ``_``, starts with a letter, does not end with
  a suffix the library appends (``_min``, ``_mean_log``, ...), and none of the keys it
  would write is a key another method or column writes;
* **where values enter rows** (:func:`token_values`, :func:`row_values`): a method's
  per-token values are one finite number per scored position (a tensor, a numpy array or a
  list; a log-probability at most 0, a probability in [0, 1]); a baseline's are one
  number (or one mapping of numbers) per row, never a string, inside the column's declared
  range. A broken value is a ``ValueError`` naming the method or column.

Loading a plugin (:func:`sigmoid_head.methods.load_plugins`) rolls back what it registered
when it fails, and runs with the standard output sent to the standard error at the
descriptor level (:func:`sigmoid_head.safe.outputs.stdout_to_stderr`).

Needs neither torch nor transformers (a tensor is converted only when one is given).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
"""A method's or a plugin column's name."""
RESERVED_SUFFIXES = (
    "_logprob",
    "_mean_log",
    "_min",
    "_geo_mean",
    "_geomean",
    "_geo",
    "_log",
    "_platt",
    "_isotonic",
)
"""Suffixes the library appends to a method's name: no name may end with one."""
TOLERANCE = 1e-4
"""Rounding allowed past a declared bound (a float32 log-softmax can be a hair above 0)."""


def check_name(name: Any, what: str) -> None:
    """Refuse a name that is empty, not text, of other characters, or ending with a suffix
    of :data:`RESERVED_SUFFIXES`."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(
            f"{what} name {str(name)[:40]!r}: a name is 1-64 letters, digits "
            "or '_', starting with a letter"
        )
    if name.endswith(RESERVED_SUFFIXES) or name.startswith("mc_"):
        raise ValueError(
            f"{what} name {name!r} ends or starts like a key the library derives "
            f"({', '.join(RESERVED_SUFFIXES)}, mc_)"
        )


def check_keys(owner: str, new: Iterable[str], taken: dict[str, str]) -> None:
    """Refuse keys of ``owner`` that another entry already writes (``taken``: key ->
    owner)."""
    for key in new:
        if key in taken:
            raise ValueError(
                f"{owner}: the key {key!r} is already written by {taken[key]}; choose another name"
            )


def token_values(owner: str, unit: str, values: Any, n: int, later: DeferredChecks | None = None) -> Any:
    """Check the (n,) per-token values a method returned; returns them as a float tensor
    (torch is imported only here, where the scoring pass runs).

    Args:
        later: where the range check waits (:meth:`DeferredChecks.settle` runs it for every
            method of a pass with one wait for the device); None checks now.

    Raises:
        ValueError: naming ``owner``: not a tensor, array or list of n numbers, not finite,
            a log-probability above 0 or a probability outside [0, 1].
    """
    import torch

    if isinstance(values, (str, bytes)) or values is None:
        raise ValueError(f"method {owner!r} returned {type(values).__name__}, not {n} numbers")
    try:
        array = (
            values
            if isinstance(values, torch.Tensor)
            else torch.as_tensor(np.asarray(values, dtype=np.float64))
        )
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(
            f"method {owner!r} returned {type(values).__name__}, not {n} numbers"
        ) from None
    if array.dtype == torch.bool or array.dtype.is_complex:
        raise ValueError(f"method {owner!r} returned {array.dtype} values, not numbers")
    if tuple(array.shape) != (n,):
        raise ValueError(
            f"method {owner!r} returned values of shape {tuple(array.shape)}, "
            f"expected ({n},): one per scored position"
        )
    if later is not None:
        later.pending.append((owner, unit, array))
    else:
        _check_range(owner, unit, array)
    return array if array.dtype.is_floating_point else array.float()


def _check_range(owner: str, unit: str, array: Any) -> None:
    """The range check of :func:`token_values`, on the host."""
    low, high = (-math.inf, 0.0) if unit == "log" else (0.0, 1.0)
    _in_range(
        f"method {owner!r}",
        "log-probability" if unit == "log" else "probability",
        array.detach().double().cpu().numpy(),
        low,
        high,
        allow_neg_inf=unit == "log",
    )


class DeferredChecks:
    """The range checks of :func:`token_values` for a whole scoring pass, settled with one
    wait for the device: the methods' values are reduced on their device to one flag per
    unit (the same rule as :func:`_in_range`, in float64), and the flags read once; only
    when one is raised do the values come to the host, where the check names the first
    problem exactly as the immediate check does."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, str, Any]] = []

    def flag(self) -> Any:
        """A 0-dim bool tensor on the values' device, true when a pending check would fail
        (None when nothing is pending); computing it reads nothing back, so the caller can
        copy it to the host with the pass's results and :meth:`settle` with its value."""
        import torch

        if not self.pending:
            return None
        device = self.pending[0][2].device
        flags = []
        for unit in ("log", "probability"):  # one flag per unit over all its methods' values
            arrays = [a.detach().reshape(-1).to(device) for _, u, a in self.pending
                      if (u == "log") == (unit == "log")]
            if not arrays:
                continue
            x = torch.cat(arrays).double()
            bad = x.isnan() | (x == math.inf)
            if unit == "log":
                bad |= x > TOLERANCE
            else:
                bad |= (x == -math.inf) | (x < -TOLERANCE) | (x > 1.0 + TOLERANCE)
            flags.append(bad.any())
        return torch.stack(flags).any()

    def settle(self, raised: bool | None = None) -> None:
        """Raise what the immediate checks would have raised, in the same order; then forget.

        Args:
            raised: the value of :meth:`flag`, when the caller already read it (else it is
                read here: one wait for the device).
        """
        if raised is None:
            flag = self.flag()
            raised = flag is not None and bool(flag)
        pending, self.pending = self.pending, []
        if raised:
            for owner, unit, array in pending:
                _check_range(owner, unit, array)


def _in_range(
    owner: str, what: str, values: np.ndarray, low: float, high: float, allow_neg_inf: bool = False
) -> None:
    """Refuse NaN, infinities (but -inf where ``allow_neg_inf``) and values outside
    [low, high] (give or take :data:`TOLERANCE`)."""
    bad = np.isnan(values) | (values == math.inf) | ((values == -math.inf) & (not allow_neg_inf))
    if bad.any():
        raise ValueError(
            f"{owner} returned a non-finite {what} ({values[bad][0]}) at "
            f"position {int(np.flatnonzero(bad)[0])}"
        )
    finite = values[np.isfinite(values)]
    out = finite[(finite < low - TOLERANCE) | (finite > high + TOLERANCE)]
    if out.size:
        raise ValueError(
            f"{owner} returned the {what} {float(out[0]):.6g}, outside its "
            f"declared range [{low:g}, {high:g}]"
        )


_RANGE = re.compile(r"\s*([\[(])\s*(-?inf|-?[0-9.]+)\s*,\s*(-?inf|-?[0-9.]+)\s*([\])])\s*\Z")


def declared_range(text: str) -> tuple[float, float] | None:
    """(low, high) of a column's declared range such as ``[0, 1]`` or ``(-inf, 0]``; None
    when it is not two numbers (``about [0, 1]``, ``[0, ln |V|]``, ``text``)."""
    found = _RANGE.match(text or "")
    return None if found is None else (float(found.group(2)), float(found.group(3)))


def row_values(column: Any, values: Any, n: int, known: dict[str, Any]) -> list[Any]:
    """Check what a baseline's hook returned for ``n`` rows: a sequence of n numbers, or of
    n mappings of column names to numbers (None: the row has no value); returns it as a
    list.

    Args:
        column: the :class:`sigmoid_head.registry.columns.Column` whose hook it is.
        known: column name -> Column, for the declared ranges of mapped keys.

    Raises:
        ValueError: naming the column: not n items, a string, a non-finite number, or a
            number outside the declared range.
    """
    owner = f"column {column.name!r}"
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"{owner} returned {type(values).__name__}, not one value per row")
    items = list(values.tolist() if isinstance(values, np.ndarray) else values)
    if len(items) != n:
        raise ValueError(f"{owner} returned {len(items)} values for {n} rows")
    for i, item in enumerate(items):
        pairs = item.items() if isinstance(item, dict) else [(column.name, item)]
        for key, value in pairs:
            if not isinstance(key, str):
                raise ValueError(f"{owner} returned a key {str(key)[:40]!r} at row {i}")
            _row_value(owner, key, value, i, known.get(key, column))
    return items


def pass_value(column: Any, value: Any) -> Any:
    """Check one pass statistic a hook returned for one sequence (a number or None)."""
    _row_value(f"column {column.name!r}", column.name, value, 0, column)
    return value


def _row_value(owner: str, key: str, value: Any, row: int, column: Any) -> None:
    if value is None:
        return
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"{owner} returned {type(value).__name__} for {key!r} at row {row}, not a number"
        )
    bounds = declared_range(getattr(column, "range", ""))
    low, high = bounds if bounds is not None else (-math.inf, math.inf)
    _in_range(f"{owner} ({key!r}, row {row})", "value", np.asarray([float(value)]), low, high)
