"""One check for "finite and representable" numbers: settings that reach a tensor must be
finite, inside the range where the arithmetic done with them stays finite, and of the
right kind, else they are refused in one line naming the setting.

NaN, infinity and numbers float32 cannot hold (1e39, 5e-324) used to reach the decoding as
empty outputs, NaN scores or a torch traceback; a seed past 64 bits ended in "Overflow when
unpacking long long". :data:`LIMITS` holds the ranges of the settings that had no sound
bound; :func:`check_number` is the check, used by the command line's number options
(:mod:`sigmoid_head.cli.common`) and by the settings dataclasses themselves.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import math
from typing import Any

FLOAT32_MAX = 3.4028234663852886e38
SEED_MAX = 2**63 - 1
"""Seeds are 63-bit (torch's generator takes a signed 64-bit integer)."""
TEMPERATURE = (1e-6, 1e6)
"""Sampling temperature: logits are divided by it, so it must leave them finite in float32."""
HEAD_WEIGHT_MAX = 1e6
"""Head-guided decoding: the head's log-probabilities times this are added to the scores; a
larger weight cannot change the order of tokens any further, only overflow."""
NEW_TOKENS_UNKNOWN_LIMIT = 2**17
"""The most tokens generated for a model that declares no position limit."""
SAMPLES_MAX = 4096
"""The most samples drawn per source (rerank, self-label): each one is a sequence in every
``generate`` call of a batch."""

LIMITS: dict[str, dict[str, Any]] = {
    "temperature": {"low": TEMPERATURE[0], "high": TEMPERATURE[1]},
    "head_weight": {"low": 0.0, "high": HEAD_WEIGHT_MAX},
    "head_mask_below": {"low": 0.0, "high": 1.0, "high_open": True},
    "top_p": {"low": 0.0, "high": 1.0, "low_open": True},
    "seed": {"low": 0, "high": SEED_MAX, "integer": True},
    "samples": {"low": 0, "high": SAMPLES_MAX, "integer": True},
}
"""Setting name -> its range (keywords of :func:`check_number`)."""


def _shown(v: float) -> str:
    return str(v) if isinstance(v, int) else f"{v:g}"


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    lo = "-inf" if low is None else _shown(low)
    hi = "inf" if high is None else _shown(high)
    return f"{'(' if low_open or low is None else '['}{lo}, {hi}{')' if high_open or high is None else ']'}"


def number_problem(
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> str | None:
    """What is wrong with ``value`` as a finite, representable number in the range, or
    None. Floats must fit in float32 (what the tensors hold); a bool is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be {'an integer' if integer else 'a number'}, got {value!r:.40}"
    if integer and not isinstance(value, int):
        return f"must be an integer, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if isinstance(value, float) and abs(value) > FLOAT32_MAX:
        return f"{value:g} is too large for float32 (at most {FLOAT32_MAX:.4g})"
    bad = (low is not None and (value < low or (low_open and value == low))) or (
        high is not None and (value > high or (high_open and value == high))
    )
    if bad:
        got = (
            _shown(value)
            if isinstance(value, float) or abs(value) < 10**20
            else f"a {value.bit_length()}-bit number"
        )
        return f"must be in {_interval(low, high, low_open, high_open)}, got {got}"
    return None


def check_number(name: str, value: Any, **limits: Any) -> Any:
    """``value`` when :func:`number_problem` finds nothing, else a one-line ValueError
    ``<name> must be ...``. Without ``limits`` the range of :data:`LIMITS` is used."""
    problem = number_problem(value, **(limits or LIMITS.get(name, {})))
    if problem:
        raise ValueError(
            f"{name} {problem}" if problem.startswith("must") else f"{name}: {problem}"
        )
    return value


def check_settings(obj: Any, names: tuple[str, ...] | None = None) -> None:
    """Check the attributes of ``obj`` named in :data:`LIMITS` (or ``names``), and every
    dataclass field of ``obj`` that declares its range with :func:`bounds`."""
    for name in names or tuple(LIMITS):
        if hasattr(obj, name):
            check_number(name, getattr(obj, name))
    check_fields(obj)


BOUNDS_KEY = "bounds"
"""The dataclass field metadata key holding a setting's range (see :func:`bounds`)."""
PARSE_KEY = "parse"
"""The dataclass field metadata key holding a text -> value function for settings that are
not plain numbers (a list of layers); it raises ValueError with a one-line reason."""


def bounds(limit: str | None = None, **limits: Any) -> dict[str, Any]:
    """Field metadata declaring a numeric setting's range, read by the command line (its
    option checks the value) and by :func:`check_fields` (the dataclass checks itself)::

        batch_size: int = field(default=16, metadata=bounds(low=1, integer=True))
        temperature: float = field(default=1.0, metadata=bounds("temperature"))

    ``limit`` names an entry of :data:`LIMITS`; ``limits`` are keywords of
    :func:`number_problem` (and override it).
    """
    merged = {**(LIMITS[limit] if limit else {}), **limits}
    unknown = set(merged) - {"low", "high", "low_open", "high_open", "integer"}
    if unknown:
        raise TypeError(f"bounds: unknown keywords {sorted(unknown)}")
    return {BOUNDS_KEY: merged}


def field_bounds(f: Any) -> dict[str, Any] | None:
    """The range a dataclass field declares with :func:`bounds`, else None."""
    return f.metadata.get(BOUNDS_KEY) if getattr(f, "metadata", None) else None


def check_fields(obj: Any) -> None:
    """Refuse (ValueError, naming the field) any dataclass field of ``obj`` whose value is
    outside the range it declares with :func:`bounds`; None (unset) passes."""
    from dataclasses import fields, is_dataclass

    if not is_dataclass(obj):
        return
    for f in fields(obj):
        lim = field_bounds(f)
        value = getattr(obj, f.name, None)
        if lim is not None and value is not None:
            check_number(f.name, value, **lim)


def position_limit(model_config: Any) -> int | None:
    """The most positions a model's config declares (None when it declares none)."""
    for key in (
        "max_position_embeddings",
        "n_positions",
        "max_sequence_length",
        "seq_length",
        "n_ctx",
        "max_seq_len",
    ):
        value = getattr(model_config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def check_new_tokens(
    max_new_tokens: int, model_config: Any, option: str = "max_new_tokens"
) -> None:
    """Refuse a ``max_new_tokens`` beyond the model's position limit (or, where the model
    declares none, beyond :data:`NEW_TOKENS_UNKNOWN_LIMIT`): a rotary model would otherwise
    generate, ever slower, until killed."""
    limit = position_limit(model_config)
    if limit is not None and max_new_tokens > limit:
        raise ValueError(f"{option} {max_new_tokens} is more than the model's {limit} positions")
    if limit is None and max_new_tokens > NEW_TOKENS_UNKNOWN_LIMIT:
        raise ValueError(
            f"{option} {max_new_tokens}: the model declares no position limit; "
            f"at most {NEW_TOKENS_UNKNOWN_LIMIT} new tokens are generated"
        )
