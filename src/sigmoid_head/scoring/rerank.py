"""Best-of-N reranking: draw several candidates per source, score them all, pick one.

For every source (or chat) the frozen model writes its greedy output (beam search with
``num_beams`` > 1; left out with ``greedy=False``) and ``samples`` outputs sampled at
``temperature`` (``top_p``). Each candidate is scored by the pass that generated it (no
second forward pass; beam search is force-decoded, see :mod:`.generate`): every registered
method in every aggregation, ``entropy_mean``, and the head folder's combined score and
calibrated probabilities, as ``sigmoid-head generate`` writes them. The candidate with the
best ``select`` score is the pick: the highest, or the lowest for a score where higher =
worse (``entropy_mean``; the directions are :mod:`.fields`'), the first one on a tie.

Sampling is seeded per batch: a batch of sources draws from its own stream, seeded by
``seed`` and the batch's inputs. The batches do not depend on the number of processes or
on a resume (:mod:`.distributed`), so the same settings (``batch_size`` included) draw the
same candidates in one process or many, and after an interruption. Output is
:func:`.corpus_output.run_streamed`'s, as for ``score`` and ``generate``: streamed,
resumable, data-parallel under ``accelerate launch`` / ``torchrun``, one row per source
(:func:`row_fields`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..evaluation.combination import RERANK_SELECT, RERANK_SELECT_NO_HEAD
from ..registry import methods as registry
from ..safe.finite import bounds
from . import fields
from .corpus import CorpusConfig, CorpusResult, Explanations, _run, _settings, add_baselines

RERANK_WINDOW_BATCHES = 4
"""Batches per window (the unit written to disk): each batch generates 1 + ``samples``
outputs per source, so a window is smaller than ``generate``'s and an interruption loses
less."""
AT_AGGREGATIONS = {"prod": "product", "product": "product", "mean": "mean_log",
                   "mean_log": "mean_log", "geo_mean": "mean_log", "min": "min",
                   "logprob": "logprob"}
"""``method@aggregation`` spellings of a selection score (``softmax@mean``, as the results
tables name them) -> the aggregation."""
CALIBRATION_KINDS = ("platt", "isotonic")
"""The calibrated probabilities a head folder's calibration adds (``<method>_<kind>``)."""
KEEP = ("source", "messages", "target")
"""Input fields copied into a row (a ``target`` is kept as a reference for the picks)."""


def row_fields() -> tuple[fields.Field, ...]:
    """The fields of a rerank row, in order: the input, the column registry's rerank-row
    entries, and ``truncated``."""
    from ..registry import columns as cols

    first = fields.Field("source / messages", fields.NEITHER, "text",
                         "the input (and its target, when it has one)")
    cut = fields.Field("truncated", fields.NEITHER, "true", "the prompt was cut to fit the model")
    return (first, *(fields.Field(*r) for r in cols.describe_rows(lambda c: c.level == cols.RERANK)),
            cut)




@dataclass
class RerankConfig:
    """Which candidates are drawn per source, and which score picks one (``rerank``)."""

    samples: int = field(default=6, metadata=bounds("samples"))
    """Sampled candidates per source."""
    temperature: float = field(default=0.8, metadata=bounds("temperature"))
    """Sampling temperature of the samples."""
    top_p: float = field(default=1.0, metadata=bounds("top_p"))
    """Nucleus sampling mass of the samples (1 = off)."""
    greedy: bool = True
    """Also the greedy output as a candidate (beam search's best with --num-beams > 1)."""
    num_beams: int = field(default=1, metadata=bounds(low=1, integer=True))
    """Beam size of the non-sampled candidate (1 = greedy)."""
    max_new_tokens: int = field(default=128, metadata=bounds(low=1, integer=True))
    """Most tokens generated per candidate (the EOS included)."""
    seed: int = field(default=0, metadata=bounds("seed"))
    """Seed of the samples: each batch of sources draws from its own stream, seeded by this
    and the batch's inputs, so the same command (the same --batch-size) draws the same
    candidates with any number of processes and after a resume."""
    select: str = RERANK_SELECT
    """The score that picks a candidate: any score of a generate row (its highest value; the
    lowest for entropy_mean, where higher = worse), also spelt method@aggregation
    (softmax@mean = softmax_mean_log). The preset, combined (the softmax minimum without a
    head), was chosen on dev for reranking (docs/results.md, "Best-of-N reranking")."""

    def __post_init__(self) -> None:
        if self.samples < 0 or self.num_beams < 1 or self.max_new_tokens < 1:
            raise ValueError("samples must be >= 0, num_beams and max_new_tokens >= 1")
        if not self.greedy and not self.samples:
            raise ValueError("no candidates: give samples >= 1, or keep the greedy candidate")
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be > 0 and top_p in (0, 1]")
        from ..safe.finite import check_settings

        check_settings(self)  # finite, representable, in range (seed, temperature, samples)
        self.select = check_select(self.select, selectable())

    def decodings(self, batch_seed: int) -> list[tuple[str, Any]]:
        """(origin, DecodingConfig) of each kind of candidate, in candidate order."""
        from .decoding import DecodingConfig

        out = []
        if self.greedy:
            out.append(("greedy" if self.num_beams == 1 else "beam",
                        DecodingConfig(max_new_tokens=self.max_new_tokens, num_beams=self.num_beams)))
        if self.samples:
            out.append(("sample", DecodingConfig(
                max_new_tokens=self.max_new_tokens, do_sample=True, temperature=self.temperature,
                top_p=self.top_p, num_return_sequences=self.samples, seed=batch_seed)))
        return out


# ----------------------------------------------------------------------------- the selection


def select_key(name: str) -> str:
    """The row key of a selection score: ``name`` itself, ``method@aggregation``
    (``softmax@mean`` -> ``softmax_mean_log``, ``entropy@mean`` -> ``entropy_mean``), or an
    old or probability-scale name of the length-normalised score (``softmax_geomean``,
    ``softmax_geo_mean``: ranked as ``softmax_mean_log``)."""
    name = name.strip()
    if "@" not in name:
        return registry.ranking_key(name)
    method, _, agg = name.partition("@")
    if method == "entropy" and agg == "mean":
        return "entropy_mean"
    if method in registry.METHODS and agg in AT_AGGREGATIONS:
        return registry.AGGREGATIONS[AT_AGGREGATIONS[agg]].key(method)
    return name


def selectable(head: bool = True, calibrated: Iterable[str] | None = None) -> list[str]:
    """The scores a candidate can be picked by: every aggregation of each registered method
    (those reading the head only with a head; not those reading attention, RAUQ's, which
    rerank does not capture), the column registry's sequence scores with a direction that rerank
    computes (``entropy_mean``, a baseline registered for rerank; with a head the combined
    score), and with a head the calibrated probabilities of the ``calibrated`` methods
    (None: of any method, as a head folder's calibration may hold)."""
    from ..registry import columns as cols

    names = [k for m in registry.methods() if m.reads != "attention" and (head or m.reads != "head")
             for k in m.keys(distinct_only=False)]
    names += [k for c in cols.columns(command="rerank") if head or not c.from_head
              for k in c.expand() if k in cols.selectable_keys("rerank")]
    if head:
        cal = [m.name for m in registry.methods() if m.reads != "attention"] \
            if calibrated is None else list(calibrated)
        names += [f"{m}_{kind}" for m in cal for kind in CALIBRATION_KINDS]
    return names


def check_select(name: str, choices: Sequence[str]) -> str:
    """The row key of ``name`` (:func:`select_key`) when it is one of ``choices``.

    Raises:
        ValueError: it is not, with the choices listed (and, for a score that exists but
            not for this model, what it needs).
    """
    key = select_key(name)
    if key not in choices:
        needs = (" of this model's candidates (the head's scores and the combined score need "
                 "a head, the calibrated ones a calibration saved with it)"
                 if key in selectable() else "")
        raise ValueError(f"select {name!r} is not a score{needs}; choose one of: "
                         + ", ".join(choices))
    return key


def higher_is_better(key: str) -> bool:
    """Whether a higher value of score ``key`` is better (its column's direction)."""
    field = fields.field_for(key)
    if field is None or field.direction == fields.NEITHER:
        raise ValueError(f"{key!r} is not a score with a direction")
    return field.direction == fields.HIGHER_BETTER


def pick(values: Sequence[float], higher_better: bool) -> int:
    """Index of the best value: the highest (the lowest unless ``higher_better``), the first
    on a tie; a NaN is never picked unless every value is NaN (then the first)."""
    best: int | None = None
    for i, v in enumerate(values):
        if math.isnan(v):
            continue
        if best is None or (v > values[best] if higher_better else v < values[best]):
            best = i
    return 0 if best is None else best


def check_not_all_nan(cands: Sequence[dict], key: str) -> None:
    """Refuse a selection score that is NaN for every candidate of a batch (nothing to pick
    by: every pick would be candidate 0), before any row of it is written."""
    values = [c.get(key) for c in cands]
    if values and all(v is None or math.isnan(float(v)) for v in values):
        raise ValueError(f"--select {key}: the score is NaN (or missing) for every one of "
                         f"{len(values)} candidates; choose another score")


def batch_seed(seed: int, records: Sequence[dict]) -> int:
    """The sampling seed of one batch: from ``seed`` and the batch's inputs (63 bits)."""
    text = json.dumps([seed, list(records)], sort_keys=True, ensure_ascii=False, default=str)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8],
                          "big") >> 1


# ----------------------------------------------------------------------------- the candidates


def candidates(model: Any, records: Sequence[dict], config: RerankConfig, *,
               prompt_template: str | None = None, use_chat_template: bool | None = None,
               batch_size: int = 16, with_tokens: bool = False) -> tuple[list[list[dict]], set[int]]:
    """Draw and score the candidates of a batch of records (one ``generate`` call per kind
    of candidate over the whole batch, ``batch_size`` inputs at a time).

    Returns:
        Per record its candidates (greedy or beam first, then the samples in order), each
        ``{candidate, origin, [sample], finished, <scores>}``; and the indices of the
        records whose prompt was cut to fit the model.
    """
    from .decoding import generation_prompts, output_row
    from .generate import generate_outputs
    from .token_scores import unpack_model

    backbone, _ = unpack_model(model)
    decodings = config.decodings(batch_seed(config.seed, records))
    _, prompts, cut = generation_prompts(model, records, decodings[0][1], prompt_template,
                                         use_chat_template)
    groups: list[list[dict]] = [[] for _ in records]
    for origin, decoding in decodings:
        for g in generate_outputs(model, prompts, decoding, batch_size=batch_size, progress=False):
            row = output_row(g, {}, backbone.tokenizer, with_tokens)
            group = groups[g.input_index]
            sample = {"sample": sum(c["origin"] == "sample" for c in group)} if origin == "sample" else {}
            group.append({"candidate": row.pop("candidate"), "origin": origin, **sample, **row})
    return groups, cut


def reranked_row(record: dict, cands: list[dict], key: str, truncated: bool = False) -> dict:
    """The output row of one source: its candidates and the pick under score ``key``."""
    missing = [i for i, c in enumerate(cands) if key not in c]
    if missing:
        raise ValueError(f"candidate {missing[0]} has no {key!r} score")
    values = [math.nan if c[key] is None else float(c[key]) for c in cands]  # None: no value
    k = pick(values, higher_is_better(key))
    return {**{f: record[f] for f in KEEP if f in record},
            **({"truncated": True} if truncated else {}),
            "picked": cands[k]["candidate"], "pick": k, "select": key,
            "picked_score": values[k], "candidates": cands}


def rerank_corpus(model: Any, inputs: Any, config: RerankConfig | None = None,
                  corpus: CorpusConfig | None = None) -> CorpusResult:
    """Best-of-N reranking of a corpus, as ``sigmoid-head rerank`` does it: for every
    ``{source}`` / ``{messages}`` input, draw the candidates of ``config``, score them, pick
    one.

    Args:
        model: a SigmoidHeadModel (its calibration, error spans and fitted combination come
            with ``model.extras``, where it came from with ``model.source``; without a fitted
            combination, ``combined`` is ``generate``'s default), or a Backbone for the
            baselines only.
        inputs: the records (a list, or anything sized and iterable more than once).
        config: the candidates and the selection score (default: :class:`RerankConfig`'s).
        corpus: batching, prompts and output (``batch_size``, ``prompt_template``, ``chat``,
            ``with_tokens``: per-token scores in every candidate, ``to_json``: streamed and
            resumable, ``quiet``); the extra baselines, ``html`` and ``max_tokens`` are not
            offered here.

    Returns:
        The count, the means of the rows' numbers (``picked_score``), and the rows (one per
        input, :func:`row_fields`) unless written to ``corpus.to_json``.

    Raises:
        ValueError: an option rerank does not offer, or a ``select`` score this model's
            candidates do not have (the choices listed), before anything is generated.
    """
    from .token_scores import unpack_model

    config, corpus = config or RerankConfig(), corpus or CorpusConfig()
    from ..registry import columns as cols
    from .corpus_config import refused_settings

    offered = dict.fromkeys(refused_settings(corpus, "rerank"), True)
    for name, settings in corpus.baselines.items():  # the opt-in baselines rerank does not run
        column = cols.COLUMNS.get(name)
        if (column is None or "rerank" not in column.commands) and cols.active(settings):
            offered[cols.first_field(settings)] = True
    refused = [k for k, v in offered.items() if v]
    if refused:
        raise ValueError(f"rerank does not offer {', '.join(refused)}")
    from ..safe.finite import check_new_tokens

    check_new_tokens(config.max_new_tokens, unpack_model(model)[0].model.config)  # before output
    explain = Explanations.load(model, "rerank")
    head = unpack_model(model)[1] is not None
    calibrated = list(explain.calibrator.platt) if explain.calibrator is not None else []
    select = config.select if head or config.select != RERANK_SELECT else RERANK_SELECT_NO_HEAD
    key = check_select(select, selectable(head, calibrated))
    with_tokens = corpus.keep_tokens() or explain.spans is not None or explain.word is not None  # the spans and the word model need them

    def batch(part: list[dict]) -> list[dict]:
        groups, cut = candidates(model, part, config, prompt_template=corpus.prompt_template,
                                 use_chat_template=corpus.chat, batch_size=corpus.batch_size,
                                 with_tokens=with_tokens)
        flat = [c for g in groups for c in g]
        add_baselines(model, [r for r, g in zip(part, groups, strict=True) for _ in g], flat,
                      corpus, command="rerank")  # the baselines registered for rerank
        explain.apply(flat, corpus.keep_tokens())
        check_not_all_nan(flat, key)
        return [reranked_row(rec, g, key, i in cut)
                for i, (rec, g) in enumerate(zip(part, groups, strict=True))]

    # the candidates were explained above; the rows themselves have nothing to add
    result = _run(model, inputs, corpus, Explanations(), batch, batch_size=corpus.batch_size,
                  window=RERANK_WINDOW_BATCHES * corpus.batch_size,
                  settings=_settings(model, corpus, rerank=asdict(config),
                                     batch_size=corpus.batch_size))
    result.mix = explain.mix() if head else None
    result.notices = explain.notices() if head else []
    return result


def describe() -> str:
    """The fields of a rerank row, then those of a candidate's scores, as Markdown tables."""
    rows = ["One row per source:", "", "| field | direction | range | meaning |", "|---|---|---|---|"]
    rows += [fields.table_row(f) for f in row_fields()]
    return "\n".join(rows) + "\n\nEvery candidate's scores:\n\n" + fields.describe()
