"""Translate the Bible MT test (and dev) books and score them against both references.

Used by ``train_mt.py`` at the end of training, and usable on its own for any saved
seq2seq model, e.g. to add beam search later::

    python -m recipes.bible.mt_eval --model runs/mt_bible/model --data data/bible \
        --out runs/mt_bible/eval_beam4 --beams 4 --splits test

Each unique Spanish source is translated once and scored with sacrebleu corpus BLEU and
chrF against all of its English references (KJV and WEB: ``nrefs:2``). Writes
``{split}_hyps.jsonl`` (``{"source", "target", "hypothesis", "references", "chrf"}``,
where ``target`` repeats the hypothesis so the file reads as pairs data for Eval Self)
and, from the command line, ``eval.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

# Idle OpenMP threads sleep instead of spinning (much faster on a busy CPU; see
# README_MT.md). Read when torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from sigmoid_head.data.records import read_records

# ----------------------------------------------------------------------------- data


def find_split(data_dir: str | Path, split: str) -> Path:
    """Path of ``mt_{split}.jsonl`` or ``mt_{split}.jsonl.gz`` in ``data_dir``."""
    for name in (f"mt_{split}.jsonl", f"mt_{split}.jsonl.gz"):
        if (path := Path(data_dir) / name).is_file():
            return path
    raise FileNotFoundError(f"no mt_{split}.jsonl(.gz) in {data_dir}")


def read_pairs(data_dir: str | Path, split: str) -> list[dict]:
    """The ``{"source", "target"}`` records of one split."""
    return read_records(find_split(data_dir, split))


def group_references(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Unique sources in order of first appearance, each with all of its targets."""
    refs: dict[str, list[str]] = {}
    for rec in records:
        refs.setdefault(rec["source"], []).append(rec["target"])
    return list(refs), list(refs.values())


# --------------------------------------------------------------------- translation


@torch.no_grad()
def translate(
    model: Any, tokenizer: Any, sources: list[str], num_beams: int, batch_size: int
) -> list[str]:
    """Translate ``sources`` in length-sorted batches, at most 1.5 x source tokens + 10."""
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    hyps = [""] * len(sources)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer(
            [sources[i] for i in idx], return_tensors="pt", padding=True, truncation=True
        ).to(device)  # input_ids (B, S)
        out = model.generate(
            **enc,
            num_beams=num_beams,
            do_sample=False,
            max_new_tokens=int(1.5 * enc["input_ids"].shape[1]) + 10,
        )  # (B, T)
        texts = tokenizer.batch_decode(out, skip_special_tokens=True)
        for i, text in zip(idx, texts, strict=True):
            hyps[i] = text.strip()
    return hyps


# ------------------------------------------------------------------------- scoring


def corpus_scores(hyps: list[str], refs: list[list[str]]) -> dict[str, Any]:
    """Corpus BLEU and chrF of ``hyps`` against all references of each source."""
    from sacrebleu.metrics import BLEU, CHRF

    width = max(len(r) for r in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
    bleu, chrf = BLEU(), CHRF()
    return {
        "bleu": round(bleu.corpus_score(hyps, streams).score, 2),
        "chrf": round(chrf.corpus_score(hyps, streams).score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def write_hyps(path: Path, sources: list[str], hyps: list[str], refs: list[list[str]]) -> None:
    """JSONL: source, target (= the hypothesis), hypothesis, references, sentence chrF."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    with path.open("w", encoding="utf-8") as f:
        for src, hyp, ref in zip(sources, hyps, refs, strict=True):
            rec = {"source": src, "target": hyp, "hypothesis": hyp, "references": ref}
            rec["chrf"] = round(chrf.sentence_score(hyp, ref).score, 2)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def evaluate_split(
    model: Any,
    tokenizer: Any,
    records: list[dict],
    split: str,
    *,
    out: str | Path,
    beams: int = 1,
    limit: int | None = None,
    batch_size: int = 32,
) -> dict[str, Any]:
    """Greedy (and, if ``beams`` > 1, beam) translations of one split, scored and saved.

    Returns ``{"sources", "references", "seconds", "greedy": {...}, "beam4": {...}}``
    and writes ``out/{split}_hyps.jsonl`` (``..._hyps_beam4.jsonl`` for beam search).
    """
    sources, refs = group_references(records)
    sources, refs = sources[:limit], refs[:limit]
    result: dict[str, Any] = {"sources": len(sources), "references": sum(map(len, refs))}
    result["seconds"] = 0.0
    for width in [1] + ([beams] if beams > 1 else []):
        name = "greedy" if width == 1 else f"beam{width}"
        started = time.monotonic()
        hyps = translate(model, tokenizer, sources, width, batch_size)
        seconds = time.monotonic() - started
        result["seconds"] = round(result["seconds"] + seconds, 1)
        suffix = "" if width == 1 else f"_{name}"
        write_hyps(Path(out) / f"{split}_hyps{suffix}.jsonl", sources, hyps, refs)
        result[name] = corpus_scores(hyps, refs) | {
            "num_beams": width,
            "max_new_tokens": "1.5 * longest source in batch + 10",
            "seconds": round(seconds, 1),
        }
        scores = f"BLEU {result[name]['bleu']} chrF {result[name]['chrf']}"
        print(f"{split} {name}: {scores} ({seconds:.0f} s)")
    return result


# ---------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Evaluate a saved model on the chosen splits; writes ``--out/eval.json``."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="folder saved by train_mt.py (OUT/model)")
    parser.add_argument("--data", default="data/bible", help="folder with mt_{split}.jsonl(.gz)")
    parser.add_argument("--out", required=True, help="folder for eval.json and *_hyps.jsonl")
    parser.add_argument("--splits", nargs="+", default=["test"], help="e.g. test dev")
    parser.add_argument("--beams", type=int, default=1, help="also beam search if > 1")
    parser.add_argument("--limit", type=int, default=None, help="first N unique sources only")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per generate()")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model).to(args.device)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    opts = {"out": args.out, "beams": args.beams, "limit": args.limit}
    report = {"model": str(args.model), "device": args.device}
    for split in args.splits:
        records = read_pairs(args.data, split)
        report[split] = evaluate_split(
            model, tokenizer, records, split, batch_size=args.batch_size, **opts
        )
    (Path(args.out) / "eval.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
