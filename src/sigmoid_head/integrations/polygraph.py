"""An LM-Polygraph plugin: the Sigmoid Head and its baselines as polygraph estimators.

Needs the ``polygraph`` extra (``lm-polygraph>=0.7.0``). Two pieces, the way polygraph
composes uncertainty methods (the calculator in :mod:`.polygraph_calculator`, re-exported
here; the estimators here), both reading the registries (:mod:`sigmoid_head.registry.methods`,
:mod:`sigmoid_head.registry.columns`):

* :class:`SigmoidHeadCalculator`, a ``StatCalculator`` that generates with the frozen LM
  and scores every generated token in the same pass (:func:`sigmoid_head.scoring.generate.
  generate_outputs`: the head reads the LM head's input at each step, the softmax values
  come from the step's raw logits). Besides its own statistics it yields polygraph's
  greedy ones from that same pass (``greedy_tokens``, ``greedy_texts``,
  ``greedy_log_likelihoods``, ``entropy``, ``input_tokens``), so polygraph's own
  ``MaximumSequenceProbability``, ``Perplexity``, ``MeanTokenEntropy``,
  ``MaximumTokenProbability`` and ``TokenEntropy`` run on the very outputs the head scored
  without a second generation. Under ``CausalLMWithUncertainty`` it also returns ``out``.
  It generates as polygraph's model would (every field of its GenerationParameters, and
  the ``min_new_tokens=2`` of its GreedyProbsCalculator) and computes the softmax side
  from the logits as polygraph records them. Mixed with polygraph's own greedy
  calculators, one generation serves all: it force-decodes a generation made before it,
  and after generating it yields polygraph's per-step distributions too, while the
  statistics it does not compute (:data:`NOT_YIELDED`) refuse to be read.
* Estimators, loaded by polygraph as a third-party module
  (``FactoryEstimator()("sigmoid_head.integrations.polygraph", cfg)`` calls
  :func:`load_estimator`): :class:`SigmoidHeadSequence` (product, geometric mean or
  minimum of token probabilities; ``method`` sigmoid, softmax or boostedprob),
  :class:`SigmoidHeadToken`, :class:`SigmoidHeadMeanEntropy`, and
  :class:`SigmoidHeadBaseline` for each sequence baseline registered with ``polygraph``.
* RAUQ, opt-in (``SigmoidHeadCalculator(model, rauq=RauqConfig())``): its per-token
  confidences from the attention weights of that same generation
  (:mod:`sigmoid_head.scoring.rauq`); :class:`SigmoidHeadRAUQ` returns exactly the value of
  polygraph's own ``RAUQ`` estimator, without polygraph's ``(layers x heads, T, T)``
  attention statistic.

Sign convention: polygraph estimators return an *uncertainty* (higher = worse). Every
probability-based estimator here returns ``-log`` of the library's score: product ->
``-sum log p`` (= polygraph's MSP for the softmax), geometric mean -> ``-mean log p``
(= its Perplexity), min -> ``-min log p``; entropy is returned as is (= its
MeanTokenEntropy). Token-level estimators drop each output's last token, as polygraph's
own token-level estimators do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from lm_polygraph.estimators.estimator import Estimator

from ..registry import columns
from ..registry import methods as registry
from ..scoring.rauq import RauqConfig
from .polygraph_calculator import (  # noqa: F401  (the plugin's public names, as before)
    ENTROPY_STAT,
    FULL_STATS,
    GENERATION_STAT,
    GREEDY_STATS,
    NOT_YIELDED,
    OPT_IN,
    RAUQ_STAT,
    STAT_NAMES,
    OtherGeneration,
    SigmoidHeadCalculator,
    _full_stats,
    _prompts,
    _stats,
    baseline_stat,
    polygraph_baselines,
    stat_name,
)


def aggregations() -> tuple[str, ...]:
    """The aggregations a sequence estimator offers: every distinct one of the registry."""
    return tuple(a.name for a in registry.AGGREGATIONS.values() if a.distinct)



def _aggregate(log_probs: np.ndarray, how: str) -> float:
    """Uncertainty ``-log`` of one aggregation of the token probabilities."""
    return -registry.AGGREGATIONS[how].log_value(np.asarray(log_probs, dtype=np.float64))


class SigmoidHeadSequence(Estimator):
    """Sequence uncertainty ``-log`` of the product, geometric mean or minimum of the
    token probabilities of one method.

    Args:
        method: a registered method (:mod:`sigmoid_head.registry.methods`): ``sigmoid`` (the head),
            ``softmax``, ``boostedprob`` or ``rauq`` (RAUQ's per-token confidences; the
            calculator needs ``rauq`` set), ...
        aggregation: ``product``, ``mean_log`` (the mean token log-probability, the log
            of the geometric mean; ``geo_mean``, its name in earlier releases, is accepted:
            the estimator is the same) or ``min``.
    """

    def __init__(self, method: str = "sigmoid", aggregation: str = "product") -> None:
        _check_method(method)
        aggregation = registry.aggregation_name(aggregation)
        if aggregation not in aggregations():
            raise ValueError(f"unknown aggregation {aggregation!r}; use one of {aggregations()}")
        self.method, self.aggregation = method, aggregation
        super().__init__([stat_name(method)], "sequence")

    def __str__(self) -> str:
        return f"SigmoidHeadSequence_{self.method}_{self.aggregation}"

    def __call__(self, stats: dict[str, Any]) -> np.ndarray:
        return np.array([_aggregate(lp, self.aggregation) for lp in _read(stats, self.method)])


class SigmoidHeadToken(Estimator):
    """Token uncertainty ``-log p`` of one method, each output's last token dropped."""

    def __init__(self, method: str = "sigmoid") -> None:
        _check_method(method)
        self.method = method
        super().__init__([stat_name(method)], "token")

    def __str__(self) -> str:
        return f"SigmoidHeadToken_{self.method}"

    def __call__(self, stats: dict[str, Any]) -> list[np.ndarray]:
        return [-np.asarray(lp[:-1], dtype=np.float64) for lp in _read(stats, self.method)]


def _check_method(method: str) -> None:
    if method not in registry.METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {sorted(registry.METHODS)}")


def _one_generation(stats: dict[str, Any]) -> None:
    """Refuse statistics whose ``greedy_tokens`` are not the outputs the calculator scored
    (a calculator that ran after it generated again and replaced them)."""
    ours, greedy = stats.get(GENERATION_STAT), stats.get("greedy_tokens")
    if ours is not None and greedy is not None and \
            [list(map(int, t)) for t in greedy] != [list(map(int, t)) for t in ours]:
        raise ValueError("the statistics come from two generations: greedy_tokens are not the "
                         "outputs SigmoidHeadCalculator scored (another calculator generated "
                         "again after it); let one calculator generate: put "
                         "SigmoidHeadCalculator last, so that it scores that generation")


def _read(stats: dict[str, Any], method: str) -> list[np.ndarray]:
    if method in OPT_IN and stat_name(method) not in stats:  # an opt-in method not asked for
        raise KeyError(f"no {stat_name(method)}: {method} is computed only when asked for; "
                       "RAUQ: give SigmoidHeadCalculator rauq=RauqConfig() (benchmark "
                       "config: cfg: {rauq: true})")
    _one_generation(stats)
    return stats[stat_name(method)]


class SigmoidHeadRAUQ(Estimator):
    """RAUQ's sequence uncertainty ``1 - mean_j log c_j`` (``c``: the per-token confidences
    of the least confident selected layer): the value of polygraph's own ``RAUQ``."""

    def __init__(self) -> None:
        super().__init__([RAUQ_STAT], "sequence")

    def __str__(self) -> str:
        return "SigmoidHeadRAUQ"

    def __call__(self, stats: dict[str, Any]) -> np.ndarray:
        return np.array([1.0 - float(np.mean(lc)) for lc in _read(stats, "rauq")])


class SigmoidHeadMeanEntropy(Estimator):
    """Mean softmax entropy of an output's tokens (from the calculator's single pass)."""

    def __init__(self) -> None:
        super().__init__([ENTROPY_STAT], "sequence")

    def __str__(self) -> str:
        return "SigmoidHeadMeanEntropy"

    def __call__(self, stats: dict[str, Any]) -> np.ndarray:
        _one_generation(stats)
        return np.array([float(np.mean(e)) for e in stats[ENTROPY_STAT]])


class SigmoidHeadBaseline(Estimator):
    """A sequence baseline of the column registry (registered with ``polygraph``) as an
    uncertainty: minus its value where higher = better, its value otherwise."""

    def __init__(self, name: str) -> None:
        column = columns.COLUMNS.get(name)
        if column is None or not column.polygraph or not column.is_baseline():
            raise ValueError(f"{name!r} is not a baseline the calculator computes; use one of "
                             f"{[c.name for c in polygraph_baselines()]}")
        self.name, self.sign = name, -1.0 if column.direction == columns.HIGHER_BETTER else 1.0
        super().__init__([baseline_stat(name)], "sequence")

    def __str__(self) -> str:
        return f"SigmoidHeadBaseline_{self.name}"

    def __call__(self, stats: dict[str, Any]) -> np.ndarray:
        _one_generation(stats)
        return self.sign * np.asarray(stats[baseline_stat(self.name)], dtype=np.float64)


LEVELS = ("sequence", "token")
ESTIMATOR_KEYS = ("level", "method", "aggregation")


def load_estimator(config: Any) -> Estimator:
    """polygraph's hook for third-party estimators.

    ``config`` keys: ``level`` (``sequence`` default, or ``token``), ``method``
    (``sigmoid`` default, any other registered method such as ``softmax``, ``boostedprob``
    or ``rauq``, ``entropy`` for the mean entropy, or a baseline registered with
    ``polygraph``: :class:`SigmoidHeadBaseline`), ``aggregation`` (``product``
    default, ``mean_log`` (``geo_mean`` accepted), ``min``;
    ``rauq`` without one is :class:`SigmoidHeadRAUQ`, polygraph's RAUQ value).

    Raises:
        ValueError: an option it cannot honour, instead of quietly computing another
            estimator: an unknown key, a level other than sequence or token (``claim``),
            an aggregation at token level, entropy at token level or with an aggregation
            (it is the sequence mean).
    """
    cfg = dict(config or {})
    unknown = sorted(set(cfg) - set(ESTIMATOR_KEYS))
    if unknown:
        raise ValueError(f"unknown estimator option(s) {unknown}; the options are "
                         f"{list(ESTIMATOR_KEYS)}")
    method, level = cfg.get("method", "sigmoid"), cfg.get("level", "sequence")
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: the Sigmoid Head estimators are {' or '.join(LEVELS)} "
                         "level (no claim level)")
    if method in {c.name for c in polygraph_baselines()}:
        if level != "sequence" or "aggregation" in cfg:
            raise ValueError(f"method {method} is a sequence baseline: level sequence, no "
                             "aggregation")
        return SigmoidHeadBaseline(method)
    if method == "entropy":
        if level != "sequence" or "aggregation" in cfg:
            raise ValueError("method entropy is the mean entropy of a sequence's tokens: "
                             "level sequence, no aggregation")
        return SigmoidHeadMeanEntropy()
    if level == "token":
        if "aggregation" in cfg:
            raise ValueError("a token-level estimator takes no aggregation")
        return SigmoidHeadToken(method)
    if method == "rauq" and "aggregation" not in cfg:  # polygraph's own RAUQ value
        return SigmoidHeadRAUQ()
    return SigmoidHeadSequence(method, cfg.get("aggregation", "product"))


def load_stat_calculator(config: Any, environment: Any) -> SigmoidHeadCalculator:
    """polygraph's hook for third-party stat calculators (its benchmark runner's
    ``builder``): ``config["head"]`` is the head's folder or Hub id, loaded onto the
    runner's model (``environment.model``) on first use; ``config["decoding"]`` optional;
    ``config["rauq"]``: ``true`` or :class:`RauqConfig` fields (``{alpha: 0.5}``) adds RAUQ."""
    cfg = dict(config or {})
    if "head" not in cfg:
        raise ValueError("the SigmoidHeadCalculator config needs 'head': a head folder or Hub id")
    rauq = cfg.get("rauq")
    if rauq is not None and rauq is not False:
        rauq = RauqConfig(**(dict(rauq) if rauq is not True else {}))
    return SigmoidHeadCalculator(cfg["head"], decoding=dict(cfg.get("decoding") or {}),
                                 rauq=rauq or None)


def estimator_names(methods: Sequence[str] | None = None) -> list[str]:
    """Names of every sequence estimator of the given methods (default: every registered
    method computed without being asked for, then every baseline the calculator computes),
    for configs and reports."""
    chosen = [m for m in registry.names() if m not in OPT_IN] if methods is None else methods
    names = [str(SigmoidHeadSequence(m, a)) for m in chosen for a in aggregations()]
    if methods is None:
        names += [str(SigmoidHeadBaseline(c.name)) for c in polygraph_baselines()]
    return names
