"""A head folder's extras as objects (numpy only, no torch).

:mod:`sigmoid_head.head.files` names, writes and reads the extras that ``sigmoid-head
calibrate`` fits as JSON objects (``SigmoidHeadModel.extras``: file name -> object); each
extra's class is a :class:`~sigmoid_head.head.extras.HeadExtra` (one save, one load);
:data:`EXTRA_CLASSES` says which class parses each file, and :func:`head_extras` turns a
loaded head's extras into those objects for ``score``, ``generate`` and ``rerank``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..head.extras import HeadExtra
from ..head.files import CALIBRATION_NAME, COMBINATION_NAME, QUALITY_MODEL_NAME, SPANS_NAME
from .calibration import Calibrator
from .combination import DEFAULTS, Combination
from .quality_model import QualityModel
from .spans import SpanConfig
from .word_model import WordModel

EXTRA_CLASSES: dict[str, type[HeadExtra]] = {
    c.FILE: c for c in (Calibrator, SpanConfig, Combination, QualityModel, WordModel)}
"""Extras file name -> the :class:`~sigmoid_head.head.extras.HeadExtra` that parses and
saves it: one class per file of :data:`~sigmoid_head.head.files.EXTRA_FILES`."""


def head_extras(extras: Mapping[str, Mapping[str, Any]] | None, command: str,
                source: str = "") -> tuple[Calibrator | None, SpanConfig | None, Combination]:
    """The objects of a head's extras (``SigmoidHeadModel.extras``: file name -> JSON).

    Returns:
        (the :class:`~sigmoid_head.evaluation.calibration.Calibrator` or None, the
        :class:`~sigmoid_head.evaluation.spans.SpanConfig` or None, the fitted
        :class:`~sigmoid_head.evaluation.combination.Combination`, else ``command``'s
        default: "score", "generate" or "rerank").

    Raises:
        ValueError: a malformed extra, named as ``source/<file>``.
    """
    extras = extras or {}

    def parse(name: str) -> Any:
        data = extras.get(name)
        where = f"{source}/{name}" if source else name
        return None if data is None else EXTRA_CLASSES[name].from_dict(data, where)

    cal, spans, comb = (parse(n) for n in (CALIBRATION_NAME, SPANS_NAME, COMBINATION_NAME))
    return cal, spans, DEFAULTS[command] if comb is None else comb


def head_quality_model(extras: Mapping[str, Mapping[str, Any]] | None,
                       source: str = "", head_sha256: str | None = None,
                       name: str = QUALITY_MODEL_NAME) -> QualityModel | WordModel | None:
    """The head's learned segment quality score (``quality_model.json``), or with ``name``
    ``word_model.json`` its learned word-level error detector; None when absent.

    Args:
        extras: the head's extras (file name -> JSON object).
        source: where the head was loaded from (names the file in errors).
        head_sha256: the loaded head's ``weights_sha256``: the model must have been fitted
            for it (:meth:`~sigmoid_head.evaluation.quality_model.QualityModel.check_head`).

    Raises:
        ValueError: a malformed file, or one fitted for another head, named as
            ``source/<name>``.
    """
    data = (extras or {}).get(name)
    where = f"{source}/{name}" if source else name
    if data is None:
        return None
    model = EXTRA_CLASSES[name].from_dict(data, where)
    model.check_head(head_sha256, where)  # type: ignore[attr-defined]
    return model


def head_notices(combination: Combination | None, spans: SpanConfig | None) -> list[str]:
    """One line per saved setting that leaves the head out, for every command and the page.

    A fitted ``combination.json`` may give the head weight 0 (``combined`` is then the
    softmax-side score alone), and a fitted ``error_spans.json`` may read another method's
    word scores (``errors`` are then that method's spans, not the head's). Nothing else says
    so, so the user would believe the head contributes where it does not.

    Args:
        combination: the mix that makes ``combined`` (None: no ``combined``).
        spans: the error-span setting (None: no ``errors``).

    Returns:
        The notices (empty when the head takes part in both, or neither is saved).
    """
    from ..registry import methods as registry

    out = []
    if combination is not None and combination.weight == 0:
        out.append(f"notice: the saved mix gives the head weight 0: combined is "
                   f"{combination.baseline} alone, the head takes no part in it")
    if spans is not None:
        method = registry.METHODS.get(spans.method)
        if method is None or method.reads != "head":
            out.append(f"notice: the saved error-span setting reads {spans.method} word "
                       f"scores: errors are {spans.method}'s spans, not the head's")
    return out
