"""An LM-Polygraph plugin: the Sigmoid Head and its baselines as polygraph estimators.

Needs the ``polygraph`` extra (``lm-polygraph>=0.7.0``). Two pieces, the way polygraph
composes uncertainty methods:

* :class:`SigmoidHeadCalculator`, a ``StatCalculator`` that generates with the frozen LM
  and scores every generated token in the same pass (:func:`sigmoid_head.scoring.generate.
  generate_outputs`: the head reads the LM head's input at each step, the softmax values
  come from the step's raw logits). Besides its own statistics it yields polygraph's
  greedy ones from that same pass (``greedy_tokens``, ``greedy_texts``,
  ``greedy_log_likelihoods``, ``entropy``, ``input_tokens``), so polygraph's own
  ``MaximumSequenceProbability``, ``Perplexity``, ``MeanTokenEntropy``,
  ``MaximumTokenProbability`` and ``TokenEntropy`` run on the very outputs the head scored
  without a second generation. Under ``CausalLMWithUncertainty`` it also returns ``out``.
* Estimators, loaded by polygraph as a third-party module
  (``FactoryEstimator()("sigmoid_head.integrations.polygraph", cfg)`` calls
  :func:`load_estimator`): :class:`SigmoidHeadSequence` (product, geometric mean or
  minimum of token probabilities; ``method`` sigmoid, softmax or boostedprob),
  :class:`SigmoidHeadToken` and :class:`SigmoidHeadMeanEntropy`.
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
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lm_polygraph.estimators.estimator import Estimator
from lm_polygraph.stat_calculators.stat_calculator import StatCalculator

from .. import methods as registry
from ..backbone import Backbone
from ..cpu_precision import check_cpu_dtype
from ..dominant import DominantConfig
from ..head_io import fingerprint
from ..model import SigmoidHeadModel
from ..scoring.generate import DecodingConfig, Generated, generate_outputs
from ..scoring.rauq import RauqConfig

STAT_NAMES = {"sigmoid": "sigmoid_head_log_likelihoods", "softmax": "greedy_log_likelihoods",
              "rauq": "sigmoid_head_rauq_log_confidences"}
"""Statistic names that differ from :func:`stat_name`'s rule (the softmax's is polygraph's own)."""
OPT_IN = {"rauq"}
"""Methods computed only when asked for (RAUQ: ``SigmoidHeadCalculator(rauq=...)``)."""


def stat_name(method: str) -> str:
    """The statistic holding a registered method's per-token log-probabilities (one (T,)
    array per output): ``sigmoid_head_<method>_log_likelihoods`` unless renamed above."""
    return STAT_NAMES.get(method, f"sigmoid_head_{method}_log_likelihoods")


RAUQ_STAT = stat_name("rauq")
"""RAUQ's per-token log confidences, (T,) per output; only with ``rauq`` set."""
ENTROPY_STAT = "entropy"
GREEDY_STATS = ["input_tokens", "greedy_tokens", "greedy_texts", "greedy_log_likelihoods",
                ENTROPY_STAT]
"""polygraph's own statistics that the calculator yields from its single pass."""


def aggregations() -> tuple[str, ...]:
    """The aggregations a sequence estimator offers: every distinct one of the registry."""
    return tuple(a.name for a in registry.AGGREGATIONS.values() if a.distinct)


def _own_stats() -> list[str]:
    """The statistics the calculator adds for the registered methods (not the softmax's,
    which is polygraph's ``greedy_log_likelihoods``)."""
    return [stat_name(m) for m in registry.names() if stat_name(m) not in GREEDY_STATS]


DECODING_KEYS = ("do_sample", "temperature", "top_p", "top_k", "num_beams")
"""Generation parameters of a polygraph model adapter that are passed on to ``generate``."""


class SigmoidHeadCalculator(StatCalculator):
    """Generate once and yield the head's and the softmax's per-token statistics.

    Args:
        model: a SigmoidHeadModel whose backbone is the model polygraph generates with
            (the same module, or one with the same output matrix), or a head path/Hub id
            loaded onto the polygraph model on first use.
        dominant: dominant-token rule for BoostedProb (default: the paper's).
        decoding: further :class:`DecodingConfig` fields (e.g. ``{"do_sample": True}``);
            otherwise the polygraph model's generation parameters, else greedy.
        rauq: also RAUQ's per-token confidences (:data:`RAUQ_STAT`) from the same generation
            (it then runs with eager attention); None = off.
    """

    def __init__(self, model: SigmoidHeadModel | str | Path, dominant: DominantConfig | None = None,
                 decoding: dict[str, Any] | None = None, rauq: RauqConfig | None = None) -> None:
        super().__init__()
        self.model, self.dominant, self.decoding = model, dominant, dict(decoding or {})
        self.rauq = rauq

    @staticmethod
    def meta_info() -> tuple[list[str], list[str]]:
        return [*GREEDY_STATS, *_own_stats()], []

    def __str__(self) -> str:
        return "SigmoidHeadCalculator"

    def _head_model(self, hf_model: torch.nn.Module, tokenizer: Any) -> SigmoidHeadModel:
        weight = hf_model.get_output_embeddings().weight
        if weight.device.type == "cpu":  # a half-precision model on a CPU that faults on it
            check_cpu_dtype(str(weight.dtype).removeprefix("torch."))
        if not isinstance(self.model, SigmoidHeadModel):  # a path: load onto polygraph's model
            backbone = Backbone(hf_model, tokenizer, str(getattr(hf_model, "name_or_path", "")))
            self.model = SigmoidHeadModel.from_pretrained(self.model, backbone)
        backbone = self.model.backbone
        if backbone.model is not hf_model:
            theirs = hf_model.get_output_embeddings().weight
            if fingerprint(theirs) != self.model.config.fingerprint:
                raise ValueError("the polygraph model is not the base model of this Sigmoid Head "
                                 "(its output matrix differs from the one the head was trained on)")
        return self.model

    def _decoding(self, model: Any, max_new_tokens: int, extra: dict[str, Any]) -> DecodingConfig:
        params = getattr(model, "generation_parameters", None) or {}
        params = params if isinstance(params, dict) else vars(params)
        kw = {k: params[k] for k in DECODING_KEYS if params.get(k) is not None}
        kw.update({k: extra[k] for k in DECODING_KEYS if k in extra})
        kw.update(self.decoding)
        if not kw.get("do_sample"):
            for k in ("temperature", "top_p", "top_k"):
                kw.pop(k, None)
        return DecodingConfig(max_new_tokens=max_new_tokens, **kw)

    def __call__(self, dependencies: dict[str, Any], texts: list[str], model: Any,
                 max_new_tokens: int = 100, **kwargs: Any) -> dict[str, Any]:
        """Generate for one batch and score it.

        Prompts come from ``dependencies["model_inputs"]`` (``CausalLMWithUncertainty``)
        or from ``model.tokenize(texts)`` (polygraph's ``UEManager`` / benchmark runner).

        Returns:
            Per output: ``greedy_tokens`` (list of ids, cut after the first EOS, EOS
            included), ``greedy_texts``, ``greedy_log_likelihoods`` (softmax log p per
            token), ``entropy`` (nats per token), ``sigmoid_head_log_likelihoods``,
            ``sigmoid_head_boostedprob_log_likelihoods``, with ``rauq`` also
            ``sigmoid_head_rauq_log_confidences``; ``input_tokens``; ``out``.
        """
        shm = self._head_model(model.model, model.tokenizer)
        inputs = dependencies.get("model_inputs")
        if inputs is None:
            inputs = dict(model.tokenize(texts))
        extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
        prompts = _prompts(inputs["input_ids"], inputs.get("attention_mask"),
                           model.tokenizer.pad_token_id)
        decoding = self._decoding(model, max_new_tokens or 100, extra)
        outs = generate_outputs(shm, prompts, decoding, batch_size=max(1, len(prompts)),
                                dominant=self.dominant, rauq=self.rauq, progress=False)
        return _stats(outs, prompts, model.tokenizer)


def _prompts(input_ids: Any, mask: Any, pad_id: int | None) -> list[list[int]]:
    """Unpadded prompt ids per row of a (B, L) batch."""
    ids = torch.as_tensor(input_ids)
    if mask is not None:
        keep = torch.as_tensor(mask).bool()
        return [row[m].tolist() for row, m in zip(ids, keep, strict=True)]
    rows = []
    for row in ids.tolist():  # no mask: strip left padding only
        start = 0
        while pad_id is not None and start < len(row) - 1 and row[start] == pad_id:
            start += 1
        rows.append(row[start:])
    return rows


def _stats(outs: list[Generated], prompts: list[list[int]], tokenizer: Any) -> dict[str, Any]:
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    stats: dict[str, Any] = {k: [] for k in GREEDY_STATS}
    stats["input_tokens"] = [list(p) for p in prompts]
    for g in outs:
        ts = g.scores
        stats["greedy_tokens"].append(list(g.output))
        stats["greedy_texts"].append(tokenizer.decode(g.output, skip_special_tokens=True))
        stats[ENTROPY_STAT].append(np.asarray(ts.entropy, dtype=np.float64))
        for method, lp in ts.log_probs().items():  # every registered method computed
            stats.setdefault(stat_name(method), []).append(np.asarray(lp, dtype=np.float64))
    width = max(len(p) + len(g.output) for p, g in zip(prompts, outs, strict=True))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    seqs = torch.full((len(outs), width), pad, dtype=torch.long)
    for i, (p, g) in enumerate(zip(prompts, outs, strict=True)):  # left-padded prompt + output
        row = p + g.output
        seqs[i, width - len(row):] = torch.tensor(row)
    stats["out"] = GenerateDecoderOnlyOutput(sequences=seqs)
    return stats


def _aggregate(log_probs: np.ndarray, how: str) -> float:
    """Uncertainty ``-log`` of one aggregation of the token probabilities."""
    return -registry.AGGREGATIONS[how].log_value(np.asarray(log_probs, dtype=np.float64))


class SigmoidHeadSequence(Estimator):
    """Sequence uncertainty ``-log`` of the product, geometric mean or minimum of the
    token probabilities of one method.

    Args:
        method: a registered method (:mod:`sigmoid_head.methods`): ``sigmoid`` (the head),
            ``softmax``, ``boostedprob`` or ``rauq`` (RAUQ's per-token confidences; the
            calculator needs ``rauq`` set), ...
        aggregation: ``product``, ``mean_log`` (the geometric mean; ``geo_mean``, its name
            in earlier releases, is accepted) or ``min``.
    """

    def __init__(self, method: str = "sigmoid", aggregation: str = "product") -> None:
        _check_method(method)
        aggregation = registry.OLD_AGGREGATION_NAMES.get(aggregation, aggregation)
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


def _read(stats: dict[str, Any], method: str) -> list[np.ndarray]:
    if method == "rauq" and RAUQ_STAT not in stats:
        raise KeyError(f"no {RAUQ_STAT}: give SigmoidHeadCalculator rauq=RauqConfig() "
                       "(benchmark config: cfg: {rauq: true})")
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
        return np.array([float(np.mean(e)) for e in stats[ENTROPY_STAT]])


def load_estimator(config: Any) -> Estimator:
    """polygraph's hook for third-party estimators.

    ``config`` keys: ``level`` (``sequence`` default, or ``token``), ``method``
    (``sigmoid`` default, any other registered method such as ``softmax``, ``boostedprob``
    or ``rauq``, or ``entropy`` for the mean entropy), ``aggregation`` (``product``
    default, ``mean_log`` (``geo_mean`` accepted), ``min``;
    ``rauq`` without one is :class:`SigmoidHeadRAUQ`, polygraph's RAUQ value).
    """
    cfg = dict(config or {})
    method = cfg.get("method", "sigmoid")
    if method == "entropy":
        return SigmoidHeadMeanEntropy()
    if method == "rauq" and cfg.get("level", "sequence") == "sequence" and "aggregation" not in cfg:
        return SigmoidHeadRAUQ()
    if cfg.get("level", "sequence") == "token":
        return SigmoidHeadToken(method)
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
    method computed without being asked for), for configs and reports."""
    chosen = [m for m in registry.names() if m not in OPT_IN] if methods is None else methods
    return [str(SigmoidHeadSequence(m, a)) for m in chosen for a in aggregations()]
