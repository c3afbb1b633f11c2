"""The stable import for plugin authors: every name a scoring method or a sequence baseline
needs, in one place that keeps its names across releases (``tests/test_plugin_api.py``
pins them).

A per-token method::

    from sigmoid_head.plugin import Method, register_method

    register_method(Method("top", reads="lm_logits", token_values=lambda rows: rows.logp.max(-1).values))

A sequence baseline::

    from sigmoid_head.plugin import HIGHER_BETTER, SEQUENCE, Column, register_column

    register_column(Column("short", SEQUENCE, HIGHER_BETTER, "(0, 1]", "1 / (1 + characters)",
                           compute=lambda b: [1.0 / (1.0 + len(c)) for c in b.candidates]))

The modules behind these names (``sigmoid_head.registry.methods``, ``.columns``,
``.method_type``) may move again as the package grows; this module will not. Torch-free.
"""

from __future__ import annotations

from .registry.columns import (
    HIGHER_BETTER,
    HIGHER_WORSE,
    NEITHER,
    PASS,
    SEQUENCE,
    SPAN,
    TOKEN,
    WORD,
    BaselineInputs,
    Column,
)
from .registry.columns import register as register_column
from .registry.columns import unregister as unregister_column
from .registry.method_type import READS, Method
from .registry.methods import ENTRY_POINT_GROUP
from .registry.methods import register as register_method
from .registry.methods import unregister as unregister_method

__all__ = [
    "ENTRY_POINT_GROUP", "HIGHER_BETTER", "HIGHER_WORSE", "NEITHER", "PASS", "READS", "SEQUENCE",
    "SPAN", "TOKEN", "WORD", "BaselineInputs", "Column", "Method", "register_column",
    "register_method", "unregister_column", "unregister_method",
]
