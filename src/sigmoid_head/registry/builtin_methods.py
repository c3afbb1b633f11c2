"""The built-in scoring methods: the Sigmoid Head, the LM's softmax, BoostedProb and RAUQ.

Each is declared here once; :mod:`sigmoid_head.registry.methods` registers them, in this
order (the order of records, tables and pages), before any plugin's.
"""

from __future__ import annotations

from .baseline_settings import RauqSettings
from .method_type import Method

BUILTIN_METHODS = (
    Method("sigmoid", reads="head", label="Sigmoid Head",
           token_values="sigmoid_head.scoring.token_scores:sigmoid_log"),
    Method("softmax", reads="lm_logits", label="softmax",
           token_values="sigmoid_head.scoring.token_scores:softmax_log",
           combination_parts=("min", "mean_log")),
    Method("boostedprob", reads="lm_logits", label="BoostedProb", token_unit="probability",
           token_values="sigmoid_head.scoring.token_scores:boostedprob",
           combination_parts=("mean_log",), monte_carlo=False),
    Method("rauq", reads="attention", label="RAUQ", monte_carlo=False, settings=RauqSettings,
           token_values="sigmoid_head.scoring.rauq:rauq_values",
           capture="sigmoid_head.scoring.rauq:capture"),
)
"""The built-in methods, in the order they are registered."""
