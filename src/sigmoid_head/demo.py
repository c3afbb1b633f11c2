"""``sigmoid-head demo``: train a head on SmolLM2 and compare it with softmax and BoostedProb.

The task is rewriting King James verses into modern English (World English Bible), from
the public-domain sample bundled in ``data/bible_sample``. The head is trained on the
model's own task data with the hidden-state cache, then held-out verses from books never
seen in training are force-decoded with three candidates each: the WEB reference (good,
label 1), the next verse's WEB text (wrong content, 0), and the reference with its
longest word swapped for another verse's longest word (0). Every method's sequence
score is compared with those labels (ROC-AUC, BCE, Pearson, with bootstrap CIs).
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

PROMPT = "Rewrite this verse in modern English:\n{source}"
METHODS = ("softmax", "boostedprob", "sigmoid")


def sample_dir() -> Path:
    """The bundled Bible sample (a source checkout keeps it at the repository root)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "data" / "bible_sample"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("data/bible_sample not found: run the demo from a source checkout")


def short(records: list[dict], max_words: int) -> list[dict]:
    return [r for r in records if len(r["source"].split()) <= max_words
            and len(r["target"].split()) <= max_words]


def candidates(test: list[dict], seed: int) -> list[dict]:
    """Three candidates per held-out verse: the reference (1) and two hard negatives (0)."""
    rng = random.Random(seed)
    out = []
    for i, rec in enumerate(test):
        ref, other = rec["target"], test[(i + 1) % len(test)]["target"]
        out.append({"source": rec["source"], "candidate": ref, "label": 1, "kind": "reference"})
        out.append({"source": rec["source"], "candidate": other, "label": 0, "kind": "next verse"})
        words = ref.split()
        donor = max(test[rng.randrange(len(test))]["target"].split(), key=len)
        j = max(range(len(words)), key=lambda k: len(words[k]))
        if donor.strip(".,;:!?").lower() != words[j].strip(".,;:!?").lower():
            swapped = " ".join(words[:j] + [donor] + words[j + 1 :])
            out.append({"source": rec["source"], "candidate": swapped, "label": 0, "kind": "word swap"})
    return out


def unseen_swaps(model, cands: list[dict]) -> tuple[int, int]:
    """(word swaps whose new word has a token with zero training count, word swaps)."""
    refs = {c["source"]: c["candidate"] for c in cands if c["kind"] == "reference"}
    hits = total = 0
    for c in cands:
        if c["kind"] != "word swap":
            continue
        ref, new = refs[c["source"]].split(), c["candidate"].split()
        words = [w for i, w in enumerate(new) if i >= len(ref) or w != ref[i]]
        ids = model.tokenizer(" " + " ".join(words), add_special_tokens=False)["input_ids"]
        total += 1
        hits += any(float(model.token_counts[i]) == 0 for i in ids)
    return hits, total


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def run_demo(out_dir: str | Path, n_train: int = 600, n_test: int = 100, epochs: float = 12.0,
             lr: float = 1e-3, seed: int = 0, model: str | None = None,
             freq_smoothing: float = 0.0) -> list[dict]:
    """Train, score, compare; returns the metric rows and writes results under ``out_dir``.

    ``freq_smoothing`` is added to every token count of the token_freq sampler (0 = the
    paper), so tokens that are never a training target can be drawn as negatives.
    """
    import numpy as np

    from .data.records import read_jsonl
    from .evaluation.metrics import evaluate_methods
    from .evaluation.report import format_table, write_report
    from .scoring.force_decode import score_records
    from .training.config import TrainConfig
    from .training.loop import train

    out, data, t0 = Path(out_dir), sample_dir(), time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    train_recs = short(read_jsonl(data / "para_train.jsonl.gz"), 40)
    random.Random(seed).shuffle(train_recs)
    test = short(read_jsonl(data / "para_test.jsonl.gz"), 40)[:n_test]
    print(f"[1/3] training a Sigmoid Head on {min(n_train, len(train_recs))} verse pairs "
          f"(SmolLM2-135M-Instruct, token_freq negatives, dominant tokens avoided)", flush=True)
    config = TrainConfig(
        train_file=str(write_jsonl(out / "train.jsonl", train_recs[:n_train])),
        validation_file=str(write_jsonl(out / "dev.jsonl", short(read_jsonl(data / "para_dev.jsonl.gz"), 40)[:64])),
        output_dir=str(out / "head"), model=model, use_chat_template=True, prompt_template=PROMPT,
        max_length=192, batch_size=16, epochs=epochs, lr=lr, eval_every=50, patience=3,
        cache_hidden=True, seed=seed, freq_smoothing=freq_smoothing,
    )
    head_model = train(config)
    cands = candidates(test, seed)
    print(f"[2/3] scoring {len(cands)} candidates for {len(test)} held-out verses "
          f"(books never seen in training)", flush=True)
    scored = score_records(head_model, cands, batch_size=16)
    write_jsonl(out / "scores.jsonl", [{**c, **s} for c, s in zip(cands, scored, strict=True)])
    gold = np.array([c["label"] for c in cands], dtype=float)
    scores = {m: np.array([s[m] for s in scored], dtype=float) for m in METHODS}
    print("[3/3] comparing with the labels (95% bootstrap CIs)", flush=True)
    rows = evaluate_methods(scores, gold, metrics=["roc_auc", "bce", "pearson"], n_boot=1000, seed=seed)
    print(format_table(rows, ["roc_auc", "bce", "pearson"], fmt="terminal"))
    paths = write_report(rows, scores, gold, out, ["roc_auc", "bce", "pearson"])
    unseen = unseen_swaps(head_model, cands)
    print(f"{unseen[0]} of {unseen[1]} word swaps bring in a token never seen as a training target "
          + ("(token_freq never draws such rows as negatives; see --freq-smoothing)" if not freq_smoothing
             else f"(drawn as negatives thanks to --freq-smoothing {freq_smoothing:g})"))
    minutes = (time.perf_counter() - t0) / 60
    print(f"wrote {', '.join(str(p) for p in paths.values())}; took {minutes:.1f} min")
    return rows
