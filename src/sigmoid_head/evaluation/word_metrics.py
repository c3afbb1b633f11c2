"""Word-level quality estimation metrics (WMT word-level QE): OK/BAD tags, BCE and F1.

Per-word probabilities are probabilities of the word being OK. Arguments may be flat
or a list of per-sentence lists. BCE is :func:`.metrics.bce`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .metric_inputs import FloatArray, IntArray, as_1d, require_prob
from .metrics import bce


def _flatten(x: Any) -> list[Any]:
    """Flatten one level of nesting (a list of per-sentence lists) if present."""
    items = list(x.tolist() if isinstance(x, np.ndarray) else x)
    if items and isinstance(items[0], (list, tuple, np.ndarray)):
        return [v for seq in items for v in (seq.tolist() if isinstance(seq, np.ndarray) else seq)]
    return items


def tags_to_binary(tags: Sequence[Any] | ArrayLike) -> IntArray:
    """Word tags ("OK"/"BAD" strings, case-insensitive, or 1/0, True/False) to 1 = OK, 0 = BAD.

    A list of per-sentence tag lists is flattened.
    """
    out = []
    for t in _flatten(tags):
        if isinstance(t, str):
            u = t.strip().upper()
            if u not in ("OK", "BAD"):
                raise ValueError(f"unknown word tag {t!r}; expected 'OK' or 'BAD'")
            out.append(1 if u == "OK" else 0)
        elif t in (0, 1):
            out.append(int(t))
        else:
            raise ValueError(f"unknown word tag {t!r}; expected 1 (OK) or 0 (BAD)")
    return np.asarray(out, dtype=np.int64)


def _word_pair(pred_prob: Any, tags: Any) -> tuple[FloatArray, IntArray]:
    p = as_1d(np.asarray(_flatten(pred_prob), dtype=np.float64), "pred_prob")
    t = tags_to_binary(tags)
    if p.shape != t.shape:
        raise ValueError(f"{p.size} word probabilities but {t.size} tags")
    require_prob(p)
    return p, t


def word_bce(pred_prob: Any, ok_bad_tags: Any, eps: float = 1e-7) -> float:
    """BCE of per-word probabilities of being OK against OK (1) / BAD (0) tags."""
    p, t = _word_pair(pred_prob, ok_bad_tags)
    return bce(p, t, eps)


def _f1(tp: int, fp: int, fn: int) -> float:
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 0.0  # sklearn's zero_division default


def word_f1(pred_prob: Any, tags: Any, threshold: float = 0.5) -> dict[str, float]:
    """Word-level F1 as in the WMT word-level QE task.

    A word is predicted OK when its probability is >= ``threshold``, else BAD.

    Returns:
        ``{"f1_bad", "f1_ok", "f1_mult"}`` where F1-MULT = F1-BAD * F1-OK.
    """
    p, t = _word_pair(pred_prob, tags)
    y = (p >= threshold).astype(np.int64)
    tp_ok = int(((y == 1) & (t == 1)).sum())
    tp_bad = int(((y == 0) & (t == 0)).sum())
    ok_as_bad = int(((y == 0) & (t == 1)).sum())
    bad_as_ok = int(((y == 1) & (t == 0)).sum())
    f1_ok = _f1(tp_ok, bad_as_ok, ok_as_bad)
    f1_bad = _f1(tp_bad, ok_as_bad, bad_as_ok)
    return {"f1_bad": f1_bad, "f1_ok": f1_ok, "f1_mult": f1_bad * f1_ok}
