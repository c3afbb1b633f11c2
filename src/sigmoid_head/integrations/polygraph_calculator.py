"""The LM-Polygraph plugin's stat calculator: generate once, score every token in that pass.

Needs the ``polygraph`` extra (``lm-polygraph>=0.7.0``). :class:`SigmoidHeadCalculator`,
a ``StatCalculator``, generates with the frozen LM and scores every generated token in the
same pass (:func:`sigmoid_head.scoring.generate.generate_outputs`: the head reads the LM
head's input at each step, the softmax values come from the step's raw logits). Besides
its own statistics (one per registered method, :func:`stat_name`, and one per sequence
baseline of :mod:`sigmoid_head.registry.columns` marked ``polygraph``, :func:`baseline_stat`) it
yields polygraph's greedy ones from that same pass (``greedy_tokens``, ``greedy_texts``,
``greedy_log_likelihoods``, ``entropy``, ``input_tokens``), so polygraph's own
``MaximumSequenceProbability``, ``Perplexity``, ``MeanTokenEntropy``,
``MaximumTokenProbability`` and ``TokenEntropy`` run on the very outputs the head scored
without a second generation. Under ``CausalLMWithUncertainty`` it also returns ``out``. It
generates as polygraph's model would (every field of its GenerationParameters, and the
``min_new_tokens=2`` of its GreedyProbsCalculator) and computes the softmax side from the
logits as polygraph records them. Mixed with polygraph's own greedy calculators, one
generation serves all: it force-decodes a generation made before it, and after generating
it yields polygraph's per-step distributions too, while the statistics it does not compute
(:data:`NOT_YIELDED`) refuse to be read. RAUQ is opt-in
(``SigmoidHeadCalculator(model, rauq=RauqConfig())``): its per-token confidences from the
attention weights of that same generation (:mod:`sigmoid_head.scoring.rauq`).

The estimators reading these statistics are :mod:`.polygraph`'s.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lm_polygraph.stat_calculators.stat_calculator import StatCalculator

from ..head.folder import fingerprint
from ..head.model import SigmoidHeadModel
from ..lm.backbone import Backbone
from ..lm.cpu_precision import check_cpu_dtype
from ..lm.dominant import DominantConfig
from ..registry import columns
from ..registry import methods as registry
from ..registry.contract import row_values
from ..scoring.decoding import DecodingConfig, Generated, eos_ids
from ..scoring.generate import generate_outputs, score_generated
from ..scoring.rauq import RauqConfig

STAT_NAMES = {"sigmoid": "sigmoid_head_log_likelihoods", "softmax": "greedy_log_likelihoods",
              "rauq": "sigmoid_head_rauq_log_confidences"}
"""Statistic names that differ from :func:`stat_name`'s rule (the softmax's is polygraph's own)."""
OPT_IN = {m.name for m in registry.methods() if m.settings is not None}
"""Methods computed only when asked for (the registry's opt-in methods: RAUQ,
``SigmoidHeadCalculator(rauq=...)``)."""


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


GENERATION_STAT = "sigmoid_head_greedy_tokens"
"""The output ids the calculator's statistics describe: the estimators here refuse
statistics whose ``greedy_tokens`` come from another generation."""
FULL_STATS = ["greedy_log_probs", "greedy_logits", "greedy_tokens_alternatives", "tokenizer"]
"""polygraph's statistics of the whole distribution at each step that the calculator also
yields from its one generation (the log-probabilities after the logits processors, as
polygraph's GreedyProbsCalculator and InferCausalLMCalculator yield them), so that
polygraph's estimators that read them (BoostedProbSequence, ...) read the same outputs."""
NOT_YIELDED = ["attention_all", "embeddings_decoder", "embeddings_encoder"]
"""Statistics of polygraph's greedy calculators that the calculator does not compute: when
it generated, these hold :class:`OtherGeneration`, which refuses to be read, so that they
can never be taken from another calculator's (second) generation."""
N_ALTERNATIVES = 10
"""Top tokens per step in ``greedy_tokens_alternatives`` (polygraph's default)."""


class OtherGeneration:
    """Stands for a statistic the calculator does not compute: any use of it raises a
    ValueError saying so (instead of polygraph pairing statistics of two generations)."""

    def __init__(self, stat: str) -> None:
        self.stat = stat

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise ValueError(
            f"{self.stat} is not computed by SigmoidHeadCalculator, which generated the outputs "
            "of this batch, and taking it from another calculator's generation would mix two "
            "generations. Put SigmoidHeadCalculator after polygraph's GreedyProbsCalculator "
            "(dependencies: [greedy_tokens]) so that it scores that generation, or use "
            "SigmoidHeadRAUQ for RAUQ")

    __getitem__ = __iter__ = __len__ = __array__ = _refuse

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"OtherGeneration({self.stat!r})"


def baseline_stat(name: str) -> str:
    """The statistic of a sequence baseline of the column registry (one value per output)."""
    return f"sigmoid_head_{name}"


def polygraph_baselines() -> list[Any]:
    """The column registry's sequence baselines that the calculator computes (``polygraph``
    set on their entry)."""
    return [c for c in columns.baselines() if c.polygraph]


def _own_stats() -> list[str]:
    """The statistics the calculator adds for the registered methods (not the softmax's,
    which is polygraph's ``greedy_log_likelihoods``) and baselines."""
    return [*(stat_name(m) for m in registry.names() if stat_name(m) not in GREEDY_STATS),
            *(baseline_stat(c.name) for c in polygraph_baselines())]


DECODING_KEYS = ("do_sample", "temperature", "top_p", "top_k", "num_beams")
"""Generation parameters of a polygraph model adapter that are :class:`DecodingConfig` fields."""
HONOURED_KEYS = (*DECODING_KEYS, "repetition_penalty", "allow_newlines", "stop_strings",
                 "min_new_tokens", "presence_penalty", "num_return_sequences", "max_new_tokens")
"""Every field of polygraph's GenerationParameters, each honoured as its WhiteboxModel does:
``repetition_penalty``; ``allow_newlines=False`` suppresses every token whose text holds a
newline; ``stop_strings`` stop the generation; ``min_new_tokens`` (2 by default when the
calculator stands in for polygraph's GreedyProbsCalculator, as that one does);
``presence_penalty`` is ignored with a warning, as WhiteboxModel ignores it."""
CONTROLLED_KEYS = ("return_dict_in_generate", "output_scores", "output_logits",
                   "output_attentions", "output_hidden_states", "max_length", "streamer",
                   "pad_token_id", "logits_processor")
"""``generate`` arguments the calculator sets itself (any other keyword argument given to
``CausalLMWithUncertainty.generate`` is passed on to ``generate``)."""
GREEDY_MIN_NEW_TOKENS = 2
"""polygraph's GreedyProbsCalculator generates at least 2 tokens."""


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
        return [*GREEDY_STATS, *_own_stats(), GENERATION_STAT, *FULL_STATS], []

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

    def _newline_ids(self, tokenizer: Any) -> list[int]:
        """Every token id whose text holds a newline (cached per tokenizer)."""
        cache = getattr(self, "_newlines", None)
        if cache is None or cache[0] is not tokenizer:
            ids = [t for t in range(len(tokenizer)) if "\n" in tokenizer.decode([t])]
            self._newlines = cache = (tokenizer, ids)
        return cache[1]

    def _decoding(self, model: Any, max_new_tokens: int, extra: dict[str, Any],
                  stands_in: bool) -> DecodingConfig:
        """The polygraph model's generation settings as a :class:`DecodingConfig`, every one
        honoured (:data:`HONOURED_KEYS`); ``extra`` (the keyword arguments of
        ``CausalLMWithUncertainty.generate``) overrides them, and the calculator's own
        ``decoding`` overrides both. ``stands_in``: polygraph's own greedy calculator would
        have generated (its ``min_new_tokens`` applies)."""
        params = getattr(model, "generation_parameters", None) or {}
        params = dict(params) if isinstance(params, dict) else dict(vars(params))
        given = {**params, **{k: v for k, v in extra.items() if v is not None}}
        kw = {k: given[k] for k in DECODING_KEYS if given.get(k) is not None}
        gen: dict[str, Any] = {}
        penalty = given.get("repetition_penalty")
        if penalty is not None and float(penalty) != 1.0:
            gen["repetition_penalty"] = float(penalty)
        if given.get("allow_newlines") is False:
            gen["suppress_tokens"] = self._newline_ids(model.tokenizer)
        stops = given.get("stop_strings")
        if stops:
            from transformers import StoppingCriteriaList, StopStringCriteria

            stops = [stops] if isinstance(stops, str) else list(stops)
            gen["stopping_criteria"] = StoppingCriteriaList(
                [StopStringCriteria(tokenizer=model.tokenizer, stop_strings=stops)])
        least = given.get("min_new_tokens", GREEDY_MIN_NEW_TOKENS if stands_in else None)
        if least:
            gen["min_new_tokens"] = int(least)
        if given.get("presence_penalty"):
            warnings.warn(f"presence_penalty={given['presence_penalty']} is ignored, as "
                          "polygraph's WhiteboxModel ignores it", stacklevel=3)
        if given.get("num_return_sequences") not in (None, 1):
            raise ValueError("SigmoidHeadCalculator gives one output per input: "
                             "num_return_sequences must be 1")
        gen.update({k: v for k, v in extra.items()
                    if k not in HONOURED_KEYS and k not in CONTROLLED_KEYS and v is not None})
        own = dict(self.decoding)
        kw.update({k: v for k, v in own.items() if k != "extra"})
        gen.update(own.get("extra") or {})
        if not kw.get("do_sample"):
            for k in ("temperature", "top_p", "top_k"):
                kw.pop(k, None)
        return DecodingConfig(max_new_tokens=max_new_tokens, extra=gen, **kw)

    def __call__(self, dependencies: dict[str, Any], texts: list[str], model: Any,
                 max_new_tokens: int = 100, **kwargs: Any) -> dict[str, Any]:
        """Generate for one batch and score it, or, when another calculator generated for
        this batch already (``greedy_tokens`` in ``dependencies``), score that generation
        by force-decoding it: every statistic then describes one generation.

        Prompts come from ``dependencies["model_inputs"]`` (``CausalLMWithUncertainty``)
        or from ``model.tokenize(texts)`` (polygraph's ``UEManager`` / benchmark runner).
        The generation follows every setting of the polygraph model (:data:`HONOURED_KEYS`),
        and the softmax-side values are computed from the logits as polygraph records them
        (after the logits processors: repetition penalty, ``min_new_tokens``, suppressed
        newlines; before temperature, top-k and top-p).

        Returns:
            Per output: ``greedy_tokens`` (list of ids, cut after the first EOS, EOS
            included), ``greedy_texts``, ``greedy_log_likelihoods`` (softmax log p per
            token), ``entropy`` (nats per token), ``sigmoid_head_log_likelihoods``,
            ``sigmoid_head_boostedprob_log_likelihoods``, with ``rauq`` also
            ``sigmoid_head_rauq_log_confidences``; ``input_tokens``; ``out``;
            :data:`GENERATION_STAT`; and, when it generated, :data:`FULL_STATS`
            (:data:`NOT_YIELDED` refuse to be read).
        """
        shm = self._head_model(model.model, model.tokenizer)
        inputs = dependencies.get("model_inputs")
        stands_in = inputs is None
        if inputs is None:
            inputs = dict(model.tokenize(texts))
        extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
        prompts = _prompts(inputs["input_ids"], inputs.get("attention_mask"),
                           model.tokenizer.pad_token_id)
        theirs = dependencies.get("greedy_tokens")
        if theirs is not None and GENERATION_STAT not in dependencies:
            if len(theirs) != len(prompts):
                raise ValueError(f"greedy_tokens holds {len(theirs)} outputs for "
                                 f"{len(prompts)} inputs")
            eos = eos_ids(shm.backbone, DecodingConfig())
            outs = [Generated(i, list(p), [int(t) for t in toks],
                              len(toks) > 0 and int(toks[-1]) in eos)
                    for i, (p, toks) in enumerate(zip(prompts, theirs, strict=True))]
            score_generated(shm, outs, batch_size=max(1, len(outs)), dominant=self.dominant,
                            rauq=self.rauq)
            return _stats(outs, prompts, model.tokenizer) | _baselines(shm, texts, outs, prompts)
        decoding = self._decoding(model, max_new_tokens or 100, extra, stands_in)
        outs = generate_outputs(shm, prompts, decoding, batch_size=max(1, len(prompts)),
                                dominant=self.dominant, rauq=self.rauq, progress=False,
                                processed_logits=True, keep_logits=True)
        stats = _stats(outs, prompts, model.tokenizer)
        stats.update(_full_stats(outs, model.tokenizer))
        stats.update(_baselines(shm, texts, outs, prompts))
        return stats


def _baselines(model: SigmoidHeadModel, texts: list[str] | None, outs: list[Generated],
               prompts: list[list[int]]) -> dict[str, Any]:
    """The statistics of the registry's baselines marked ``polygraph`` (active under their
    default settings), one value per output, by their hooks."""
    found = [c for c in polygraph_baselines()
             if columns.active(c.settings() if c.settings is not None else None)]
    if not found:
        return {}
    tok = model.backbone.tokenizer
    sources = list(texts) if texts else [tok.decode(p, skip_special_tokens=True) for p in prompts]
    cands = [tok.decode(g.output, skip_special_tokens=True) for g in outs]
    out = {}
    for c in found:
        settings = c.settings() if c.settings is not None else None
        values = c.hook()(columns.BaselineInputs(
            model, [{"source": s} for s in sources], [{"candidate": x} for x in cands],
            sources, cands, settings))
        checked = row_values(c, values, len(cands), columns.COLUMNS)  # the plugin contract
        out[baseline_stat(c.name)] = [float(v) for v in checked]
    return out


def _full_stats(outs: list[Generated], tokenizer: Any) -> dict[str, Any]:
    """:data:`FULL_STATS` (and :data:`NOT_YIELDED` as :class:`OtherGeneration`) of outputs
    generated with ``keep_logits``."""
    if any(g.logits is None for g in outs):  # force-decoded (beam search): not at hand
        return {k: OtherGeneration(k) for k in (*FULL_STATS[:-1], *NOT_YIELDED)}
    log_probs, logits, alternatives = [], [], []
    for g in outs:
        lg = g.logits.float()
        lp = torch.log_softmax(lg, -1)
        log_probs.append(lp.numpy())
        logits.append(lg.numpy())
        k = min(N_ALTERNATIVES, lp.shape[-1])
        top = lp.topk(k, -1)
        alternatives.append([
            sorted(zip(idx.tolist(), val.tolist(), strict=True), key=lambda a, t=t: a[0] != t)
            for idx, val, t in zip(top.indices, top.values, g.output, strict=True)])
    return {"greedy_log_probs": log_probs, "greedy_logits": logits,
            "greedy_tokens_alternatives": alternatives, "tokenizer": tokenizer,
            **{k: OtherGeneration(k) for k in NOT_YIELDED}}


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
    stats[GENERATION_STAT] = [list(g.output) for g in outs]
    return stats
