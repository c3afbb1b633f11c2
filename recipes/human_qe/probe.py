"""A linear probe on the frozen model's final hidden state, fitted on human word tags and
saved as a head whose rows are all one vector (issue 58, item 2).

The labelled head scores a token ``y`` from the hidden state ``h`` that predicts it as
``sigmoid(W[y] . h + b[y])``: one row of ``d`` weights per vocabulary entry (``V x d``
parameters). The probe is the same score with every row tied, ``sigmoid(w . h + c)``: ``d + 1``
parameters, fitted by logistic regression on the same training tags (a token of a BAD
word is BAD, tokens of no word are skipped: the head's own labels, :mod:`sigmoid_head.
training.labelled`), from the same positions of the same frozen pass. Saved as a head folder
(``w`` copied into every row, ``c`` into every bias), it is scored, thresholded on dev and
tested exactly as the heads are (``run.py --head``, ``tables --pack``): the question "is the
head worth its ``V x d`` parameters?" is then one paired test.

Features are standardised on the training positions (the scaling is folded back into ``w``
and ``c``). The L2 strength ``C`` is chosen on the held-out validation tags (the file the head
stops early on, never the WMT dev or test: its first ``max_validation_examples``, as the
trainer reads it), by the average precision of BAD; the choice and
every candidate's figure go to ``--report``.

Usage::

    python -m recipes.human_qe.probe --labelled-file L/mlqe-roen-train/train.jsonl.gz \\
        --labelled-validation-file L/mlqe-roen-train/dev.jsonl.gz --like heads/roen-lab \\
        --out heads/roen-probe --report roen-probe.json

``--like``: a head trained on the same model and data whose config (base model, prompt,
``--max-length``) the probe copies; the frozen model is that head's base.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

C_GRID = (0.001, 0.01, 0.1, 1.0)
BATCH = 16


def hidden_and_good(backbone: Any, examples: list[dict], progress: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(N, d) final hidden states of every trained position whose token has a label, and
    (N,) 1 (OK) / 0 (BAD), in the order the head's training reads them."""
    import torch

    from sigmoid_head.data.batching import Collator
    from sigmoid_head.data.self_labels import IGNORE_LABEL
    from sigmoid_head.training.cache import backbone_positions

    collate = Collator(backbone.tokenizer.pad_token_id, backbone.is_encoder_decoder)
    xs, ys = [], []
    t0 = time.time()
    for k in range(0, len(examples), BATCH):
        part = examples[k:k + BATCH]
        pos, _ = backbone_positions(backbone, collate, None, part, contextlib.nullcontext())
        good = torch.tensor([g for e in part for g in e["good"]])
        if good.numel() != pos.targets.numel():
            raise RuntimeError(f"{good.numel()} labels for {pos.targets.numel()} positions")
        keep = good != IGNORE_LABEL
        xs.append(pos.hidden[keep].float().numpy())
        ys.append(good[keep].numpy())
        if progress and (k // BATCH) % 50 == 0:
            print(f"{progress}: {k + len(part)}/{len(examples)} ({time.time() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    return np.concatenate(xs), np.concatenate(ys).astype(np.int64)


def cached_hidden(folder: Path, examples: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hidden_and_good` read from a training run's disk cache of these examples
    (``train --cache-dir``: ``train/`` or ``validation/``) instead of the frozen model, through
    the trainer's own read-only view (:func:`sigmoid_head.training.cache_donors.read_cache`:
    rows found by the example's token ids, checksum-checked). Every example must be there with
    as many rows as labels; anything else is an error naming the example."""
    from sigmoid_head.data.self_labels import IGNORE_LABEL
    from sigmoid_head.training.cache import example_key
    from sigmoid_head.training.cache_donors import read_cache

    view = read_cache(folder)
    xs, ys = [], []
    for i, e in enumerate(examples):
        good = np.asarray(e["good"])
        hidden = view.hidden(example_key(e))
        if hidden is None or hidden.shape[0] != good.size:
            raise ValueError(f"{folder}: example {i} is not in the cache (not filled, other token ids "
                             "or rows, or damaged rows)")
        keep = good != IGNORE_LABEL
        xs.append(hidden[keep])
        ys.append(good[keep])
    return np.concatenate(xs), np.concatenate(ys).astype(np.int64)


def fit_probe(x: np.ndarray, y: np.ndarray, xv: np.ndarray, yv: np.ndarray,
              grid: tuple[float, ...] = C_GRID) -> dict[str, Any]:
    """Logistic regression of OK on standardised ``x`` for each C of ``grid``; the one with
    the best validation AP of BAD wins. Returns ``w``, ``c`` (in the raw feature scale: the
    probability of OK is ``sigmoid(x . w + c)``) and the figures."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import average_precision_score

    mean, std = x.mean(0), x.std(0) + 1e-6
    z, zv = (x - mean) / std, (xv - mean) / std
    rows, best = [], None
    for c in grid:
        lr = LogisticRegression(C=c, max_iter=2000)
        lr.fit(z, y)
        ap = float(average_precision_score(1 - yv, lr.predict_proba(zv)[:, 0]))
        rows.append({"C": c, "validation_ap_bad": ap, "iterations": int(lr.n_iter_[0])})
        if best is None or ap > best[0]:
            best = (ap, c, lr)
    _, c, lr = best
    w = lr.coef_[0] / std
    return {"C": c, "w": w, "c": float(lr.intercept_[0] - (lr.coef_[0] * mean / std).sum()),
            "grid": rows}


def tied_head(config: Any, w: np.ndarray, c: float, training: dict) -> tuple[Any, Any]:
    """A head of ``config``'s shape whose every row is ``w`` and every bias ``c``."""
    import torch

    from sigmoid_head.head.layer import SigmoidHead

    head = SigmoidHead(config.vocab_size, config.hidden_size, bias=True)
    head.load_saved_state({
        "weight": torch.tensor(w, dtype=torch.float32).expand(config.vocab_size, -1).contiguous(),
        "bias": torch.full((config.vocab_size,), float(c)),
    })
    return replace(config, bias=True, training=training), head


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--labelled-file", required=True)
    ap.add_argument("--labelled-validation-file", required=True)
    ap.add_argument("--like", required=True, help="a head of the same model, prompt and data")
    ap.add_argument("--out", required=True, help="new head folder")
    ap.add_argument("--report", required=True, help="JSON of the fit")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache-dir", help="the hidden states of a float32 disk cache of a training "
                    "run on the same files (--like's own), instead of the frozen pass")
    ap.add_argument("--limit", type=int, default=None, help="the first N items of each file (a smoke test)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"--out {out} is not empty")

    import torch

    from sigmoid_head.head.folder import load_head_files, save_head_files
    from sigmoid_head.head.model import SigmoidHeadModel
    from sigmoid_head.scoring.token_scores import unpack_model
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.labelled import load_labelled_examples

    torch.set_num_threads(args.threads)
    config, _ = load_head_files(args.like)
    trained = TrainConfig.from_dict(config.training)
    backbone = unpack_model(SigmoidHeadModel.from_pretrained(args.like))[0]  # the head's base
    form = trained.prompt_format(backbone.is_encoder_decoder)
    data = {}
    for name, path in (("train", args.labelled_file), ("validation", args.labelled_validation_file)):
        ex = load_labelled_examples(path, backbone.tokenizer, form)[: args.limit]
        if name == "validation":  # the examples the head stops early on (the trainer's cap)
            ex = ex[: trained.max_validation_examples]
        if args.cache_dir:
            data[name] = cached_hidden(Path(args.cache_dir) / name, ex) + (len(ex),)
        else:
            data[name] = hidden_and_good(backbone, ex, progress=name) + (len(ex),)
    (x, y, n), (xv, yv, nv) = data["train"], data["validation"]
    t0 = time.time()
    fit = fit_probe(x, y, xv, yv)
    report = {
        "what": "linear probe on the final hidden state (issue 58): P(OK) = sigmoid(w . h + c)",
        "labelled_file": Path(args.labelled_file).name,
        "labelled_validation_file": Path(args.labelled_validation_file).name,
        "like": Path(args.like).name,
        "train_sentences": n, "train_tokens": int(y.size), "train_bad_share": float(1 - y.mean()),
        "validation_sentences": nv, "validation_tokens": int(yv.size),
        "chosen_C": fit["C"], "chosen_on": "validation AP of BAD (held-out training tags)",
        "grid": fit["grid"], "fit_s": round(time.time() - t0, 1),
    }
    training = {**config.training, "probe": {k: report[k] for k in ("chosen_C", "chosen_on", "grid")}}
    cfg, head = tied_head(config, fit["w"], fit["c"], training)
    save_head_files(out, cfg, head)
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
