"""Best-of-N reranking: what ``sigmoid-head rerank`` does, as library calls.

For every source the model draws N candidates: its greedy output (beam search with
``num_beams`` > 1) and ``samples`` outputs sampled at ``temperature`` (nucleus ``top_p``).
Every candidate is scored during its own generation (no second pass; the same scores as
``generate``), the head folder's combined score, calibration and error spans are added, and
the candidate with the highest ``select`` score is picked. One row per candidate is
written, in source order, each with its ``origin`` (``greedy``, ``beam`` or
``sample:<i>``), the source's index ``source_index``, ``picked`` (true for the pick) and
``picked_by`` (the selection score): the output is a ``score``/``generate`` file whose
picks are one filter away (``picked`` rows).

Sampling is seeded per batch of sources (from ``DecodingConfig.seed`` and the batch's
sources), so a resumed or data-parallel run draws the same candidates as one uninterrupted
run with the same ``batch_size``.

The default selection score, ``combined`` (``score``'s combination of the head geo-mean
and the softmax minimum, or the head folder's fitted one), was chosen on the dev verses of
the MT and LLM settings of ``recipes/bible/rerank_study.py``; on their test verses it was
neither better nor worse than the best softmax-side score (docs/results.md, "Best-of-N
reranking").
"""

from __future__ import annotations

import math
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .corpus import CorpusConfig, CorpusResult, Explanations, _run, _settings, add_baselines

DEFAULT_SELECT = "combined"
"""The selection score chosen on dev for reranking (module docstring)."""
LOWER_IS_BETTER = frozenset({"entropy_mean"})
"""Selection scores where the lowest value wins."""


@dataclass
class RerankConfig:
    """How candidates are drawn and picked (``sigmoid-head rerank``)."""

    samples: int = 6
    """Sampled candidates per source (0: the greedy or beam output only)."""
    temperature: float = 0.8
    """Sampling temperature of the sampled candidates."""
    top_p: float = 1.0
    """Nucleus sampling: sample among the smallest set of tokens whose probability reaches this."""
    greedy: bool = True
    """Also the greedy output (beam search with --num-beams > 1) as the first candidate."""
    select: str = DEFAULT_SELECT
    """The score that picks a source's candidate: any sequence score of the output (sigmoid-head
    rerank --describe), the highest wins (entropy_mean: the lowest); default chosen on dev for
    reranking (docs/results.md)."""

    def __post_init__(self) -> None:
        if self.samples < 0 or (self.samples == 0 and not self.greedy):
            raise ValueError("samples must be >= 0, and > 0 without the greedy candidate")
        if not self.temperature > 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be > 0 and top_p in (0, 1]")

    def per_source(self) -> int:
        """Candidates per source."""
        return int(self.greedy) + self.samples


def selection_keys() -> list[str]:
    """Every score ``select`` may name: each registered method in each aggregation, the
    combined score and the mean entropy."""
    from .. import methods as registry

    return [*(k for m in registry.methods() for k in m.keys(distinct_only=True)),
            "combined", "combined_log", "entropy_mean"]


def check_select(select: str) -> None:
    """Raises ValueError naming the choices when ``select`` is no selection score."""
    keys = selection_keys()
    if select not in keys:
        raise ValueError(f"unknown selection score {select!r}; choose from {', '.join(keys)}")


def pick(rows: list[dict], select: str) -> int:
    """Index of the row ``select`` prefers (the highest; the lowest for mean entropy); the
    first on ties, NaN never picked unless every value is NaN.

    Raises:
        KeyError: a row without ``select``.
    """
    sign = -1.0 if select in LOWER_IS_BETTER else 1.0
    values = [sign * float(r[select]) for r in rows]
    values = [-math.inf if math.isnan(v) else v for v in values]
    return max(range(len(values)), key=lambda i: (values[i], -i))


def batch_seed(seed: int, part: list[dict]) -> int:
    """The sampling seed of one batch: the run's seed and the batch's sources, so a batch
    draws the same candidates in any process and after any interruption."""
    return (seed * 1_000_003 + zlib.crc32(repr([sorted(r.items()) for r in part]).encode())) % 2**31


def rerank_records(model: Any, records: list[dict], rerank: RerankConfig | None = None,
                   decoding: Any = None, *, prompt_template: str | None = None,
                   use_chat_template: bool | None = None, batch_size: int = 8,
                   with_tokens: bool = False, rauq: Any = None,
                   explain: Explanations | None = None) -> list[dict]:
    """Draw, score and pick the candidates of ``records`` (``{source}`` / ``{messages}``).

    Args:
        model: a SigmoidHeadModel (or a Backbone: softmax-side scores only).
        records: the sources.
        rerank: how many candidates and which score picks (default :class:`RerankConfig`).
        decoding: the greedy/beam and shared settings (``max_new_tokens``, ``num_beams``,
            ``seed``, head guidance); its sampling fields are ``rerank``'s.
        explain: what the head folder adds (default: the model's extras for ``rerank``).

    Returns:
        ``rerank.per_source()`` rows per record, in record order (module docstring).
    """
    from .generate import DecodingConfig, generate_and_score

    rerank = rerank or RerankConfig()
    check_select(rerank.select)
    decoding = decoding or DecodingConfig()
    explain = explain if explain is not None else Explanations.load(model, "rerank")
    kw = {"prompt_template": prompt_template, "use_chat_template": use_chat_template,
          "batch_size": batch_size, "with_tokens": with_tokens, "rauq": rauq, "progress": False}
    groups: list[list[dict]] = [[] for _ in records]
    if rerank.greedy:
        first = replace(decoding, do_sample=False, num_return_sequences=1)
        origin = "beam" if decoding.num_beams > 1 else "greedy"
        for i, row in enumerate(generate_and_score(model, records, first, **kw)):
            groups[i].append({**row, "origin": origin})
    if rerank.samples:
        sampled = replace(decoding, do_sample=True, num_beams=1, temperature=rerank.temperature,
                          top_p=rerank.top_p, num_return_sequences=rerank.samples,
                          seed=batch_seed(decoding.seed, records))
        rows = generate_and_score(model, records, sampled, **kw)
        for j, row in enumerate(rows):
            groups[j // rerank.samples].append({**row, "origin": f"sample:{j % rerank.samples}"})
    out = []
    for group in groups:
        if explain.combination is not None:
            explain.combination.apply(group)
        best = pick(group, rerank.select)
        out += [{**r, "picked": k == best, "picked_by": rerank.select} for k, r in enumerate(group)]
    return out


INDEX = "\0source_index"
"""The key under which :class:`_Numbered` carries a record's position (never an input key)."""


class _Numbered:
    """The inputs, each record with its position in the stream under :data:`INDEX`."""

    def __init__(self, inputs: Any) -> None:
        self.inputs = inputs

    def __len__(self) -> int:
        return len(self.inputs)

    def __iter__(self) -> Any:
        for i, rec in enumerate(self.inputs):
            yield {**rec, INDEX: i}


def rerank_corpus(model: Any, inputs: Any, config: CorpusConfig | None = None,
                  rerank: RerankConfig | None = None, decoding: Any = None, *,
                  head_dir: str | Path | None = None) -> CorpusResult:
    """Best-of-N reranking on a corpus, as ``sigmoid-head rerank`` does it: streamed to
    ``config.to_json`` (resumed when rerun after an interruption), data-parallel under
    ``accelerate launch`` / ``torchrun``, an HTML page of every candidate with ``config.html``.

    Args:
        model: a SigmoidHeadModel, or a Backbone for the softmax-side scores only.
        inputs: the records (a list, or anything sized and iterable more than once).
        config: scoring and output settings (default :class:`~.corpus.CorpusConfig`).
        rerank: candidates and selection (default :class:`RerankConfig`).
        decoding: a :class:`~.generate.DecodingConfig` (its sampling fields are ``rerank``'s).
        head_dir: where the head came from, recorded in the run's settings.

    Returns:
        The count of candidate rows, their means, and the rows unless written to a file.
    """
    from .generate import DecodingConfig

    config, rerank, decoding = config or CorpusConfig(), rerank or RerankConfig(), decoding or DecodingConfig()
    check_select(rerank.select)
    explain, rauq = Explanations.load(model, "rerank", head_dir), config.rauq_config()
    with_tokens = config.keep_tokens() or explain.spans is not None
    per = rerank.per_source()

    def batch(part: list[dict]) -> list[dict]:
        records = [{k: v for k, v in r.items() if k != INDEX} for r in part]
        rows = rerank_records(model, records, rerank, decoding,
                              prompt_template=config.prompt_template, use_chat_template=config.chat,
                              batch_size=config.batch_size, with_tokens=with_tokens, rauq=rauq,
                              explain=explain)
        for k, row in enumerate(rows):
            row["source_index"] = part[k // per][INDEX]
        add_baselines(model, records, rows, config, decoding, per_input=per)
        return rows

    return _run(model, _Numbered(inputs), config, explain, batch, batch_size=config.batch_size,
                window=16 * config.batch_size, rows_per_input=per,
                settings=_settings(model, config, head_dir, decoding=asdict(decoding),
                                   rerank=asdict(rerank), batch=config.batch_size))
