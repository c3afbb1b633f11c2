"""Decode training sources with the frozen model and label its outputs good/bad.

:func:`group_references` gathers every reference of a source from pair records (a source
with two translations appears twice); :func:`decode_sources` has the frozen model write
its greedy output and seeded samples for each source (the candidates of
:func:`sigmoid_head.scoring.rerank.candidates`, so the seeds are rerank's); and
:func:`label_outputs` tags every output word OK/BAD against the references
(:mod:`sigmoid_head.data.self_labels`), as ``sigmoid-head train --self-generated`` reads
them. ``sigmoid-head self-label`` runs the three; :func:`load_self_examples` reads the
file back as training examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..data.batching import IGNORE_INDEX
from ..data.prompt_format import PromptFormat
from ..data.records import DataError, first_lines, read_jsonl_lines, record_where
from ..data.self_labels import BAD, IGNORE_LABEL, OK, token_labels, word_labels, words


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


def _check(rec: dict, where: str) -> None:
    if not isinstance(rec.get("target"), str):
        raise DataError(f"{where}: a self-labelled record needs a string 'target' (the output)")
    labels = rec.get("word_labels")
    if not isinstance(labels, list) or any(lab not in (OK, BAD) for lab in labels):
        raise DataError(f"{where}: 'word_labels' must be a list of \"OK\" / \"BAD\"")
    n = len(words(rec["target"]))
    if len(labels) != n:
        raise DataError(f"{where}: {len(labels)} word_labels for the {n} words of 'target'")
    if "messages" in rec:  # the one check of chat records (a list of role/content objects)
        from ..data.records import _check_record

        problem = _check_record({"messages": rec["messages"]})
        if problem:
            raise DataError(f"{where}: {problem}")


def example_labels(example: dict, target: str, word_tags: Sequence[str], tokenizer: Any) -> list[int]:
    """An example's per-position labels (1 / 0 / -1), one per trained position in the order
    the backbone gives them (the non-ignored labels; a causal example's first is never
    trained)."""
    from ..data.tokenize import special_ids
    from ..scoring.offsets import token_offsets

    labels = list(example["labels"])
    if not example["is_seq2seq"]:
        labels = labels[1:]
    trained = [t for t in labels if t != IGNORE_INDEX]
    specials = special_ids(tokenizer)
    try:
        spans = token_offsets(tokenizer, target, trained, specials)
    except (StopIteration, ValueError, IndexError):  # tokens that do not spell the target
        return [IGNORE_LABEL] * len(trained)
    out = token_labels(spans, target, word_tags)
    return [IGNORE_LABEL if t in specials else lab for t, lab in zip(trained, out, strict=True)]


def load_self_examples(path: str | Path, tokenizer: Any, prompt_format: PromptFormat
                       ) -> list[dict]:
    """A self-labelled file's examples: the paper's examples (``input_ids``, ``labels``,
    ``is_seq2seq``) of (prompt, output), rendered as ``prompt_format`` says, each with
    ``good``, its per-position labels.

    Examples with no labelled position left (after truncation) are dropped.

    Raises:
        DataError: a malformed line (named ``file:line``).
    """
    out, dropped = [], []
    for line, rec in read_jsonl_lines(path, objects=True):
        where = f"{path}:{line}"
        _check(rec, where)
        ex = labelled_example(rec, tokenizer, str(path), line, prompt_format)
        if ex is None:
            dropped.append(line)
        else:
            out.append(ex)
    if not out:
        raise DataError(f"{path}: no self-labelled example with a labelled token")
    warn_dropped(path, dropped, len(out) + len(dropped), prompt_format)
    return out


def warn_dropped(path: str | Path, lines: Sequence[int], total: int,
                 prompt_format: PromptFormat) -> None:
    """Warn once, in one line of the :data:`LABELLED_LOG` logger, when labelled items were
    dropped for having no labelled token left, mostly a prompt that fills ``max_length``:
    how many of ``total``, and the first of their ``lines``. (A logger, not
    ``warnings.warn`` as well: the command line printed the same line twice.)"""
    if not lines:
        return
    import logging

    logging.getLogger(LABELLED_LOG).warning(
        f"{path}: {len(lines)} of {total} labelled items dropped with no labelled token "
        f"left within max_length={prompt_format.max_length} (lines {first_lines(lines)}); a longer "
        "--max-length keeps them")


LABELLED_LOG = "sigmoid_head.labelled_data"
"""The logger of what reading a labelled-data file (human tags, self-labelled outputs) says."""


def labelled_example(rec: dict, tokenizer: Any, file: str, line: int,
                     prompt_format: PromptFormat) -> dict | None:
    """One checked labelled record (``source`` or ``messages``, ``target``, ``word_labels``)
    as a training example with ``good``, its per-position labels; None when truncation or
    tokenization leaves no labelled position (shared by self-labelled outputs and human
    labels, :mod:`.labelled`)."""
    from ..data.tokenize import tokenize_records

    where = f"{file}:{line}"
    record = ({"messages": [*rec["messages"], {"role": "assistant", "content": rec["target"]}]}
              if "messages" in rec else {"source": rec.get("source"), "target": rec["target"]})
    if "messages" not in rec and not isinstance(record["source"], str):
        raise DataError(f"{where}: a labelled record needs 'source' or 'messages'")
    examples, _ = tokenize_records([record], tokenizer, prompt_format, source_name=file,
                                   line_numbers=[line])
    if not examples:
        return None
    ex = examples[0]
    ex["good"] = example_labels(ex, rec["target"], rec["word_labels"], tokenizer)
    return ex if any(g != IGNORE_LABEL for g in ex["good"]) else None
