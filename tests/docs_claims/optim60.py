"""Claims of docs/human_labels.md made in issue 60: the optimizer check
(recipes/human_qe/results/sparse-check.json, declared in recipes/human_qe/sparse_check.py)."""

from __future__ import annotations

from .labels58 import _var
from .sources import HQ, Claim, hq_json


def _rule() -> list[float]:
    from recipes.human_qe import sparse_check

    return [sparse_check.MARGIN, round((1 - sparse_check.EQUIVALENCE_LEVEL) / 2, 10)]


def _sparse_gap() -> list[float | str]:
    """The sparse seeds' mean distance below their dense twins, when every seed is below its
    twin and below the softmax side (else a marker that fails the check)."""
    check = hq_json("sparse-check", "checks", "sparse_adamw")
    heads = hq_json("sparse-check", "heads")
    from recipes.human_qe.sparse_check import SPARSE

    below = all(t["delta"] < 0 for t in check["seeds"].values())
    under_softmax = all(heads[h]["mcc"] < float(_var("labelled_roen", 2)[0]) for h in SPARSE)
    return [-check["mean"]["delta"] if below and under_softmax else "differ"]


ISSUE60_CLAIMS = [
    Claim(HQ, "lies inside plus or minus 0.01 (two one-sided tests at 0.05, sources resampled)", _rule, "setting"),
    Claim(HQ, "its three seeds are 0.04 word MCC below their dense twins on average", _sparse_gap),
]
