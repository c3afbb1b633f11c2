"""Decode training sources with the frozen model and label its outputs good/bad.

:func:`group_references` gathers every reference of a source from pair records (a source
with two translations appears twice); :func:`decode_sources` has the frozen model write
its greedy output and seeded samples for each source (the candidates of
:func:`sigmoid_head.scoring.rerank.candidates`, so the seeds are rerank's); and
:func:`label_outputs` tags every output word OK/BAD against the references
(:mod:`sigmoid_head.data.self_labels`), as ``sigmoid-head train --self-generated`` reads
them. ``sigmoid-head self-label`` runs the three.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..data.records import DataError, record_where
from ..data.self_labels import word_labels


def group_references(records: Iterable[dict]) -> list[dict]:
    """One ``{source, references}`` per distinct source, in order of first appearance, its
    references the targets of every record with that source (duplicates dropped)."""
    grouped: dict[str, list[str]] = {}
    for k, rec in enumerate(records):
        if not isinstance(rec.get("source"), str) or not isinstance(rec.get("target"), str):
            raise DataError(f"{record_where(rec, k)}: self-labelling needs pairs {{source, target}}")
        refs = grouped.setdefault(rec["source"], [])
        if rec["target"] not in refs:
            refs.append(rec["target"])
    return [{"source": s, "references": refs} for s, refs in grouped.items()]


def decode_sources(model: Any, sources: Sequence[dict], *, samples: int = 2,
                   temperature: float = 0.8, max_new_tokens: int = 96, seed: int = 0,
                   batch_size: int = 16, prompt_template: str | None = None,
                   use_chat_template: bool | None = None, progress: bool = True) -> list[dict]:
    """The frozen model's greedy output and ``samples`` sampled outputs for every source.

    Returns:
        Per output ``{source, references, target, origin}`` (``origin`` greedy or
        sample), the greedy output of a source first.
    """
    from tqdm.auto import tqdm

    from ..scoring.rerank import RerankConfig, candidates

    config = RerankConfig(samples=samples, temperature=temperature, max_new_tokens=max_new_tokens,
                          seed=seed, select="softmax@mean")
    out = []
    for start in tqdm(range(0, len(sources), batch_size), desc="decode", disable=not progress,
                      dynamic_ncols=True):
        part = list(sources[start:start + batch_size])
        groups, _ = candidates(model, [{"source": s["source"]} for s in part], config,
                               prompt_template=prompt_template, use_chat_template=use_chat_template,
                               batch_size=batch_size)
        for src, group in zip(part, groups, strict=True):
            out += [{"source": src["source"], "references": src["references"],
                     "target": c["candidate"], "origin": c["origin"]} for c in group]
    return out


def label_outputs(outputs: Iterable[dict], *, max_refs: int | None = None, rule: str = "union",
                  case_sensitive: bool = False) -> list[dict]:
    """``outputs`` with ``word_labels`` (and the references used) for each, tagged against
    the first ``max_refs`` references of its source (all with None)."""
    rows = []
    for rec in outputs:
        refs = list(rec["references"][:max_refs] if max_refs else rec["references"])
        rows.append({**rec, "references": refs,
                     "word_labels": word_labels(rec["target"], refs, rule, case_sensitive)})
    return rows


def bad_share(rows: Iterable[dict]) -> float:
    """Share of BAD words over all outputs' words."""
    tags = [t for r in rows for t in r["word_labels"]]
    return sum(t == "BAD" for t in tags) / max(len(tags), 1)
