"""JSON that every reader can read back, and JSON files that cannot crash their reader.

* :func:`finite_json`: a value with every non-finite float (NaN, inf) replaced by ``null``;
  :func:`dumps`: ``json.dumps`` of it, with ``allow_nan=False`` so that bare ``NaN`` or
  ``Infinity`` (not JSON) can never reach a file.
* :func:`loads` / :func:`read_json`: parse a JSON file's text; any failure (bad JSON, bytes
  that are not UTF-8, nesting so deep that the parser recurses out of its stack) is a
  one-line ``ValueError`` naming the file.

Needs neither torch nor transformers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def finite_json(value: Any) -> Any:
    """``value`` with every float that is NaN or infinite replaced by None (in dicts,
    lists and tuples, at any depth); everything else unchanged."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy / torch scalars
        return finite_json(value.item())
    return value


def dumps(value: Any, **kw: Any) -> str:
    """``json.dumps`` of :func:`finite_json` ``(value)``: always valid JSON (non-finite
    numbers become ``null``)."""
    return json.dumps(finite_json(value), allow_nan=False, **kw)


def loads(text: str | bytes, where: str | Path, what: str = "not valid JSON", **kw: Any) -> Any:
    """Parse JSON ``text`` read from ``where`` (``kw``: more arguments of ``json.loads``).

    Raises:
        ValueError: one line naming ``where``: bad JSON, invalid UTF-8, or nesting too
            deep to parse. (``NaN`` and ``Infinity`` literals, which older versions wrote,
            are read; the readers of each file check the numbers they use.)
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, **kw)
    except UnicodeDecodeError:
        raise ValueError(f"{where}: {what} (not valid UTF-8)") from None
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{where}: {what} ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    except RecursionError:
        raise ValueError(f"{where}: {what} (nested too deeply)") from None
    except ValueError as err:
        raise ValueError(f"{where}: {what} ({err})") from None


def read_json(path: str | Path, what: str = "not valid JSON") -> Any:
    """The JSON value in the file ``path`` (see :func:`loads`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: ``path`` is not a regular file, or its text is not JSON (one line).
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise ValueError(f"{path}: not a file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ValueError(f"{path}: cannot read ({err.strerror or err})") from None
    return loads(data, path, what)
